"""overlap_bytes launches each bucket as soon as it is complete, ignoring that buckets go in index order."""
from autograder.selftest.kinds import BUCKETING

EDITS = {BUCKETING: [("launched = max(launched, *(position[index] for index in bucket))",
                      "launched = max(position[index] for index in bucket)")]}
VIOLATES = "overlap_bytes"
CAUGHT_BY = {"2.6": "launched as soon as it is complete"}
