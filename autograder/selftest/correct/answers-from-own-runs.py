"""Q6 and Q11 computed by the student's own experiments, as the handout suggests (the reference types the numbers
it found): the results walked with plain loops (the best cap by sorting the sweep's points, the efficiency
threshold by scanning the rows), the ratios from the registration-order experiment's rows."""
from autograder.selftest.kinds import Function

ANSWERS = "answers.py"

EDITS = {ANSWERS: [
    Function("q6_bucket_size", '''
def q6_bucket_size():
    """Sort each sweep's points by step time; the first is the best cap."""
    from minddp.timeline import best_bucket_plan, bert_large_model, bucket_cap_sweep, first_bucket_effect, resnet50_model
    resnet = bucket_cap_sweep(resnet50_model())
    bert = bucket_cap_sweep(bert_large_model())
    best_resnet = sorted(resnet["points"], key=lambda p: p["step_s"])[0]["cap_bytes"]
    best_bert = sorted(bert["points"], key=lambda p: p["step_s"])[0]["cap_bytes"]
    cap_zero = [p["step_s"] for p in resnet["points"] if p["cap_bytes"] == 0][0]
    rows = first_bucket_effect(resnet50_model())
    saved = 1000 * rows["cap_only"]["step_s"] - 1000 * rows["small_first"]["step_s"]
    plan, fastest = best_bucket_plan(bert_large_model())
    return best_resnet, best_bert, cap_zero / resnet["no_overlap_s"], saved, fastest / sorted(
        p["step_s"] for p in bert["points"])[0]
'''),
    Function("q11_order_and_scale", '''
def q11_order_and_scale():
    """Scan the weak-scaling rows in order for the first efficiency under one half."""
    from minddp.timeline import bert_large_model, registration_order_effect, resnet50_model, weak_scaling
    modes = registration_order_effect(bert_large_model())
    right = modes["reverse"]["step_s"]
    first_below = None
    for row in weak_scaling(bert_large_model()):
        if row["efficiency"] < 0.5:
            first_below = row["world_size"]
            break
    largest = weak_scaling(resnet50_model())[-1]
    return modes["scrambled"]["step_s"] / right, modes["reversed"]["step_s"] / right, first_below, largest["efficiency"]
'''),
]}
