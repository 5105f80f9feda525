"""broadcast_tensors rebinds each tensor's .data to its slice of the received flat tensor instead of copying into it: the values are rank 0's, but every parameter and buffer moves to new storage (a transposed one comes back contiguous), at construction and again at every forward's buffer broadcast."""
from autograder.selftest.kinds import DDP

EDITS = {DDP: [("            torch._foreach_copy_(group, _unflatten_dense_tensors(flat, group))  # one call, not one per tensor\n",
                "            for tensor, received in zip(group, _unflatten_dense_tensors(flat, group)):\n"
                "                tensor.data = received  # no copy\n")]}
VIOLATES = "W1"
CAUGHT_BY = {"4.1": "overwrites every parameter and buffer in place", "4.2": "in place"}
