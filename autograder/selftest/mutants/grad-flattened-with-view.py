"""Gradients are copied into the bucket through grad.view(-1): a transposed (non-contiguous) parameter's gradient cannot be viewed flat, so backward raises."""
from autograder.selftest.kinds import REDUCER

EDITS = {REDUCER: [("            slot.copy_(grad)  # raw: all_reduce_bucket scales the whole bucket at once\n",
                    "            slot.view(-1).copy_(grad.view(-1))\n")]}
VIOLATES = "C1"
CAUGHT_BY = {"3.3": "view"}
