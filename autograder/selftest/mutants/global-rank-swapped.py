"""global_rank multiplies the local rank by the processes per node and adds the node: local_rank * L + node_rank."""
PROCESS_GROUP = "minddp/process_group.py"

EDITS = {PROCESS_GROUP: [("    return node_rank * local_world_size + local_rank\n",
                          "    return local_rank * local_world_size + node_rank\n")]}
VIOLATES = "global_rank"
CAUGHT_BY = {"1.3": "global_rank must invert node_and_local_rank"}
