"""Keeps each parameter's start in its bucket's flat buffer and copies each gradient in through a view made there and then (buffer.as_strided with the parameter's size and strides), not through the views made at construction."""
from autograder.selftest.kinds import REDUCER

EDITS = {REDUCER: [
    ("            slot.copy_(grad)  # raw: all_reduce_bucket scales the whole bucket at once\n",
     "            start = sum(self.params[i].numel() for i in bucket.variable_indices[:position])\n"
     "            param = self.params[index]\n"
     "            bucket.buffer.as_strided(param.size(), param.stride(), start).copy_(grad)\n")]}
