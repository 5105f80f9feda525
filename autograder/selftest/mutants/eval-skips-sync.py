"""A forward in eval mode (after ddp.eval()) is not synchronised ("no training in eval mode"): its backward only accumulates locally."""
from autograder.selftest.kinds import DDP

EDITS = {DDP: [("        sync = torch.is_grad_enabled() and self.require_backward_grad_sync\n",
                "        sync = torch.is_grad_enabled() and self.require_backward_grad_sync and self.training\n")]}
VIOLATES = "W5"
CAUGHT_BY = {"4.2": "a forward with gradients enabled is synchronised in either mode"}
