"""The Reducer averages by the world's size (dist.get_world_size()) instead of its process group's: on a group of 2 in a world of 3 the gradients are 2/3 of the average."""
from autograder.selftest.kinds import REDUCER, SCALE_BUCKET

EDITS = {REDUCER: [(SCALE_BUCKET, "            bucket.buffer.mul_(1.0 / dist.get_world_size())\n")]}
VIOLATES = "C7"
CAUGHT_BY = {"3.10": "instead of the process group's size"}
