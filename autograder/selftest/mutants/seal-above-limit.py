"""A bucket is sealed when its bytes exceed the limit (>) instead of reaching it (>=)."""
from autograder.selftest.kinds import BUCKETING

EDITS = {BUCKETING: [("if open_bytes[group] >= limit:", "if open_bytes[group] > limit:")]}
VIOLATES = "R3"
CAUGHT_BY = {"2.2": "lands exactly on its limit"}
