"""Unused parameters are counted ready at the end of backward (in finalize_backward), where torch counts them at the
backward's first hook: values and launch order stay right, but a bucket they hold, and every bucket after it, waits
for the end of backward: no overlap (trial 6 found that no check saw this)."""
from autograder.selftest.kinds import REDUCER

EDITS = {REDUCER: [
    ("            for unused in self.unused:  # (Bonus A) ready now: in backward, never in the forward that found them\n"
     "                self.mark_variable_ready(unused)\n", ""),
    ("        self.expect_autograd_hooks = False\n        if self.next_bucket < len(self.buckets):\n",
     "        self.expect_autograd_hooks = False\n"
     "        for unused in self.unused:  # they got no gradient: count them ready now, at the end\n"
     "            self.mark_variable_ready(unused)\n"
     "        if self.next_bucket < len(self.buckets):\n"),
]}
VIOLATES = "A1"
CAUGHT_BY = {"A.2": "torch's buckets that hold them went in their turn during backward"}
