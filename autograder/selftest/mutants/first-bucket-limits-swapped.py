"""first_bucket_effect's small first bucket is given as [cap, first]: the cap first, then the small limit."""
TIMELINE = "minddp/timeline.py"

EDITS = {TIMELINE: [('("small_first", [first_bucket_bytes, cap_bytes])', '("small_first", [cap_bytes, first_bucket_bytes])')]}
VIOLATES = "first_bucket_effect"
CAUGHT_BY = {"5.6": "['small_first']"}
