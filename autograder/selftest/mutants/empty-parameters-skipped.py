"""The wrapper leaves parameters with no elements out of the buckets ("nothing to reduce"): torch buckets them like any other, so its buckets and all-reduces differ."""
from autograder.selftest.kinds import DDP

EDITS = {DDP: [("        self.params = [p for p in module.parameters() if p.requires_grad]",
                "        self.params = [p for p in module.parameters() if p.requires_grad and p.numel() > 0]")]}
VIOLATES = "W3"
CAUGHT_BY = {"4.1": "empty ones included"}
