"""no_sync() does nothing: every backward inside it still all-reduces."""
from autograder.selftest.kinds import DDP

EDITS = {DDP: [("        previous = self.require_backward_grad_sync\n        self.require_backward_grad_sync = False\n",
                "        previous = self.require_backward_grad_sync\n")]}
VIOLATES = "W6"
CAUGHT_BY = {"4.3": "launched collectives"}
