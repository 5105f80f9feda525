"""The group's model takes rank 0's ready times for the whole group: a bucket rank 0 has early goes early, as if the
other ranks' collectives had already been launched."""
TIMELINE = "minddp/timeline.py"

EDITS = {TIMELINE: [("    ready = [max(times) for times in zip(*ready_times_per_rank, strict=True)]\n"
                     "    return simulate_step(ready, buckets, comm_time, overlap)",
                     "    return simulate_step(ready_times_per_rank[0], buckets, comm_time, overlap)")]}
VIOLATES = "B4"
CAUGHT_BY = {"B.2": "group_step's ready times for the group are rank 0's"}
