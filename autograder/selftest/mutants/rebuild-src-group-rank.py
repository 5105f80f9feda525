"""The rebuild broadcasts the ready order from src=0, the group's rank 0 not translated to a global rank: on a process group without global rank 0 the broadcast fails."""
from autograder.selftest.kinds import DDP

EDITS = {DDP: [("        src = dist.get_global_rank(self.process_group, 0) if self.process_group else 0  # the group's rank 0\n",
                "        src = 0  # rank 0\n")]}
VIOLATES = "B2"
CAUGHT_BY = {"B.1": "dist.get_global_rank(group, 0)"}
