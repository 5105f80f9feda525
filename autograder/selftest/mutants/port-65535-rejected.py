"""The largest TCP port, 65535, is rejected (an off-by-one in the port's upper bound)."""
PROCESS_GROUP = "minddp/process_group.py"

EDITS = {PROCESS_GROUP: [
    ("    if master_port > 65535:\n", "    if master_port >= 65535:\n")]}
VIOLATES = "E6"
CAUGHT_BY = {"1.1": "MASTER_PORT=65535", "1.2": "a valid environment must not raise"}
