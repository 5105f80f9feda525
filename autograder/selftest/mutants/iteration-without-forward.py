"""iteration_time leaves out the forward pass: an iteration is only the overlapped step."""
TIMELINE = "minddp/timeline.py"

EDITS = {TIMELINE: [("    return forward_time + model.step(world_size, bucket_size_limits, alpha, beta).step_time",
                     "    return model.step(world_size, bucket_size_limits, alpha, beta).step_time")]}
VIOLATES = "iteration_time"
CAUGHT_BY = {"5.8": "the forward pass is left out"}
