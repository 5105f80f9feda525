"""Keeps each parameter's (start, length) in its bucket's flat buffer and copies gradients in flattened, with reshape(-1) (a copy where the gradient is not contiguous, as a transposed weight's is): no views made at construction."""
from autograder.selftest.kinds import REDUCER

EDITS = {REDUCER: [
    ("            slot.copy_(grad)  # raw: all_reduce_bucket scales the whole bucket at once\n",
     "            start = sum(self.params[i].numel() for i in bucket.variable_indices[:position])\n"
     "            bucket.buffer[start:start + grad.numel()].copy_(grad.reshape(-1))\n")]}
