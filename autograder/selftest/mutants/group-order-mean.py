"""The group's order sorts the gradients by the ranks' mean ready time, not by when the group has them."""
TIMELINE = "minddp/timeline.py"

EDITS = {TIMELINE: [("    ready = [max(times) for times in zip(*ready_times_per_rank, strict=True)]\n    return sorted",
                     "    ready = [sum(times) / len(times) for times in zip(*ready_times_per_rank, strict=True)]\n"
                     "    return sorted")]}
VIOLATES = "B4"
CAUGHT_BY = {"B.2": "group_order's ready times for the group are the ranks' mean"}
