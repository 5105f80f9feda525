"""Gradients are divided by the world size twice (when copied in and again when copied back)."""
from autograder.selftest.kinds import REDUCER

EDITS = {REDUCER: [("torch._foreach_copy_(grads, averaged)",
                    "torch._foreach_copy_(grads, [v / self.world_size for v in averaged])")]}
VIOLATES = "C3"
CAUGHT_BY = {"3.1": "twice"}
