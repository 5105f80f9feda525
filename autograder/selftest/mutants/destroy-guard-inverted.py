"""destroy_process_group's guard is inverted (if not dist.is_initialized()): it never leaves a job it is in."""
PROCESS_GROUP = "minddp/process_group.py"

EDITS = {PROCESS_GROUP: [("    if dist.is_initialized():\n        gc.collect()",
                          "    if not dist.is_initialized():\n        gc.collect()")]}
VIOLATES = "destroy_process_group"
CAUGHT_BY = {"1.4": "must leave the job"}
