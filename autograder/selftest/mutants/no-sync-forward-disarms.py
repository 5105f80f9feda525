"""A forward under no_sync() tells the Reducer its backward must not reduce, undoing what a synchronised forward whose output got no backward prepared: torch's DDP reduces that next backward."""
from autograder.selftest.kinds import DDP

EDITS = {DDP: [("        if sync:\n            self.reducer.prepare_for_backward(self._unused_parameters(outputs))\n",
                "        if sync:\n            self.reducer.prepare_for_backward(self._unused_parameters(outputs))\n"
                "        else:\n            self.reducer.expect_autograd_hooks = False  # this forward's backward only accumulates\n")]}
VIOLATES = "C5"
CAUGHT_BY = {"4.3": "a forward inside no_sync() prepares nothing, and does not undo it"}
