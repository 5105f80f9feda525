"""The grader's wrapper of tests/launch_probe.py for check 1.4: under isolation, each rank torchrun starts
forbids itself new processes (seccomp) before it imports any student code, then runs the probe."""

import os
import runpy
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
if os.environ.get("MINDDP_JAILED"):
    sys.path.insert(0, HERE)
    import sandbox

    sandbox.install_seccomp()
runpy.run_path(os.path.join(HERE, "launch_probe.py"), run_name="__main__")
