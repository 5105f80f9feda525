"""torchrun_env sets LOCAL_RANK to the global rank (str(rank)), forgetting the node-by-node layout."""
PROCESS_GROUP = "minddp/process_group.py"

EDITS = {PROCESS_GROUP: [('        "LOCAL_RANK": str(local_rank),\n', '        "LOCAL_RANK": str(rank),\n')]}
VIOLATES = "torchrun_env"
CAUGHT_BY = {"1.3": "that is the global rank"}
