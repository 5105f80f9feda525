"""Bonus B: each rank rebuilds its buckets in the ready order it observed itself (rank 0's is not broadcast)."""
DDP = "minddp/ddp.py"

EDITS = {DDP: [
    ("        dist.broadcast(order_tensor, src=src, group=self.process_group)\n", "")]}
VIOLATES = "B2"
CAUGHT_BY = {"B.1": "the ranks can agree on one observed order only through a collective"}
