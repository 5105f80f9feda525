"""init_process_group ignores its backend argument: it always picks nccl or gloo itself."""
PROCESS_GROUP = "minddp/process_group.py"

EDITS = {PROCESS_GROUP: [
    ('    if backend is None:\n        backend = "nccl" if torch.cuda.is_available() else "gloo"\n',
     '    backend = "nccl" if torch.cuda.is_available() else "gloo"  # the right one for this machine\n')]}
VIOLATES = "init_process_group"
CAUGHT_BY = {"1.4": "passed on unchanged"}
