"""A variable set but empty ("") passes as present: an empty MASTER_ADDR is accepted instead of raising."""
PROCESS_GROUP = "minddp/process_group.py"

EDITS = {PROCESS_GROUP: [
    ("    missing = [name for name in TORCHRUN_VARIABLES if not environ.get(name)]\n",
     "    missing = [name for name in TORCHRUN_VARIABLES if name not in environ]\n")]}
VIOLATES = "E1"
CAUGHT_BY = {"1.2": "must raise DistEnvError naming MASTER_ADDR"}
