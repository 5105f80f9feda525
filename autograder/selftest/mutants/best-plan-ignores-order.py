"""best_bucket_plan cuts the reverse registration order even when ``order`` says backward produces the gradients
in another: its buckets are not runs of the real order."""
TIMELINE = "minddp/timeline.py"

EDITS = {TIMELINE: [("    sequence = list(order) if order is not None else reverse_order(len(model.shapes))\n"
                     "    nbytes = [FP32.itemsize * n for n in param_numels(model.shapes)]\n"
                     "    # finish[j]",
                     "    sequence = reverse_order(len(model.shapes))\n"
                     "    nbytes = [FP32.itemsize * n for n in param_numels(model.shapes)]\n"
                     "    # finish[j]")]}
VIOLATES = "best_bucket_plan"
CAUGHT_BY = {"5.10": "runs of consecutive gradients in the order backward produces them"}
