"""The usage bitmap is all-reduced on the default (world) group, not on the DDP's process group."""
from autograder.selftest.kinds import REDUCER

EDITS = {REDUCER: [("        dist.all_reduce(global_used, group=self.process_group)\n", "        dist.all_reduce(global_used)\n")]}
VIOLATES = "A4"
CAUGHT_BY = {"A.3": "process group"}
