"""Frozen parameters (requires_grad=False) are bucketed and waited for like trainable ones."""
from autograder.selftest.kinds import DDP

EDITS = {DDP: [("self.params = [p for p in module.parameters() if p.requires_grad]",
                "self.params = list(module.parameters())")]}
VIOLATES = "W3"
CAUGHT_BY = {"4.5": "requires_grad=False"}
