"""Construction broadcast: one dist.broadcast per parameter and buffer (the per-forward buffer broadcast stays one per dtype)."""
from selftest.cases import DDP

# Only the constructor's broadcast is per tensor: the checks compare the collectives each FORWARD launches
# with torch's (handout §4: "one broadcast per (dtype, device) group", sizes compared), so a per-tensor
# buffer broadcast in forward is a spec violation, not a correct variant.
EDITS = {DDP: [(
    "        broadcast_tensors(list(module.parameters()) + (self.module_buffers if broadcast_buffers else []),\n"
    "                          process_group)\n",
    """        # Runs once, so simplicity beats speed: broadcast every tensor in place, no flattening.
        src = dist.get_global_rank(process_group, 0) if process_group is not None else 0
        with torch.no_grad():
            for tensor in list(module.parameters()) + (self.module_buffers if broadcast_buffers else []):
                dist.broadcast(tensor.data, src=src, group=process_group)
""")]}
