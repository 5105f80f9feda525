"""compute_bucket_assignment skips tensors with no elements: they end in no bucket."""
from autograder.selftest.kinds import BUCKETING

EDITS = {BUCKETING: [("        tensor = tensors[index]\n",
                      "        tensor = tensors[index]\n        if tensor.numel() == 0:\n            continue\n")]}
VIOLATES = "R3"
CAUGHT_BY = {"2.4": "empty tensors"}
