"""ddp_step ignores compute_costs: every gradient's ready time comes from its element count."""
TIMELINE = "minddp/timeline.py"

EDITS = {TIMELINE: [
    ("    ready = backward_ready_times(costs, backward_time, order)\n",
     "    ready = backward_ready_times(shapes, backward_time, order)\n")]}
VIOLATES = "ddp_step"
CAUGHT_BY = {"5.4": "`compute_costs` is ignored"}
