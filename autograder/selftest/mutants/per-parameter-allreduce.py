"""No bucketing: every gradient is all-reduced on its own as soon as it is ready."""
from autograder.selftest.kinds import DDP

EDITS = {DDP: [("bucket_indices = compute_bucket_assignment(self.params, self.bucket_size_limits)",
                "bucket_indices = [[i] for i in reversed(range(len(self.params)))]  # one tensor per all-reduce")]}
VIOLATES = "W3"
CAUGHT_BY = {"4.6": "one all-reduce per bucket"}
