"""Bonus B: buckets are rebuilt only in a synchronised forward, after the buffers' broadcast (torch rebuilds in the
first forward with gradients enabled, under no_sync() too, before the buffers)."""
from autograder.selftest.kinds import DDP

EDITS = {DDP: [
    ("        if torch.is_grad_enabled() and self.rebuild_pending and self.ready_order:\n"
     "            self._rebuild_buckets()  # as torch: under no_sync() too, before the buffers' broadcast\n", ""),
    ("        sync = torch.is_grad_enabled() and self.require_backward_grad_sync\n",
     "        sync = torch.is_grad_enabled() and self.require_backward_grad_sync\n"
     "        if sync and self.rebuild_pending and self.ready_order:\n"
     "            self._rebuild_buckets()\n")]}
VIOLATES = "B1"
CAUGHT_BY = {"B.1": "torch rebuilds"}
