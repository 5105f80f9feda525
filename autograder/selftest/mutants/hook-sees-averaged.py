"""With a comm hook the bucket is still scaled by 1/world_size before the hook (the hook averages again)."""
from autograder.selftest.kinds import REDUCER

EDITS = {REDUCER: [("        else:\n            grad_bucket = GradBucket(",
                    "        else:\n            bucket.buffer.mul_(1.0 / self.world_size)\n            grad_bucket = GradBucket(")]}
VIOLATES = "C4"
CAUGHT_BY = {"3.11": "raw gradients"}
