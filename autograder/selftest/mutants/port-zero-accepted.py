"""MASTER_PORT=0 is accepted (the port's minimum taken as 0, "any port"), though TCP ports are 1..65535."""
PROCESS_GROUP = "minddp/process_group.py"

EDITS = {PROCESS_GROUP: [
    ('    master_port = _int_variable(environ, "MASTER_PORT", minimum=1)\n',
     '    master_port = _int_variable(environ, "MASTER_PORT", minimum=0)\n')]}
VIOLATES = "E2"
CAUGHT_BY = {"1.2": "must raise DistEnvError naming MASTER_PORT"}
