"""The GradBucket handed to a comm hook never says is_last() (it compares the index with the wrong end)."""
from autograder.selftest.kinds import REDUCER

EDITS = {REDUCER: [("is_last=bucket.index == len(self.buckets) - 1)", "is_last=bucket.index == 0)")]}
VIOLATES = "C4"
CAUGHT_BY = {"3.11": "is_last"}
