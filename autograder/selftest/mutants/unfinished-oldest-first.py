"""Unfinished buckets are closed oldest group first (torch closes the most recently first-seen group first)."""
from autograder.selftest.kinds import BUCKETING

EDITS = {BUCKETING: [("for group in reversed(list(open_buckets)):", "for group in open_buckets:")]}
VIOLATES = "R6"
CAUGHT_BY = {"2.4": "oldest group first"}
