"""The constructor broadcasts each parameter and buffer on its own ("it runs once, so simplicity beats speed"): torch's DDP sends one broadcast per (dtype, device) group."""
from autograder.selftest.kinds import DDP

# Once a correct variant; the handout's W2 makes the construction's collectives part of the contract (torch's
# one broadcast per group is what makes wrapping a large model fast), and checks 4.1 and 4.2 compare them.
EDITS = {DDP: [(
    "        broadcast_tensors(list(module.parameters()) + (self.module_buffers if broadcast_buffers else []),\n"
    "                          process_group)\n",
    """        # Runs once, so simplicity beats speed: broadcast every tensor in place, no flattening.
        src = dist.get_global_rank(process_group, 0) if process_group is not None else 0
        with torch.no_grad():
            for tensor in list(module.parameters()) + (self.module_buffers if broadcast_buffers else []):
                dist.broadcast(tensor.data, src=src, group=process_group)
""")]}
VIOLATES = "W2"
CAUGHT_BY = {"4.1": "your constructor launched other collectives than torch DDP's"}
