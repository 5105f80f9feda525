"""Bonus B: the rebuild is never marked done, so every forward with gradients broadcasts rank 0's order and rebuilds again (the same buckets)."""
from autograder.selftest.kinds import DDP

EDITS = {DDP: [("        self.rebuild_pending = False\n        # END SOLUTION", "        # END SOLUTION")]}
VIOLATES = "B1"
CAUGHT_BY = {"B.1": "more collectives than torch's"}
