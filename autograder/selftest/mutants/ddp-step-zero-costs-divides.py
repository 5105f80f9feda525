"""ddp_step computes the ready times itself, dividing by the total cost: an all-empty model, or all-zero compute costs, divide by zero."""
from autograder.selftest.kinds import Function

TIMELINE = "minddp/timeline.py"
EDITS = {TIMELINE: [Function("ddp_step", '''
def ddp_step(shapes: Sequence[ParamEntry], backward_time: float, world_size: int, alpha: float,
             beta: float, bucket_size_limits: Sequence[int], overlap: bool = True,
             order: Sequence[int] | None = None, dtype: torch.dtype = FP32,
             compute_costs: Sequence[float] | None = None) -> StepTimeline:
    """Bucket, then simulate, with the ready times worked out here."""
    tensors = meta_tensors(shapes, dtype)
    costs = shapes if compute_costs is None else compute_costs  # shapes count as their element counts
    if len(costs) != len(tensors):
        raise ValueError(f"{len(costs)} compute costs for {len(tensors)} tensors")
    buckets = compute_bucket_assignment(tensors, bucket_size_limits)
    sizes = param_numels(costs)
    ready, done = [0.0] * len(sizes), 0
    for index in (order if order is not None else reverse_order(len(sizes))):
        done += sizes[index]
        ready[index] = backward_time * done / sum(sizes)
    nbytes = [t.numel() * t.element_size() for t in tensors]
    comm = [ring_allreduce_time(sum(nbytes[i] for i in b), world_size, alpha, beta) for b in buckets]
    return simulate_step(ready, buckets, comm, overlap)
''')]}
VIOLATES = "ddp_step"
CAUGHT_BY = {"5.4": "every gradient is ready at 0"}
