"""torchrun_env returns the numbers as ints (RANK: 3), not as the strings an environment holds ("3")."""
PROCESS_GROUP = "minddp/process_group.py"

EDITS = {PROCESS_GROUP: [
    ('        "RANK": str(rank),\n        "WORLD_SIZE": str(world_size),\n        "LOCAL_RANK": str(local_rank),\n'
     '        "LOCAL_WORLD_SIZE": str(local_world_size),\n',
     '        "RANK": rank,\n        "WORLD_SIZE": world_size,\n        "LOCAL_RANK": local_rank,\n'
     '        "LOCAL_WORLD_SIZE": local_world_size,\n'),
    ('        "MASTER_PORT": str(master_port),\n', '        "MASTER_PORT": master_port,\n')]}
VIOLATES = "torchrun_env"
CAUGHT_BY = {"1.3": "int, not str"}
