"""overlap_bytes counts the gradients still to come instead of their bytes."""
from autograder.selftest.kinds import BUCKETING

EDITS = {BUCKETING: [("left_after[k + 1] + tensor.numel() * tensor.element_size()", "left_after[k + 1] + 1")]}
VIOLATES = "overlap_bytes"
CAUGHT_BY = {"2.6": "counted in gradients, not in bytes"}
