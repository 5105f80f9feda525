"""weak_scaling's efficiency is the slowdown itself (iteration at K over one rank's), not its inverse."""
TIMELINE = "minddp/timeline.py"

EDITS = {TIMELINE: [('"slowdown": t / single, "efficiency": single / t}', '"slowdown": t / single, "efficiency": t / single}')]}
VIOLATES = "weak_scaling"
CAUGHT_BY = {"5.8": "['efficiency']"}
