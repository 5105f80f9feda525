"""ddp_step ignores its dtype: the gradients are taken as float32 (4 bytes per element) whatever dtype says."""
TIMELINE = "minddp/timeline.py"

EDITS = {TIMELINE: [
    ("    buckets = compute_bucket_assignment(tensors, bucket_size_limits)\n",
     "    tensors = meta_tensors(shapes)  # gradients are float32\n"
     "    buckets = compute_bucket_assignment(tensors, bucket_size_limits)\n")]}
VIOLATES = "ddp_step"
CAUGHT_BY = {"5.4": "`dtype` is ignored"}
