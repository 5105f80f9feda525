"""registration_order_effect lets backward follow the new registration order (no order given): the model is
re-registered, and its gradients are wrongly assumed to come in the reverse of the new order."""
TIMELINE = "minddp/timeline.py"

EDITS = {TIMELINE: [("        tl = registered.step(world_size, bucket_size_limits, alpha, beta,\n"
                     "                             order=true_backward_order(permutation))",
                     "        tl = registered.step(world_size, bucket_size_limits, alpha, beta)")]}
VIOLATES = "registration_order_effect"
CAUGHT_BY = {"5.7": "not how the model computes"}
