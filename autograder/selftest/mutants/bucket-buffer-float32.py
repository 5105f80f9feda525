"""Every bucket's flat buffer is made with torch.zeros(n) (float32 by default), whatever its parameters' dtype."""
from autograder.selftest.kinds import REDUCER

EDITS = {REDUCER: [
    ("            buffer = torch.zeros(sum(p.numel() for p in params), dtype=params[0].dtype, device=params[0].device)\n",
     "            buffer = torch.zeros(sum(p.numel() for p in params), device=params[0].device)\n")]}
VIOLATES = "C1"
CAUGHT_BY = {"3.5": "in a bucket of its own dtype"}
