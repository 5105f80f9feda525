"""Under no_sync the wrapper zeroes the gradients before each forward, so micro-batches do not accumulate."""
from autograder.selftest.kinds import DDP

EDITS = {DDP: [("        outputs = self.module(*inputs, **kwargs)\n",
                "        if not self.require_backward_grad_sync:\n"
                "            self.module.zero_grad(set_to_none=False)  # a fresh local gradient per micro-batch\n"
                "        outputs = self.module(*inputs, **kwargs)\n")]}
VIOLATES = "C5"
CAUGHT_BY = {"4.3": "accumulate"}
