"""The search for used parameters looks at a tensor or a list/tuple of outputs only: a forward that returns a dict seems to use no parameter."""
from autograder.selftest.kinds import DDP

EDITS = {DDP: [("    stack = [t.grad_fn for t in _tensors_in(outputs) if t.grad_fn is not None]\n"
                "    used = {id(t) for t in _tensors_in(outputs) if t.grad_fn is None and t.requires_grad}\n",
                "    found = [outputs] if isinstance(outputs, torch.Tensor) else [o for o in outputs if isinstance(o, torch.Tensor)] if isinstance(outputs, (list, tuple)) else []\n"
                "    stack = [t.grad_fn for t in found if t.grad_fn is not None]\n"
                "    used = {id(t) for t in found if t.grad_fn is None and t.requires_grad}\n")]}
VIOLATES = "A1"
CAUGHT_BY = {"A.2": "whatever holds the outputs (lists, tuples, dicts"}
