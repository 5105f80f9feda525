"""The simulator ignores overlap=False: buckets start when ready even when communication may not overlap."""
TIMELINE = "minddp/timeline.py"

EDITS = {TIMELINE: [("        start = max(ready if overlap else backward_end, stream_free)",
                     "        start = max(ready, stream_free)")]}
VIOLATES = "simulate_step"
CAUGHT_BY = {"5.3": "overlap=False"}
