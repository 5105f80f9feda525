"""simulate_step takes backward's end as max(ready_times) with no default: with no tensors at all it raises instead of returning an empty timeline ending at 0."""
TIMELINE = "minddp/timeline.py"

EDITS = {TIMELINE: [("    backward_end = max(ready_times, default=0.0)\n", "    backward_end = max(ready_times)\n")]}
VIOLATES = "simulate_step"
CAUGHT_BY = {"5.3": "ValueError"}
