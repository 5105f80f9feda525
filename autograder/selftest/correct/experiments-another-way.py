"""The experiments of Part 5 written another way: ddp_step called directly instead of ModelSpec.step, the true
backward order through the inverse permutation, efficiency as a ratio of throughputs, the speedup in closed form."""
from autograder.selftest.kinds import Function

TIMELINE = "minddp/timeline.py"


def _model_step() -> str:
    return '''
def _model_step(model, world_size, limits, alpha, beta, overlap=True, order=None):
    return ddp_step(model.shapes, model.backward_time, world_size, alpha, beta, limits, overlap=overlap,
                    order=order, compute_costs=model.compute_costs)
'''


EDITS = {TIMELINE: [
    Function("bucket_cap_sweep", '''
def bucket_cap_sweep(model=None, world_size=LECTURE_WORLD_SIZE, alpha=ALPHA_S, beta=BETA_BYTES_PER_S,
                     caps=CAP_SWEEP_BYTES, no_overlap_cap=LECTURE_BUCKET_CAP_BYTES):
    """Each cap's overlapped step; None: all gradients in one bucket."""
    model = model or resnet50_model()
    everything = sum(t.numel() * t.element_size() for t in meta_tensors(model.shapes))
    steps = [_model_step(model, world_size, [everything if cap is None else cap], alpha, beta) for cap in caps]
    return {"no_overlap_s": _model_step(model, world_size, [no_overlap_cap], alpha, beta, overlap=False).step_time,
            "points": [dict(cap_bytes=cap, num_buckets=len(t.buckets), step_s=t.step_time)
                       for cap, t in zip(caps, steps)]}
''' + _model_step()),
    Function("first_bucket_effect", '''
def first_bucket_effect(model=None, world_size=LECTURE_WORLD_SIZE, alpha=ALPHA_S, beta=BETA_BYTES_PER_S,
                        cap_bytes=LECTURE_BUCKET_CAP_BYTES, first_bucket_bytes=DEFAULT_FIRST_BUCKET_BYTES):
    """The same cap everywhere, against a small first bucket."""
    model = model or resnet50_model()

    def row(limits):
        t = _model_step(model, world_size, limits, alpha, beta)
        return dict(limits=limits, num_buckets=len(t.buckets), first_comm_start_s=t.comm_start[0], step_s=t.step_time)

    return dict(cap_only=row([cap_bytes]), small_first=row([first_bucket_bytes, cap_bytes]))
'''),
    Function("true_backward_order", '''
def true_backward_order(permutation):
    """Invert the permutation (where each original parameter sits now), then walk the originals backwards."""
    where = sorted(range(len(permutation)), key=lambda j: permutation[j])
    return [where[original] for original in range(len(permutation) - 1, -1, -1)]
'''),
    Function("registration_order_effect", '''
def registration_order_effect(model=None, world_size=LECTURE_WORLD_SIZE, alpha=ALPHA_S, beta=BETA_BYTES_PER_S,
                              bucket_size_limits=(LECTURE_BUCKET_CAP_BYTES,), seed=ORDER_SEED):
    """Permute shapes and costs together; backward still computes in the original reverse order."""
    model = model or bert_large_model()
    costs = list(model.compute_costs) if model.compute_costs is not None else [math.prod(s) for _, s in model.shapes]
    out = {}
    for mode in ("reverse", "scrambled", "reversed"):
        p = layer_permutation(model.shapes, mode, seed)
        t = ddp_step([model.shapes[i] for i in p], model.backward_time, world_size, alpha, beta, bucket_size_limits,
                     order=true_backward_order(p), compute_costs=[costs[i] for i in p])
        out[mode] = dict(num_buckets=len(t.buckets), first_comm_start_s=t.comm_start[0], step_s=t.step_time)
    return out
'''),
    Function("weak_scaling", '''
def weak_scaling(model=None, world_sizes=SCALING_WORLD_SIZES, alpha=ALPHA_S, beta=BETA_BYTES_PER_S,
                 bucket_size_limits=(LECTURE_BUCKET_CAP_BYTES,), forward_time=None):
    """Throughput K/t (batches per second) against K times one rank's."""
    model = model or resnet50_model()
    one = iteration_time(model, 1, alpha, beta, bucket_size_limits, forward_time)
    rows = []
    for k in world_sizes:
        t = iteration_time(model, k, alpha, beta, bucket_size_limits, forward_time)
        rows.append(dict(world_size=k, iteration_s=t, slowdown=t / one, efficiency=(k / t) / (k * (1 / one))))
    return rows
'''),
    Function("skip_sync_speedup", '''
def skip_sync_speedup(model=None, world_size=SKIP_SYNC_WORLD_SIZE, n=SKIP_SYNC_EVERY, alpha=ALPHA_S,
                      beta=BETA_BYTES_PER_S, bucket_size_limits=(LECTURE_BUCKET_CAP_BYTES,), forward_time=None):
    """A no_sync iteration communicates nothing: it costs what one rank's iteration costs."""
    model = model or resnet50_model()
    sync = iteration_time(model, world_size, alpha, beta, bucket_size_limits, forward_time)
    alone = iteration_time(model, 1, alpha, beta, bucket_size_limits, forward_time)
    average = skip_sync_step_time(sync, alone, n)
    return {"sync_s": sync, "nosync_s": alone, "average_s": average, "speedup": n * sync / ((n - 1) * alone + sync) - 1}
'''),
    ("import random\n", "import math\nimport random\n"),
]}
