"""Gradients are summed across ranks but never divided by the world size."""
from autograder.selftest.kinds import REDUCER, SCALE_BUCKET

EDITS = {REDUCER: [(SCALE_BUCKET, "")]}
VIOLATES = "C3"
CAUGHT_BY = {"3.1": "not divided by the world size"}
