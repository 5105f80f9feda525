"""no_sync() restores the switch only when its block ends normally, not when an exception leaves it."""
from autograder.selftest.kinds import DDP

EDITS = {DDP: [("        try:\n            yield\n        finally:\n            self.require_backward_grad_sync = previous\n",
                "        yield\n        self.require_backward_grad_sync = previous\n")]}
VIOLATES = "W6"
CAUGHT_BY = {"4.3": "left by an exception"}
