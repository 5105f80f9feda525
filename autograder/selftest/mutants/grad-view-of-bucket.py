"""After the all-reduce, each .grad becomes its slot of the bucket (param.grad = view) instead of receiving the average in the tensor autograd left there: values right, but .grad is the bucket's storage, reused every step."""
from autograder.selftest.kinds import REDUCER

EDITS = {REDUCER: [("                    grads.append(param.grad)\n                    averaged.append(view)\n",
                    "                    param.grad = view  # no copy: .grad is the bucket's slot\n")]}
VIOLATES = "C3"
CAUGHT_BY = {"3.1": "is not the tensor autograd left in .grad"}
