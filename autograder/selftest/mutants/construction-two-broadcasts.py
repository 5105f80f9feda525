"""The constructor broadcasts the parameters and then the buffers, in two broadcast_tensors calls (two float32 broadcasts where torch's DDP sends one)."""
from autograder.selftest.kinds import DDP

EDITS = {DDP: [("        broadcast_tensors(list(module.parameters()) + (self.module_buffers if broadcast_buffers else []),\n"
                "                          process_group)\n",
                "        broadcast_tensors(list(module.parameters()), process_group)\n"
                "        if broadcast_buffers and self.module_buffers:\n"
                "            broadcast_tensors(self.module_buffers, process_group)\n")]}
VIOLATES = "W2"
CAUGHT_BY = {"4.1": "Float tensors in 2 broadcasts where torch's sends 1", "4.2": "your constructor launched other collectives"}
