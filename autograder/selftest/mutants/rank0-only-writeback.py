"""Only rank 0 copies the averaged gradients back into .grad (the others keep their local gradients)."""
from autograder.selftest.kinds import REDUCER

EDITS = {REDUCER: [("            if grads:  # (a bucket may hold only parameters unused on this rank)",
                    "            if grads and dist.get_rank(self.process_group) == 0:")]}
VIOLATES = "C3"
CAUGHT_BY = {"3.1": "rank 0's"}
