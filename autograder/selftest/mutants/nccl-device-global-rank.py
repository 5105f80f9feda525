"""With nccl, the GPU made current is the one of the global rank, not the local rank: rank 5 of 4 per node picks device 5."""
from autograder.selftest.kinds import PROCESS_GROUP

EDITS = {PROCESS_GROUP: [("torch.cuda.set_device(env.local_rank)", "torch.cuda.set_device(env.rank)")]}
VIOLATES = "init_process_group"
CAUGHT_BY = {"1.4": "of its LOCAL rank"}
