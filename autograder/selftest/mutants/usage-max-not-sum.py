"""Bonus A: the usage bitmaps are all-reduced with MAX (used anywhere: 1) instead of summed into counts."""
REDUCER = "minddp/reducer.py"

EDITS = {REDUCER: [
    ("        dist.all_reduce(global_used, group=self.process_group)\n",
     "        dist.all_reduce(global_used, op=dist.ReduceOp.MAX, group=self.process_group)\n")]}
VIOLATES = "A4"
CAUGHT_BY = {"A.3": "the SUM over ranks"}
