"""The Reducer all-reduces its buckets over the world group, not over the process_group it was given."""
from autograder.selftest.kinds import REDUCER

EDITS = {REDUCER: [("bucket.work = dist.all_reduce(bucket.buffer, group=self.process_group, async_op=True)",
                    "bucket.work = dist.all_reduce(bucket.buffer, async_op=True)")]}
VIOLATES = "C7"
CAUGHT_BY = {"3.10": "default (world) group"}
