"""A bucket that fills before its turn is launched only at the end of backward, though the bucket before it went earlier: the hook launches the bucket that just filled only if it is next, finalize the rest."""
from autograder.selftest.kinds import FINALIZE_BODY, REDUCER, Function

EDITS = {REDUCER: [
    Function("Reducer.mark_bucket_ready", '''
def mark_bucket_ready(self, bucket_index: int) -> None:
    """Launch the bucket that just filled, if it is the next one."""
    if bucket_index == self.next_bucket:
        self.all_reduce_bucket(self.buckets[bucket_index])
        self.next_bucket += 1
'''),
    (FINALIZE_BODY, "        self.expect_autograd_hooks = False\n"
                    "        while self.next_bucket < len(self.buckets) and self.buckets[self.next_bucket].pending == 0:\n"
                    "            self.all_reduce_bucket(self.buckets[self.next_bucket])  # the ones that filled early\n"
                    "            self.next_bucket += 1\n"
                    "        if self.next_bucket < len(self.buckets):"),
]}
VIOLATES = "C2"
CAUGHT_BY = {"3.9": "launched late, although it had filled before its turn"}
