"""find_used_parameters walks back from the outputs' grad_fn only: an output that is itself a parameter (a leaf, no grad_fn) does not count as used."""
from autograder.selftest.kinds import DDP

EDITS = {DDP: [("    used = {id(t) for t in _tensors_in(outputs) if t.grad_fn is None and t.requires_grad}\n",
                "    used: set[int] = set()\n")]}
VIOLATES = "A1"
CAUGHT_BY = {"A.2": "an output that is itself a parameter counts as used"}
