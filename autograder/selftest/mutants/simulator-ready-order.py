"""The timeline simulator launches buckets in the order they become ready, not in bucket index order."""
from autograder.selftest.kinds import Function

TIMELINE = "minddp/timeline.py"

EDITS = {TIMELINE: [Function("simulate_step", '''
def simulate_step(ready_times, buckets, comm_time, overlap=True):
    """Buckets go on the communication stream as soon as they are ready."""
    if any(len(bucket) == 0 for bucket in buckets):
        raise ValueError("every bucket must hold at least one tensor")
    durations = _durations(comm_time, len(buckets))
    backward_end = max(ready_times, default=0.0)
    bucket_ready = [max(ready_times[i] for i in bucket) for bucket in buckets]
    starts, ends = [0.0] * len(buckets), [0.0] * len(buckets)
    stream_free = 0.0
    for b in sorted(range(len(buckets)), key=lambda b: bucket_ready[b]):  # first ready, first sent
        starts[b] = max(bucket_ready[b] if overlap else backward_end, stream_free)
        ends[b] = stream_free = starts[b] + durations[b]
    return StepTimeline(buckets=[list(b) for b in buckets], bucket_ready=bucket_ready, comm_start=starts,
                        comm_end=ends, backward_end=backward_end, overlap=overlap)
''')]}
VIOLATES = "simulate_step"
CAUGHT_BY = {"5.3": "index order"}
