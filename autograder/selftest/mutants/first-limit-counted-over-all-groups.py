"""The k of limits[k] counts every bucket sealed so far, of any dtype, instead of the buckets of the tensor's own
(dtype, device) group: with two dtypes, only the first group's first bucket gets the small first limit."""
from autograder.selftest.kinds import BUCKETING

EDITS = {BUCKETING: [
    ("        limit = bucket_size_limits[min(sealed_count[group], len(bucket_size_limits) - 1)]",
     "        limit = bucket_size_limits[min(sum(sealed_count.values()), len(bucket_size_limits) - 1)]"),
]}
VIOLATES = "R4"
CAUGHT_BY = {"2.3": "which bucket gets which limit"}
