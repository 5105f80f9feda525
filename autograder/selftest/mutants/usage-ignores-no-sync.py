"""Bonus A: record_usage counts only what this forward used, not the gradients the micro-batches under no_sync()
gave since the last synchronised backward (torch counts both)."""
from autograder.selftest.kinds import REDUCER

EDITS = {REDUCER: [
    ("        self.local_used[[i for i in unused if i not in since]] = 0\n",
     "        self.local_used[list(unused)] = 0\n")]}
VIOLATES = "A3"
CAUGHT_BY = {"A.2": "torch counts that as use in the iteration"}
