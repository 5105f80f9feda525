"""Buffers are broadcast at the start of every forward, even the one right after a no_sync() forward (torch skips it)."""
from autograder.selftest.kinds import DDP

EDITS = {DDP: [("        if self.broadcast_buffers and self.sync_buffers_next_forward and self.module_buffers:",
                "        if self.broadcast_buffers and self.module_buffers:")]}
VIOLATES = "W4"
CAUGHT_BY = {"4.3": "torch skips the broadcast in some forwards"}
