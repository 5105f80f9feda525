"""finalize_backward calls torch._foreach_copy_ on a bucket with no gradient to write back (find_unused_parameters, one bucket per tensor)."""
REDUCER = "minddp/reducer.py"

EDITS = {REDUCER: [
    ("            if grads:  # (a bucket may hold only parameters unused on this rank)\n"
     "                torch._foreach_copy_(grads, averaged)",
     "            torch._foreach_copy_(grads, averaged)")]}
VIOLATES = "A1"
CAUGHT_BY = {"A.2": "at least one tensor"}
