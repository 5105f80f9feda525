"""The constructor broadcasts rank 0's parameters but not its buffers (forward's broadcast hides it, mostly)."""
from autograder.selftest.kinds import DDP

EDITS = {DDP: [("        broadcast_tensors(list(module.parameters()) + (self.module_buffers if broadcast_buffers else []),\n",
                "        broadcast_tensors(list(module.parameters()),\n")]}
VIOLATES = "W1"
CAUGHT_BY = {"4.1": "different buffers"}
