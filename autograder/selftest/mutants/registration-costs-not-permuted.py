"""registration_order_effect re-registers the shapes but leaves the compute costs in the original order."""
TIMELINE = "minddp/timeline.py"

EDITS = {TIMELINE: [("                               [costs[i] for i in permutation])\n        tl = registered.step",
                     "                               list(costs))\n        tl = registered.step")]}
VIOLATES = "registration_order_effect"
CAUGHT_BY = {"5.7": "['scrambled']"}
