"""Leaving no_sync() switches syncing back on instead of restoring the previous state (nested no_sync breaks)."""
from autograder.selftest.kinds import DDP

EDITS = {DDP: [("            self.require_backward_grad_sync = previous\n",
                "            self.require_backward_grad_sync = True\n")]}
VIOLATES = "W6"
CAUGHT_BY = {"4.3": "inner no_sync() was entered and left"}
