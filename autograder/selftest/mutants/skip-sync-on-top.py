"""skip_sync_step_time adds the sync iteration on top of n no-sync ones: (n * nosync + sync) / n."""
TIMELINE = "minddp/timeline.py"

EDITS = {TIMELINE: [("    return ((n - 1) * nosync_step + sync_step) / n\n", "    return (n * nosync_step + sync_step) / n\n")]}
VIOLATES = "skip_sync_step_time"
CAUGHT_BY = {"5.9": "added on top of n no-sync ones"}
