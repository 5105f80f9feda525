"""The Reducer keeps the .grad tensors it saw in the first backward and writes every later average into them: after zero_grad() (set_to_none, its default) autograd leaves a new .grad, which keeps the local gradient."""
from autograder.selftest.kinds import REDUCER

EDITS = {REDUCER: [("                    grads.append(param.grad)\n",
                    "                    grads.append(self.__dict__.setdefault('first_grads', {}).setdefault(index, param.grad))\n")]}
VIOLATES = "C3"
CAUGHT_BY = {"3.1": "set to None"}
