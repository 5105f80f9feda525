"""Buffers are broadcast only in training mode: after ddp.eval() each rank's forward uses its own BatchNorm statistics."""
from autograder.selftest.kinds import DDP

EDITS = {DDP: [("        if self.broadcast_buffers and self.sync_buffers_next_forward and self.module_buffers:\n",
                "        if self.broadcast_buffers and self.sync_buffers_next_forward and self.module_buffers and self.training:\n")]}
VIOLATES = "W4"
CAUGHT_BY = {"4.2": "ddp.eval()"}
