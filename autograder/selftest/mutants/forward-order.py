"""Parameters bucketed in forward (registration) order instead of reverse order."""
from selftest.cases import BUCKETING

EDITS = {BUCKETING: [("return list(range(num_params - 1, -1, -1))", "return list(range(num_params))")]}
VIOLATES = "R1"
CAUGHT_BY = {"2.1": "(forward) order instead of reverse"}
