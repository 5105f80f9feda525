"""best_bucket_plan's recurrence forgets that a bucket waits for its last gradient: a prefix ends at the previous
bucket's end plus the all-reduce, as if every gradient were ready at once (the plan it picks is not the fastest)."""
TIMELINE = "minddp/timeline.py"

EDITS = {TIMELINE: [("            end = max(ready[sequence[j - 1]], finish[i]) + ring_allreduce_time(size, world_size, alpha, beta)",
                     "            end = finish[i] + ring_allreduce_time(size, world_size, alpha, beta)")]}
VIOLATES = "best_bucket_plan"
CAUGHT_BY = {"5.10": "the fastest plan's step is"}
