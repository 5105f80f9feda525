"""Each (dtype, device) group keeps its own list of sealed buckets; the result lists them group by group, not in sealing order."""
from autograder.selftest.kinds import BUCKETING

EDITS = {BUCKETING: [
    ("    buckets: list[list[int]] = []\n",
     "    sealed: dict[tuple, list[list[int]]] = {}  # each group's sealed buckets\n"),
    ("            buckets.append(open_buckets[group])\n            open_buckets[group], open_bytes[group] = [], 0\n",
     "            sealed.setdefault(group, []).append(open_buckets[group])\n"
     "            open_buckets[group], open_bytes[group] = [], 0\n"),
    ("    for group in reversed(list(open_buckets)):",
     "    buckets = [bucket for group in open_buckets for bucket in sealed.get(group, [])]\n"
     "    for group in reversed(list(open_buckets)):")]}
VIOLATES = "R5"
CAUGHT_BY = {"2.4": "numbered group by group"}
