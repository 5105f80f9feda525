"""Provided — the written questions' data (handout §6 prints it) and, for some of them, what your own code gives.

A question whose answer your ``minddp`` can compute (Q1, Q2, and Q6, Q11: what your experiments of handout §5.3
found) is also computed here with YOUR code, so that `make test` can tell you when an answer disagrees with your
own functions. That says nothing about whether either is right: the values are graded on Gradescope only.
Questions that ask you to reason a result out by hand (Q3-Q5, Q7) are not computed here.
"""

from __future__ import annotations

from typing import Any

MiB = 1024 * 1024

# Q1 -- rank layout.
Q1_NODES, Q1_GPUS_PER_NODE = 4, 8
Q1_RANK = 19
Q1_NODE, Q1_LOCAL_RANK = 3, 5

# Q2 -- bucketing: (name, size in MiB, dtype) in registration order; limits in MiB [first, cap].
Q2_PARAMS = [("p0", 2, "float32"), ("p1", 1, "float16"), ("p2", 4, "float32"), ("p3", 3, "float32"),
             ("p4", 0.5, "float16"), ("p5", 6, "float32"), ("p6", 1, "float32"), ("p7", 2, "float32")]
Q2_LIMITS_MIB = [2, 8]

# Q11 -- the efficiency level whose crossing the question asks for.
Q11_EFFICIENCY = 0.5


def q2_tensors() -> list:
    """Q2's parameters as meta tensors (no memory)."""
    import torch
    return [torch.empty(int(mib * MiB) // torch.empty(0, dtype=getattr(torch, dtype)).element_size(),
                        dtype=getattr(torch, dtype), device="meta") for _, mib, dtype in Q2_PARAMS]


def q1_from_code() -> tuple:
    from minddp.process_group import global_rank, node_and_local_rank
    node, local = node_and_local_rank(Q1_RANK, Q1_GPUS_PER_NODE)
    return (node, local, Q1_NODES * Q1_GPUS_PER_NODE, global_rank(Q1_NODE, Q1_LOCAL_RANK, Q1_GPUS_PER_NODE))


def q2_from_code() -> list:
    from minddp.bucketing import compute_bucket_assignment
    buckets = compute_bucket_assignment(q2_tensors(), [int(m * MiB) for m in Q2_LIMITS_MIB])
    return [[Q2_PARAMS[i][0] for i in bucket] for bucket in buckets]


def best_cap(sweep: dict) -> int | None:
    """The cap of a ``bucket_cap_sweep`` result with the shortest step (the first of equals)."""
    return min(sweep["points"], key=lambda point: point["step_s"])["cap_bytes"]


def q6_from_code() -> tuple:
    from minddp import timeline as tl
    resnet, bert = tl.bucket_cap_sweep(tl.resnet50_model()), tl.bucket_cap_sweep(tl.bert_large_model())
    cap_zero = next(p for p in resnet["points"] if p["cap_bytes"] == 0)
    first = tl.first_bucket_effect(tl.resnet50_model())
    saved_ms = (first["cap_only"]["step_s"] - first["small_first"]["step_s"]) * 1e3
    _, fastest = tl.best_bucket_plan(tl.bert_large_model())
    best_bert = min(point["step_s"] for point in bert["points"])
    return (best_cap(resnet), best_cap(bert), cap_zero["step_s"] / resnet["no_overlap_s"], saved_ms, fastest / best_bert)


def q11_from_code() -> tuple:
    from minddp import timeline as tl
    orders = tl.registration_order_effect(tl.bert_large_model())
    bert = tl.weak_scaling(tl.bert_large_model())
    resnet = tl.weak_scaling(tl.resnet50_model())
    below = next((row["world_size"] for row in bert if row["efficiency"] < Q11_EFFICIENCY), None)
    return (orders["scrambled"]["step_s"] / orders["reverse"]["step_s"],
            orders["reversed"]["step_s"] / orders["reverse"]["step_s"], below, resnet[-1]["efficiency"])


# question -> what your code gives for it (run by the worker, beside your answers.py: scenarios.answers)
FROM_CODE: dict[str, Any] = {"q1_rank_layout": q1_from_code, "q2_buckets": q2_from_code,
                             "q6_bucket_size": q6_from_code, "q11_order_and_scale": q11_from_code}
# what each of those uses of yours (the message names them)
USES = {"q1_rank_layout": "node_and_local_rank and global_rank (Part 1)",
        "q2_buckets": "compute_bucket_assignment (Part 2)",
        "q6_bucket_size": "bucket_cap_sweep, first_bucket_effect and best_bucket_plan (Part 5)",
        "q11_order_and_scale": "registration_order_effect and weak_scaling (Part 5)"}
