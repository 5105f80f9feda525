"""destroy_process_group always calls torch.distributed.destroy_process_group(): with no group initialised it raises."""
PROCESS_GROUP = "minddp/process_group.py"

EDITS = {PROCESS_GROUP: [
    ("    if dist.is_initialized():\n"
     "        gc.collect()  # free tensors and pending work first: gloo can abort at exit if they outlive the group\n"
     "        dist.destroy_process_group()\n",
     "    gc.collect()  # free tensors and pending work first: gloo can abort at exit if they outlive the group\n"
     "    dist.destroy_process_group()\n")]}
VIOLATES = "destroy_process_group"
CAUGHT_BY = {"1.4": "with no group it must do nothing"}
