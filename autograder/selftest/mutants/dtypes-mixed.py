"""Tensors of different dtypes share a bucket (grouped by device only)."""
from autograder.selftest.kinds import BUCKETING

EDITS = {BUCKETING: [("group = (tensor.dtype, tensor.device)", "group = tensor.device")]}
VIOLATES = "R2"
CAUGHT_BY = {"2.4": "dtypes are mixed in one bucket"}
