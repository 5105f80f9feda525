"""Unused parameters are counted ready in prepare_for_backward, at the end of the forward, where torch counts them at the backward's first hook: a bucket of unused parameters that is next in line is all-reduced during the forward."""
from autograder.selftest.kinds import REDUCER

EDITS = {REDUCER: [
    ("        self.unused = list(unused)  # they will get no gradient: ready at the backward's first hook, as in torch\n",
     "        self.unused = list(unused)\n"
     "        for index in self.unused:  # they will get no gradient: count them as ready now\n"
     "            self.mark_variable_ready(index)\n"),
    ("            for unused in self.unused:  # (Bonus A) ready now: in backward, never in the forward that found them\n"
     "                self.mark_variable_ready(unused)\n", ""),
]}
VIOLATES = "A1"
CAUGHT_BY = {"A.2": "Torch's forward launches no all-reduce"}
