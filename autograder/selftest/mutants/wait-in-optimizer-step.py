"""The averaged gradients are written back in optimizer.step() (a step pre-hook), not when backward returns."""
from autograder.selftest.kinds import REDUCER

EDITS = {REDUCER: [
    ("        global_used = self.all_reduce_usage()\n",
     "        self.require_finalize = False\n"
     "        if getattr(self, '_step_hook', None) is None:  # write back just before the optimizer needs them\n"
     "            from torch.optim.optimizer import register_optimizer_step_pre_hook\n"
     "            self._step_hook = register_optimizer_step_pre_hook(self._write_back)\n"
     "        self._fresh = True\n"
     "\n"
     "    def _write_back(self, optimizer, args, kwargs):\n"
     "        if not getattr(self, '_fresh', False):\n"
     "            return\n"
     "        self._fresh = False\n"
     "        global_used = self.all_reduce_usage()\n")]}
VIOLATES = "C3"
CAUGHT_BY = {"3.1": "too late"}
