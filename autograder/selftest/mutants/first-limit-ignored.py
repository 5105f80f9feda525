"""Every bucket uses the last limit: the small first bucket (bucket_size_limits[0]) is ignored."""
from autograder.selftest.kinds import BUCKETING

EDITS = {BUCKETING: [("limit = bucket_size_limits[min(sealed_count[group], len(bucket_size_limits) - 1)]",
                      "limit = bucket_size_limits[-1]")]}
VIOLATES = "R4"
CAUGHT_BY = {"2.3": "every bucket gets the last limit"}
