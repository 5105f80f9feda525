"""The constructor broadcasts only the trainable parameters ("frozen ones are never synchronised"): a rank keeps its own frozen weights."""
from autograder.selftest.kinds import DDP

EDITS = {DDP: [("        broadcast_tensors(list(module.parameters()) + (self.module_buffers if broadcast_buffers else []),\n",
                "        broadcast_tensors([p for p in module.parameters() if p.requires_grad]\n"
                "                          + (self.module_buffers if broadcast_buffers else []),\n")]}
VIOLATES = "W1"
CAUGHT_BY = {"4.1": "start from different parameters"}
