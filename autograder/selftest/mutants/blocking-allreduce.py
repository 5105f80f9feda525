"""The all-reduce is issued synchronously (async_op=False) from the hook: backward waits for communication."""
from autograder.selftest.kinds import BLOCKING_ALLREDUCE, REDUCER

EDITS = {REDUCER: BLOCKING_ALLREDUCE}
VIOLATES = "C2"
CAUGHT_BY = {"3.8": "async_op=True"}
