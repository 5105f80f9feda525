"""broadcast_tensors always sends from the group's rank 0, whatever src it is given (the DDP only ever passes 0, so it looks right)."""
from autograder.selftest.kinds import DDP

EDITS = {DDP: [("        dist.broadcast(flat, src=dist.get_global_rank(process_group, src) if process_group else src,\n",
                "        dist.broadcast(flat, src=dist.get_global_rank(process_group, 0) if process_group else 0,\n")]}
VIOLATES = "W1"
CAUGHT_BY = {"4.1": "src=1"}
