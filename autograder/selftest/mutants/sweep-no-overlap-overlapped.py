"""bucket_cap_sweep's no_overlap_s is computed with overlap (the comparison it exists for is lost)."""
TIMELINE = "minddp/timeline.py"

EDITS = {TIMELINE: [("    no_overlap = model.step(world_size, [no_overlap_cap], alpha, beta, overlap=False)",
                     "    no_overlap = model.step(world_size, [no_overlap_cap], alpha, beta)")]}
VIOLATES = "bucket_cap_sweep"
CAUGHT_BY = {"5.5": "['no_overlap_s']"}
