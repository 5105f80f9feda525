"""A forward under torch.no_grad() is treated as a synchronised one (it prepares the Reducer for a backward)."""
from autograder.selftest.kinds import DDP

EDITS = {DDP: [("        sync = torch.is_grad_enabled() and self.require_backward_grad_sync\n",
                "        sync = self.require_backward_grad_sync\n")]}
VIOLATES = "W5"
CAUGHT_BY = {"4.3": "torch.no_grad()"}
