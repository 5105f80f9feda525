"""reverse_order returns the registration (forward) order range(num_params): parameters are bucketed in forward order instead of reverse."""
from autograder.selftest.kinds import BUCKETING

EDITS = {BUCKETING: [("return list(range(num_params - 1, -1, -1))", "return list(range(num_params))")]}
VIOLATES = "reverse_order"
CAUGHT_BY = {"2.1": "(forward) order instead of reverse"}
