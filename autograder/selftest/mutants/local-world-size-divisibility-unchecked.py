"""LOCAL_WORLD_SIZE is only checked against WORLD_SIZE's size, not for dividing it (3 per node in a world of 8 passes)."""
PROCESS_GROUP = "minddp/process_group.py"

EDITS = {PROCESS_GROUP: [("    if local_world_size > world_size or world_size % local_world_size:\n",
                          "    if local_world_size > world_size:\n")]}
VIOLATES = "E4"
CAUGHT_BY = {"1.2": "must raise DistEnvError naming LOCAL_WORLD_SIZE"}
