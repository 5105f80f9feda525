"""Buffers (BatchNorm running statistics) are broadcast at construction only, never in forward."""
from autograder.selftest.kinds import DDP

EDITS = {DDP: [("        if self.broadcast_buffers and self.sync_buffers_next_forward and self.module_buffers:\n"
                "            broadcast_tensors(self.module_buffers, self.process_group)\n", "")]}
VIOLATES = "W4"
CAUGHT_BY = {"4.2": "launched no broadcast"}
