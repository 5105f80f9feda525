"""overlap_bytes takes a bucket as ready when its first gradient is produced, not its last."""
from autograder.selftest.kinds import BUCKETING

EDITS = {BUCKETING: [("launched = max(launched, *(position[index] for index in bucket))",
                      "launched = max(launched, min(position[index] for index in bucket))")]}
VIOLATES = "overlap_bytes"
CAUGHT_BY = {"2.6": "when its FIRST gradient is produced"}
