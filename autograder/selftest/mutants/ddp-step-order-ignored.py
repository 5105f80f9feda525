"""ddp_step ignores its order: the ready times assume the reverse registration order DDP buckets by."""
TIMELINE = "minddp/timeline.py"

EDITS = {TIMELINE: [
    ("    ready = backward_ready_times(costs, backward_time, order)\n",
     "    ready = backward_ready_times(costs, backward_time)  # gradients come in reverse order\n")]}
VIOLATES = "ddp_step"
CAUGHT_BY = {"5.4": "`order` is ignored"}
