"""init_process_group does not pass its timeout on: the group keeps torch's default (30 minutes), so a mismatched collective hangs instead of failing."""
PROCESS_GROUP = "minddp/process_group.py"

EDITS = {PROCESS_GROUP: [
    ('    dist.init_process_group(backend, init_method="env://", rank=env.rank, world_size=env.world_size,\n'
     '                            timeout=timeout)\n',
     '    dist.init_process_group(backend, init_method="env://", rank=env.rank, world_size=env.world_size)\n')]}
VIOLATES = "init_process_group"
CAUGHT_BY = {"1.4": "timeout"}
