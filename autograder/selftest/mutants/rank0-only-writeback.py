"""Only rank 0 copies the averaged gradients back into .grad (the others keep their local gradients)."""
from selftest.cases import REDUCER

EDITS = {REDUCER: [("            torch._foreach_copy_(grads, averaged)",
                    "            if dist.get_rank(self.process_group) == 0:\n"
                    "                torch._foreach_copy_(grads, averaged)")]}
CAUGHT_BY = {"3.1": "rank 0's"}
