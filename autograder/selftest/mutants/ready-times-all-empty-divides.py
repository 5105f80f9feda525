"""backward_ready_times divides by the total size even when every size is 0 (the handout: then every gradient is ready at 0)."""
TIMELINE = "minddp/timeline.py"
EDITS = {TIMELINE: [("        ready[index] = backward_time * done / total if total else 0.0\n",
                     "        ready[index] = backward_time * done / total\n")]}
VIOLATES = "backward_ready_times"
CAUGHT_BY = {"5.2": "every gradient is ready at 0"}
