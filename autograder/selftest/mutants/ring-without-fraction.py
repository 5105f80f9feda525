"""The ring all-reduce bandwidth term is 2n/β: the (K-1)/K factor is missing."""
TIMELINE = "minddp/timeline.py"

EDITS = {TIMELINE: [("    return rounds * alpha + rounds / world_size * nbytes / beta",
                     "    return rounds * alpha + 2 * nbytes / beta")]}
VIOLATES = "ring_allreduce_time"
CAUGHT_BY = {"5.1": "(K-1)/K"}
