"""The simulator takes a bucket as ready when its first gradient is (min), not its last (max)."""
TIMELINE = "minddp/timeline.py"

EDITS = {TIMELINE: [
    ("    bucket_ready = [max(ready_times[i] for i in bucket) for bucket in buckets]\n    starts: list",
     "    bucket_ready = [min(ready_times[i] for i in bucket) for bucket in buckets]\n    starts: list")]}
VIOLATES = "simulate_step"
CAUGHT_BY = {"5.3": "FIRST gradient"}
