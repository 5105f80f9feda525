"""Bonus A: a parameter this rank did not use but another did keeps .grad None here (only existing .grad tensors are written)."""
from autograder.selftest.kinds import REDUCER

EDITS = {REDUCER: [
    ("                if param.grad is None:  # unused here, used elsewhere\n"
     "                    param.grad = view.clone()\n"
     "                else:\n"
     "                    grads.append(param.grad)\n"
     "                    averaged.append(view)\n",
     "                if param.grad is not None:  # nothing to write into otherwise\n"
     "                    grads.append(param.grad)\n"
     "                    averaged.append(view)\n")]}
VIOLATES = "A3"
CAUGHT_BY = {"A.2": "torch leaves it a tensor"}
