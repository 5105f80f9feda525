"""forward broadcasts rank 0's buffers even when the wrapper was built with broadcast_buffers=False."""
from autograder.selftest.kinds import DDP

EDITS = {DDP: [("        if self.broadcast_buffers and self.sync_buffers_next_forward and self.module_buffers:",
                "        if self.sync_buffers_next_forward and self.module_buffers:")]}
VIOLATES = "W4"
CAUGHT_BY = {"4.2": "broadcast_buffers=False"}
