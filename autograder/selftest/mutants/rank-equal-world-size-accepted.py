"""RANK == WORLD_SIZE is accepted: the rank is checked with > instead of >= (the largest rank is WORLD_SIZE-1)."""
PROCESS_GROUP = "minddp/process_group.py"

EDITS = {PROCESS_GROUP: [("    if rank >= world_size:\n", "    if rank > world_size:\n")]}
VIOLATES = "E3"
CAUGHT_BY = {"1.2": "must raise DistEnvError naming RANK"}
