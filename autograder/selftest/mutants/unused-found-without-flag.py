"""The wrapper always hands the Reducer the parameters the outputs do not use ("to be safe"), also without find_unused_parameters: an unused branch trains on instead of raising."""
from autograder.selftest.kinds import DDP

EDITS = {DDP: [
    ("            self.reducer.prepare_for_backward(self._unused_parameters(outputs))\n",
     "            used = find_used_parameters(outputs)\n"
     "            self.reducer.prepare_for_backward([i for i, p in enumerate(self.params) if id(p) not in used])\n")]}
VIOLATES = "W7"
CAUGHT_BY = {"4.8": "training went on although a parameter got no gradient"}
