"""A parameter this forward did not use gets zeros in its slot even when its .grad holds gradients (from a micro-batch under no_sync()), instead of its .grad as it stands."""
REDUCER = "minddp/reducer.py"

EDITS = {REDUCER: [
    ("        if grad is None:  # unused in this iteration: contributes zeros\n",
     "        if grad is None or index in self.unused:  # unused in this iteration: contributes zeros\n")]}
VIOLATES = "A1"
CAUGHT_BY = {"A.2": "b.weight"}
