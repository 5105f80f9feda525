"""compute_bucket_assignment visits reversed(order) ("visit in reverse"), though order is already the visiting order."""
from autograder.selftest.kinds import BUCKETING

EDITS = {BUCKETING: [("    for index in order:\n        tensor = tensors[index]\n",
                      "    for index in reversed(order):  # backward runs in reverse\n        tensor = tensors[index]\n")]}
VIOLATES = "R1"
CAUGHT_BY = {"2.1": "(forward) order instead of reverse"}
