"""Gradients are divided by 2 (the world size the student tested with) instead of the world size."""
from selftest.cases import REDUCER

EDITS = {REDUCER: [("torch.mul(grad, 1.0 / self.world_size, out=slot)", "torch.mul(grad, 0.5, out=slot)")]}
CAUGHT_BY = {"3.10": "divided by 2"}
