"""GradBucket.is_last() is true once every gradient of the backward has arrived, not for the highest index: the same while buckets fill in index order."""
from autograder.selftest.kinds import REDUCER

EDITS = {REDUCER: [("is_last=bucket.index == len(self.buckets) - 1)",
                    "is_last=all(b.pending == 0 for b in self.buckets))")]}
VIOLATES = "C4"
CAUGHT_BY = {"3.11": "is_last() is true for the bucket with the highest index"}
