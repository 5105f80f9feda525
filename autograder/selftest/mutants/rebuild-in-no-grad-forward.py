"""The bucket rebuild runs in the first forward after the first synchronised backward even under torch.no_grad() (an evaluation), where torch waits for a forward with gradients enabled."""
from autograder.selftest.kinds import DDP

EDITS = {DDP: [("        if torch.is_grad_enabled() and self.rebuild_pending and self.ready_order:",
                "        if self.rebuild_pending and self.ready_order:")]}
VIOLATES = "B1"
CAUGHT_BY = {"B.1": "forward under torch.no_grad()"}
