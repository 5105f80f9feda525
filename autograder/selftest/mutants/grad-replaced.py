"""The averaged gradients are written to a new .grad tensor (param.grad = ...) instead of into the existing one."""
from autograder.selftest.kinds import REDUCER

EDITS = {REDUCER: [("                if param.grad is None:  # unused here, used elsewhere\n",
                    "                if True:  # a fresh tensor every time\n")]}
VIOLATES = "C3"
CAUGHT_BY = {"3.1": "in place"}
