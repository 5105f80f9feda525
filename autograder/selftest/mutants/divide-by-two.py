"""Gradients are divided by 2 (the world size the student tested with) instead of the world size."""
from autograder.selftest.kinds import REDUCER

EDITS = {REDUCER: [("bucket.buffer.mul_(1.0 / self.world_size)", "bucket.buffer.mul_(0.5)")]}
VIOLATES = "C3"
CAUGHT_BY = {"3.10": "divided by 2"}
