# GENERATED from solutions/answers.py by tools/assign.py (staff: edit that file, then `make assignment`).
# Part 6, Written questions (handout §6): this is your copy; edit the stubs (each `raise NotImplementedError`).
"""Part 6 — written questions (handout §6).

One function per question of handout §6: replace each stub with a ``return`` of the value(s) the
question asks for, in the type and order its signature and docstring give (times in milliseconds,
fractions as fractions: 0.25, not 25). Plain numbers are enough; you may also compute them with your
own ``minddp`` code. Q1-Q7: the public tests check only the FORMAT of your answers (types and lengths); the
values are graded on Gradescope, floats within a relative tolerance of 1e-3. Q8-Q10 are about your own
machine (``make measure``): their public tests check them in full, for consistency with each other.
"""

from __future__ import annotations


def q1_rank_layout() -> tuple[int, int, int, int]:
    """Q1: (node of the global rank given, its local rank, WORLD_SIZE, the global rank asked in (d))."""
    # YOUR CODE HERE: replace this raise.
    raise NotImplementedError("Part 6: q1_rank_layout — see handout §6")


def q2_buckets() -> list[list[str]]:
    """Q2: the buckets in bucket-index order, each a list of parameter names ("p0", ...) in the order
    they sit in the bucket."""
    # YOUR CODE HERE: replace this raise.
    raise NotImplementedError("Part 6: q2_buckets — see handout §6")


def q3_overlap_ms() -> tuple[float, float, float]:
    """Q3: (when bucket 1's all-reduce starts, step time with overlap, step time without overlap), ms."""
    # YOUR CODE HERE: replace this raise.
    raise NotImplementedError("Part 6: q3_overlap_ms — see handout §6")


def q4_cap_zero_ms() -> tuple[float, float, float]:
    """Q4: (one all-reduce of the whole model, the sum of the per-tensor all-reduces with cap 0,
    the step time with one bucket and no overlap), ms."""
    # YOUR CODE HERE: replace this raise.
    raise NotImplementedError("Part 6: q4_cap_zero_ms — see handout §6")


def q5_skip_sync() -> tuple[float, float, float]:
    """Q5: (average iteration time in ms, speedup over syncing every iteration as a fraction,
    learning-rate multiplier)."""
    # YOUR CODE HERE: replace this raise.
    raise NotImplementedError("Part 6: q5_skip_sync — see handout §6")


def q6_bucket_size() -> tuple[int | None, int | None, float, float, float]:
    """Q6, from your experiments (handout §5.3) on the lecture's models and constants: (ResNet-50's best cap of
    the sweep in bytes, or None for one bucket; BERT-large's; ResNet-50's step with a cap of 0 over its step
    without overlap; the ms ResNet-50's step saves with a 1 MiB first bucket; BERT-large's step with the fastest
    plan over its step at its best cap)."""
    # YOUR CODE HERE: replace this raise.
    raise NotImplementedError("Part 6: q6_bucket_size — see handout §6")


def q7_collective_counts() -> tuple[int, int, int, int]:
    """Q7, per rank over the optimizer steps: (all-reduces, broadcasts) with no_sync around forward and
    backward, then (all-reduces, broadcasts) with no_sync around backward only."""
    # YOUR CODE HERE: replace this raise.
    raise NotImplementedError("Part 6: q7_collective_counts — see handout §6")


def q8_measurements() -> dict:
    """Q8: the dict ``make measure`` printed on your machine, pasted as it is: {"world_size", "allreduce_s"
    ({bytes: seconds}), "small_tensors", "small_tensor_bytes", "many_small_s", "one_flat_s"}."""
    # YOUR CODE HERE: replace this raise.
    raise NotImplementedError("Part 6: q8_measurements — see handout §6")


def q9_alpha_beta() -> tuple[float, float]:
    """Q9: (α in seconds, β in bytes per second): the ring model fitted to q8_measurements()["allreduce_s"]
    by least squares of the relative errors. Compute it here from q8_measurements(), do not type it."""
    # YOUR CODE HERE: replace this raise.
    raise NotImplementedError("Part 6: q9_alpha_beta — see handout §6")


def q10_predictions() -> tuple[float, float, float, float]:
    """Q10, from q8_measurements() and q9_alpha_beta(): (the measured ratio many_small_s / one_flat_s, the
    ratio your α and β predict for those all-reduces, ResNet-50's step on 16 ranks in ms with 25 MB buckets
    and no overlap, the same with a bucket cap of 0)."""
    # YOUR CODE HERE: replace this raise.
    raise NotImplementedError("Part 6: q10_predictions — see handout §6")


def q11_order_and_scale() -> tuple[float, float, int | None, float]:
    """Q11, from your experiments (handout §5.3) on the lecture's models and constants: (BERT-large's step with
    its layers registered scrambled over its step in the right order; registered last to first over the right
    order; the smallest world size of the scaling experiment at which BERT-large's weak-scaling efficiency is
    below 0.5, or None; ResNet-50's weak-scaling efficiency at the largest world size)."""
    # YOUR CODE HERE: replace this raise.
    raise NotImplementedError("Part 6: q11_order_and_scale — see handout §6")
