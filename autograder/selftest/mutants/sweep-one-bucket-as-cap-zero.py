"""bucket_cap_sweep takes the cap None (one bucket for the whole model) as a cap of 0 (one bucket per tensor)."""
TIMELINE = "minddp/timeline.py"

EDITS = {TIMELINE: [("        limits = [model_bytes(model.shapes) + 1 if cap is None else cap]  # + 1: no bucket reaches it and seals",
                     "        limits = [cap or 0]")]}
VIOLATES = "bucket_cap_sweep"
CAUGHT_BY = {"5.5": "one bucket holding the whole model"}
