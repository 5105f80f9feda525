"""The wrapper lists parameters module by module, so a weight shared by two modules is bucketed twice."""
from autograder.selftest.kinds import DDP

EDITS = {DDP: [("self.params = [p for p in module.parameters() if p.requires_grad]",
                "self.params = [p for m in module.modules() for p in m.parameters(recurse=False) if p.requires_grad]")]}
VIOLATES = "W3"
CAUGHT_BY = {"4.7": "submodules lists it twice"}
