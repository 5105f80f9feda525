"""Each gradient is added into its bucket slot (slot.add_) instead of copied: the bucket, never cleared, carries every earlier step's average."""
from autograder.selftest.kinds import REDUCER

EDITS = {REDUCER: [("            slot.copy_(grad)  # raw: all_reduce_bucket scales the whole bucket at once\n",
                    "            slot.add_(grad)\n")]}
VIOLATES = "C3"
CAUGHT_BY = {"3.1": "the sum of torch's averaged gradients of steps 1 to 2"}
