"""Gradients are summed across ranks but never divided by the world size."""
from selftest.cases import REDUCER

EDITS = {REDUCER: [("torch.mul(grad, 1.0 / self.world_size, out=slot)", "slot.copy_(grad)")]}
CAUGHT_BY = {"3.1": "not divided by the world size"}
