"""Buffers are broadcast after the module's forward instead of before it."""
from autograder.selftest.kinds import DDP

EDITS = {DDP: [
    ("        if self.broadcast_buffers and self.sync_buffers_next_forward and self.module_buffers:\n"
     "            broadcast_tensors(self.module_buffers, self.process_group)\n", ""),
    ("        outputs = self.module(*inputs, **kwargs)\n",
     "        outputs = self.module(*inputs, **kwargs)\n"
     "        if self.broadcast_buffers and self.sync_buffers_next_forward and self.module_buffers:\n"
     "            broadcast_tensors(self.module_buffers, self.process_group)  # running stats just changed\n")]}
VIOLATES = "W4"
CAUGHT_BY = {"4.2": "before the module runs"}
