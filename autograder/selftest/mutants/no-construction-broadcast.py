"""The constructor does not broadcast rank 0's parameters and buffers: replicas start apart."""
from autograder.selftest.kinds import DDP

EDITS = {DDP: [("        broadcast_tensors(list(module.parameters()) + (self.module_buffers if broadcast_buffers else []),\n"
                "                          process_group)\n", "")]}
VIOLATES = "W1"
CAUGHT_BY = {"4.1": "broadcast rank 0's parameters"}
