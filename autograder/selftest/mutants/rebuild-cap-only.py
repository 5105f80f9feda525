"""Bonus B: the rebuilt buckets all use the later-bucket cap (the first bucket's limit "was only for the first iteration")."""
from autograder.selftest.kinds import DDP

EDITS = {DDP: [
    ("        self.reducer.build_buckets(compute_bucket_assignment(self.params, self.bucket_size_limits,\n",
     "        self.reducer.build_buckets(compute_bucket_assignment(self.params, self.bucket_size_limits[-1:],\n")]}
VIOLATES = "B3"
CAUGHT_BY = {"B.1": "differ"}
