"""Bucket pending counts are set once at construction and never reset for the next iteration."""
from autograder.selftest.kinds import REDUCER

EDITS = {REDUCER: [
    ("self.buckets.append(Bucket(bucket_index, list(indices), buffer, slots(buffer, params, offsets)))",
     "self.buckets.append(Bucket(bucket_index, list(indices), buffer, slots(buffer, params, offsets),\n"
     "                                       pending=len(indices)))"),
    ("            bucket.pending = len(bucket.variable_indices)\n", "")]}
VIOLATES = "C3"
CAUGHT_BY = {"3.1": "reset"}
