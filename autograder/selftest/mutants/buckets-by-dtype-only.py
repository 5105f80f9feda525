"""Buckets are grouped by dtype only: tensors of one dtype on two devices share a bucket."""
from autograder.selftest.kinds import BUCKETING

EDITS = {BUCKETING: [("group = (tensor.dtype, tensor.device)", "group = (tensor.dtype,)")]}
VIOLATES = "R2"
CAUGHT_BY = {"2.4": "what may share a bucket"}
