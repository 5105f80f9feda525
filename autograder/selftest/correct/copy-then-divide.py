"""Scales while copying, with an in-place division: slot.copy_(grad).div_(world_size), not the bucket's mul_(1/world_size)."""
from autograder.selftest.kinds import REDUCER, SCALE_BUCKET

EDITS = {REDUCER: [
    ("            slot.copy_(grad)  # raw: all_reduce_bucket scales the whole bucket at once\n",
     "            slot.copy_(grad)\n            if self.comm_hook is None:\n"
     "                slot.div_(self.world_size)  # x / 2 == x * 0.5 exactly; 3 ranks: within 1e-6\n"),
    (SCALE_BUCKET, "")]}
