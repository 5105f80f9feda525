"""LOCAL_RANK is only checked to be below LOCAL_WORLD_SIZE, never against RANK mod LOCAL_WORLD_SIZE (the layout)."""
PROCESS_GROUP = "minddp/process_group.py"

EDITS = {PROCESS_GROUP: [
    ("    if local_rank != node_and_local_rank(rank, local_world_size)[1]:\n"
     "        raise DistEnvError(f\"LOCAL_RANK={local_rank} contradicts RANK={rank} with LOCAL_WORLD_SIZE=\"\n"
     "                           f\"{local_world_size}: ranks are laid out node by node\")\n", "")]}
VIOLATES = "E5"
CAUGHT_BY = {"1.2": "must raise DistEnvError naming LOCAL_RANK"}
