"""The broadcasts pass the group's rank 0 as dist.broadcast's src, which is a global rank."""
from autograder.selftest.kinds import DDP

EDITS = {DDP: [("dist.broadcast(flat, src=dist.get_global_rank(process_group, src) if process_group else src,",
                "dist.broadcast(flat, src=src,")]}
VIOLATES = "W1"
CAUGHT_BY = {"4.1": "not part of group"}
