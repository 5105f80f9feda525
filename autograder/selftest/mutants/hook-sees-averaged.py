"""With a comm hook the bucket is still filled with gradients scaled by 1/world_size (the hook averages again)."""
from selftest.cases import REDUCER

EDITS = {REDUCER: [("        else:\n            slot.copy_(grad)\n",
                    "        else:\n            torch.mul(grad, 1.0 / self.world_size, out=slot)\n")]}
CAUGHT_BY = {"3.11": "raw gradients"}
