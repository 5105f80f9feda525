"""The group's step is the slowest rank's step, each rank simulated alone: right when the ranks agree, too short
when they do not (a rank's all-reduce cannot start before every rank has launched it)."""
from autograder.selftest.kinds import Function

TIMELINE = "minddp/timeline.py"

EDITS = {TIMELINE: [Function("group_step", '''
def group_step(ready_times_per_rank: Sequence[Sequence[float]], buckets: Sequence[Sequence[int]],
               comm_time: CommTime, overlap: bool = True) -> StepTimeline:
    """Every rank on its own; the group is as slow as its slowest rank."""
    if not ready_times_per_rank:
        raise ValueError("a group has at least one rank")
    timelines = [simulate_step(ready, buckets, comm_time, overlap) for ready in ready_times_per_rank]
    return max(timelines, key=lambda timeline: timeline.step_time)
''')]}
VIOLATES = "B4"
CAUGHT_BY = {"B.2": "group_step("}
