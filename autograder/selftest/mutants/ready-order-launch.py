"""Each bucket is launched as soon as it fills (ready order), not strictly in bucket index order."""
from autograder.selftest.kinds import REDUCER, Function

EDITS = {REDUCER: [Function("Reducer.mark_bucket_ready", '''
def mark_bucket_ready(self, bucket_index: int) -> None:
    """Launch the bucket that just filled."""
    self.all_reduce_bucket(self.buckets[bucket_index])
    self.next_bucket += 1
''')]}
VIOLATES = "C2"
CAUGHT_BY = {"3.9": "index order"}
