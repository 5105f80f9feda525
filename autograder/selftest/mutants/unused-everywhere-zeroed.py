"""Bonus A: a parameter that no rank used gets the bucket's zeros written back (a None .grad becomes a zero tensor)."""
from autograder.selftest.kinds import REDUCER

EDITS = {REDUCER: [
    ("                if global_used is not None and not global_used[index]:\n"
     "                    continue  # unused on every rank: keep .grad as it was (None stays None)\n", "")]}
VIOLATES = "A2"
CAUGHT_BY = {"A.1": "torch leaves it None"}
