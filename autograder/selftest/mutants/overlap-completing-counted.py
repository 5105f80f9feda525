"""overlap_bytes counts the gradient that completes a bucket among those still to come (an off-by-one)."""
from autograder.selftest.kinds import BUCKETING

EDITS = {BUCKETING: [("result.append(left_after[launched])",
                      "done = tensors[ready_order[launched]]\n"
                      "        result.append(left_after[launched] + done.numel() * done.element_size())")]}
VIOLATES = "overlap_bytes"
CAUGHT_BY = {"2.6": "completes a bucket is counted as still to be produced"}
