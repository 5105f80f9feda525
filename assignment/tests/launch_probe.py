# GENERATED from solutions/tests/launch_probe.py by tools/assign.py (staff: edit that file, then `make assignment`).
# Public tests: do not edit them by hand; the grader runs its own copy (and more tests).
"""A training-script-shaped probe: joins the job from the torchrun environment, all-reduces, reports.

Run by tests under both ``python -m minddp.launch`` and the real ``torchrun``; writes one JSON file per rank.
"""

import json
import os
import sys

import torch
import torch.distributed as dist

from minddp.process_group import destroy_process_group, init_process_group

env = init_process_group(backend="gloo")
total = torch.tensor([float(env.rank + 1)])
dist.all_reduce(total)
with open(os.path.join(sys.argv[1], f"rank{env.rank}.json"), "w") as f:
    json.dump({"rank": env.rank, "world_size": env.world_size, "local_rank": env.local_rank,
               "node_rank": env.node_rank, "sum": total.item(), "dist_rank": dist.get_rank()}, f)
destroy_process_group()
os._exit(0)  # skip interpreter teardown, where gloo sometimes aborts after the work is done
