"""Gradient-ready times assume gradients arrive in registration order instead of reverse order."""
TIMELINE = "minddp/timeline.py"

EDITS = {TIMELINE: [("        order = reverse_order(len(sizes))\n", "        order = list(range(len(sizes)))\n")]}
VIOLATES = "backward_ready_times"
CAUGHT_BY = {"5.2": "reverse registration order"}
