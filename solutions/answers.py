"""Part 6 — written questions (handout §6).

One function per question of handout §6: replace each stub with a ``return`` of the value(s) the
question asks for, in the type and order its signature and docstring give (times in milliseconds,
fractions as fractions: 0.25, not 25). Plain numbers are enough; you may also compute them with your
own ``minddp`` code. The public tests check only the FORMAT of your answers (types and lengths); the
values are graded on Gradescope, floats within a relative tolerance of 1e-3.
"""

from __future__ import annotations


def q1_rank_layout() -> tuple[int, int, int, int]:
    """Q1: (node of the global rank given, its local rank, WORLD_SIZE, the global rank asked in (d))."""
    # BEGIN SOLUTION
    return (2, 3, 32, 29)
    # END SOLUTION


def q2_buckets() -> list[list[str]]:
    """Q2: the buckets in bucket-index order, each a list of parameter names ("p0", ...) in the order
    they sit in the bucket."""
    # BEGIN SOLUTION
    return [["p7"], ["p6", "p5", "p3"], ["p4", "p1"], ["p2", "p0"]]
    # END SOLUTION


def q3_overlap_ms() -> tuple[float, float, float]:
    """Q3: (when bucket 1's all-reduce starts, step time with overlap, step time without overlap), ms."""
    # BEGIN SOLUTION
    return (7.3, 10.5, 13.5)
    # END SOLUTION


def q4_cap_zero_ms() -> tuple[float, float, float]:
    """Q4: (one all-reduce of the whole model, the sum of the per-tensor all-reduces with cap 0,
    the step time with one bucket and no overlap), ms."""
    # BEGIN SOLUTION
    return (47.88, 248.85, 167.88)
    # END SOLUTION


def q5_skip_sync() -> tuple[float, float, float]:
    """Q5: (average iteration time in ms, speedup over syncing every iteration as a fraction,
    learning-rate multiplier)."""
    # BEGIN SOLUTION
    return (130.0, 180.0 / 130.0 - 1.0, 1.0 / 6.0)
    # END SOLUTION


def q6_weak_scaling() -> tuple[float, float]:
    """Q6: (throughput at 128 ranks relative to one rank, weak-scaling efficiency as a fraction)."""
    # BEGIN SOLUTION
    return (81.92, 0.64)
    # END SOLUTION


def q7_collective_counts() -> tuple[int, int, int, int]:
    """Q7, per rank over the optimizer steps: (all-reduces, broadcasts) with no_sync around forward and
    backward, then (all-reduces, broadcasts) with no_sync around backward only."""
    # BEGIN SOLUTION
    return (30, 20, 120, 80)
    # END SOLUTION
