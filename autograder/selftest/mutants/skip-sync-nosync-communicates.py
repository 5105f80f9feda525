"""skip_sync_speedup's iteration under no_sync() still pays the all-reduces (it is timed on world_size ranks)."""
TIMELINE = "minddp/timeline.py"

EDITS = {TIMELINE: [("    nosync = iteration_time(model, 1, alpha, beta, bucket_size_limits, forward_time)  # nothing to communicate",
                     "    nosync = iteration_time(model, world_size, alpha, beta, bucket_size_limits, forward_time)")]}
VIOLATES = "skip_sync_speedup"
CAUGHT_BY = {"5.9": "communicates nothing"}
