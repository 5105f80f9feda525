"""reverse_order stops at index 1: range(num_params - 1, 0, -1) leaves out parameter 0 (range's stop is exclusive)."""
from autograder.selftest.kinds import BUCKETING

EDITS = {BUCKETING: [("    return list(range(num_params - 1, -1, -1))\n", "    return list(range(num_params - 1, 0, -1))\n")]}
VIOLATES = "reverse_order"
CAUGHT_BY = {"2.1": "reverse_order(1)"}
