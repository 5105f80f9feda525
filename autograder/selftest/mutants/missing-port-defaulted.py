"""A missing MASTER_PORT silently defaults to 29500 instead of raising an error that names it."""
PROCESS_GROUP = "minddp/process_group.py"

EDITS = {PROCESS_GROUP: [
    ("    missing = [name for name in TORCHRUN_VARIABLES if not environ.get(name)]\n",
     "    environ = {\"MASTER_PORT\": \"29500\", **environ}  # the usual port\n"
     "    missing = [name for name in TORCHRUN_VARIABLES if not environ.get(name)]\n")]}
VIOLATES = "E1"
CAUGHT_BY = {"1.2": "must raise DistEnvError naming MASTER_PORT"}
