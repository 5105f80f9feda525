"""Bonus B's group model written without simulate_step: the group's collectives walked by hand, the group's order
from a stable sort of a tensor, and the experiment from ddp_step-like steps per candidate order."""
from autograder.selftest.kinds import Function

TIMELINE = "minddp/timeline.py"

EDITS = {TIMELINE: [
    Function("group_step", '''
def group_step(ready_times_per_rank: Sequence[Sequence[float]], buckets: Sequence[Sequence[int]],
               comm_time: CommTime, overlap: bool = True) -> StepTimeline:
    """Walk the group's collectives: bucket b can start once every rank launched it and bucket b-1 is done."""
    if not ready_times_per_rank:
        raise ValueError("a group has at least one rank")
    if any(len(bucket) == 0 for bucket in buckets):
        raise ValueError("every bucket must hold at least one tensor")
    if len({len(times) for times in ready_times_per_rank}) > 1:
        raise ValueError("every rank has a ready time for every gradient")
    durations = _durations(comm_time, len(buckets))
    ends_of_backward = [max(times, default=0.0) for times in ready_times_per_rank]
    backward_end = max(ends_of_backward)
    launched = [max(max(times[i] for i in bucket) for times in ready_times_per_rank) for bucket in buckets]
    starts, ends, free = [], [], 0.0
    for b, duration in enumerate(durations):
        start = max(launched[b] if overlap else backward_end, free)
        starts.append(start)
        free = start + duration
        ends.append(free)
    return StepTimeline([list(b) for b in buckets], launched, starts, ends, backward_end, overlap)
'''),
    Function("group_order", '''
def group_order(ready_times_per_rank: Sequence[Sequence[float]]) -> list[int]:
    """A stable sort keeps ties in index order."""
    if not ready_times_per_rank or not len(ready_times_per_rank[0]):
        return []
    latest = torch.tensor(ready_times_per_rank, dtype=torch.float64).amax(dim=0)
    return torch.sort(latest, stable=True).indices.tolist()
'''),
    Function("rebuild_order_effect", '''
def rebuild_order_effect(model: ModelSpec, rank_orders: Sequence[Sequence[int]], alpha: float = ALPHA_S,
                         beta: float = BETA_BYTES_PER_S,
                         bucket_size_limits: Sequence[int] = (LECTURE_BUCKET_CAP_BYTES,)) -> dict:
    """One group step per candidate order."""
    costs = model.compute_costs if model.compute_costs is not None else model.shapes
    per_rank = [backward_ready_times(costs, model.backward_time, order) for order in rank_orders]
    tensors = meta_tensors(model.shapes)

    def judged(order):
        buckets = compute_bucket_assignment(tensors, bucket_size_limits, order)
        return group_step(per_rank, buckets, lambda b: ring_allreduce_time(
            sum(tensors[i].nbytes for i in buckets[b]), len(rank_orders), alpha, beta)).step_time

    candidates = [None, *rank_orders, group_order(per_rank)]
    steps = [judged(order) for order in candidates]
    return {"no_rebuild_s": steps[0], "by_rank_s": steps[1:-1], "by_group_s": steps[-1]}
'''),
]}
