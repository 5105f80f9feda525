"""rebuild_order_effect judges rebuilding by rank r's order on rank r's own timeline, as if the other ranks did not
have to take part in each all-reduce: every by_rank_s comes out as good as a rank that never waits."""
TIMELINE = "minddp/timeline.py"

EDITS = {TIMELINE: [
    ("    def step(order: Sequence[int] | None) -> float:\n",
     "    def step(order: Sequence[int] | None, alone: Sequence[float] | None = None) -> float:\n"),
    ("        return group_step(ready, buckets, comm).step_time\n",
     "        return (group_step(ready, buckets, comm) if alone is None else simulate_step(alone, buckets, comm)).step_time\n"),
    ('"by_rank_s": [step(order) for order in rank_orders]',
     '"by_rank_s": [step(order, times) for order, times in zip(rank_orders, ready)]'),
]}
VIOLATES = "B5"
CAUGHT_BY = {"B.3": "by_rank_s"}
