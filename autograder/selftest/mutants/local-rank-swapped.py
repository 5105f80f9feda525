"""node_and_local_rank returns (local rank, node) instead of (node, local rank)."""
PROCESS_GROUP = "minddp/process_group.py"

EDITS = {PROCESS_GROUP: [("    return divmod(rank, local_world_size)\n",
                          "    return rank % local_world_size, rank // local_world_size\n")]}
VIOLATES = "node_and_local_rank"
CAUGHT_BY = {"1.3": "swapped"}
