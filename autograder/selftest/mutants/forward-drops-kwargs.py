"""The wrapper's forward passes only the positional arguments on to the module: a keyword argument (use_b=False) is lost, so the module runs as if it were not given."""
from autograder.selftest.kinds import DDP

EDITS = {DDP: [("        outputs = self.module(*inputs, **kwargs)\n", "        outputs = self.module(*inputs)\n")]}
VIOLATES = "W5"
CAUGHT_BY = {"4.8": "keyword"}
