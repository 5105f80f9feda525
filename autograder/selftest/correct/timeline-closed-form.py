"""Timeline written with closed forms and itertools.accumulate instead of explicit loops."""
from autograder.selftest.kinds import Function

TIMELINE = "minddp/timeline.py"

EDITS = {TIMELINE: [
    ("import random\n", "import itertools\nimport random\n"),
    Function("ring_allreduce_time", '''
def ring_allreduce_time(nbytes: float, world_size: int, alpha: float, beta: float) -> float:
    """2(K-1) rounds, each paying alpha and moving n/K bytes."""
    if world_size < 1:
        raise ValueError(f"world_size must be >= 1, got {world_size}")
    return 2 * (world_size - 1) * (alpha + nbytes / (world_size * beta))
'''),
    Function("backward_ready_times", '''
def backward_ready_times(shapes_or_sizes: Sequence[ParamEntry], backward_time: float,
                         order: Sequence[int] | None = None) -> list[float]:
    """Gradient i is ready when the work of every gradient up to it (in ``order``) is done."""
    sizes = param_numels(shapes_or_sizes)
    if order is None:
        order = reverse_order(len(sizes))
    if sorted(order) != list(range(len(sizes))):
        raise ValueError("order must list every tensor index exactly once")
    total = sum(sizes)
    done = itertools.accumulate(sizes[i] for i in order)  # work finished after each gradient
    ready = dict(zip(order, (backward_time * d / total if total else 0.0 for d in done)))
    return [ready[i] for i in range(len(sizes))]
'''),
    Function("simulate_step", '''
def simulate_step(ready_times: Sequence[float], buckets: Sequence[Sequence[int]], comm_time: CommTime,
                  overlap: bool = True) -> StepTimeline:
    """end_b = max(ready_b, end_(b-1)) + d_b: a running fold over the buckets."""
    if any(len(bucket) == 0 for bucket in buckets):
        raise ValueError("every bucket must hold at least one tensor")
    durations = _durations(comm_time, len(buckets))
    backward_end = max(ready_times, default=0.0)
    bucket_ready = [max(ready_times[i] for i in bucket) for bucket in buckets]
    earliest = bucket_ready if overlap else [backward_end] * len(buckets)
    ends = list(itertools.accumulate(zip(earliest, durations), lambda end, bd: max(bd[0], end) + bd[1],
                                     initial=0.0))[1:]
    starts = [max(e, previous_end) for e, previous_end in zip(earliest, [0.0] + ends[:-1])]
    return StepTimeline([list(b) for b in buckets], bucket_ready, starts, ends, backward_end, overlap)
'''),
    Function("ddp_step", '''
def ddp_step(shapes: Sequence[ParamEntry], backward_time: float, world_size: int, alpha: float,
             beta: float, bucket_size_limits: Sequence[int], overlap: bool = True,
             order: Sequence[int] | None = None, dtype: torch.dtype = FP32,
             compute_costs: Sequence[float] | None = None) -> StepTimeline:
    """Bucket a model as DDP would, then simulate one backward (+ communication) step."""
    tensors = meta_tensors(shapes, dtype)
    costs = shapes if compute_costs is None else compute_costs
    if len(costs) != len(tensors):
        raise ValueError(f"{len(costs)} compute costs for {len(tensors)} tensors")
    buckets = compute_bucket_assignment(tensors, bucket_size_limits)

    def comm(b: int) -> float:  # simulate_step accepts a callable
        return ring_allreduce_time(sum(tensors[i].nbytes for i in buckets[b]), world_size, alpha, beta)

    return simulate_step(backward_ready_times(costs, backward_time, order), buckets, comm, overlap)
'''),
    Function("skip_sync_step_time", '''
def skip_sync_step_time(sync_step: float, nosync_step: float, n: int) -> float:
    """Every step costs a no-sync step; one in n also pays the sync overhead."""
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    return nosync_step + (sync_step - nosync_step) / n
'''),
]}
