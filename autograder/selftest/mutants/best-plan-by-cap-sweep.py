"""best_bucket_plan tries a range of caps and keeps the best: a plan a cap can make, not the fastest plan."""
from autograder.selftest.kinds import Function

TIMELINE = "minddp/timeline.py"

EDITS = {TIMELINE: [Function("best_bucket_plan", '''
def best_bucket_plan(model=None, world_size=LECTURE_WORLD_SIZE, alpha=ALPHA_S, beta=BETA_BYTES_PER_S, order=None):
    """Sweep caps from one tensor to the whole model; keep the fastest."""
    model = bert_large_model() if model is None else model
    total = model_bytes(model.shapes)
    best = None
    for cap in [0] + [int(total * f / 64) for f in range(1, 65)]:
        t = model.step(world_size, [cap], alpha, beta, order=order)
        if best is None or t.step_time < best[1]:
            best = (t.buckets, t.step_time)
    return best
''')]}
VIOLATES = "best_bucket_plan"
CAUGHT_BY = {"5.10": "the fastest plan's step is"}
