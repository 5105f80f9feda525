"""No overlap: every bucket is all-reduced in finalize_backward, after backward has produced all gradients."""
from autograder.selftest.kinds import REDUCER

EDITS = {REDUCER: [
    ("        bucket.pending -= 1\n        if bucket.pending == 0:\n            self.mark_bucket_ready(bucket_index)\n",
     "        bucket.pending -= 1\n"),
    ("        global_used = self.all_reduce_usage()\n",
     "        if all(b.pending == 0 for b in self.buckets):\n"
     "            self.mark_bucket_ready(0)  # everything at once, now that backward is over\n"
     "        global_used = self.all_reduce_usage()\n"),
    ("        if self.next_bucket < len(self.buckets):\n            # Some bucket",
     "        if any(b.pending for b in self.buckets):\n            # Some bucket")]}
VIOLATES = "C2"
CAUGHT_BY = {"3.8": "before the last gradient"}
