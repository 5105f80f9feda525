"""all_reduce_usage all-reduces self.local_used in place and returns it: this rank's own bitmap is lost (the handout says it stays unchanged)."""
from autograder.selftest.kinds import REDUCER

EDITS = {REDUCER: [("        global_used = self.local_used.clone()\n", "        global_used = self.local_used\n")]}
VIOLATES = "A4"
CAUGHT_BY = {"A.3": "local_used"}
