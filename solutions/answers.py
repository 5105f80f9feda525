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


def q6_bucket_size() -> tuple[int | None, int | None, float, float, float]:
    """Q6, from your experiments (handout §5.3) on the lecture's models and constants: (ResNet-50's best cap of
    the sweep in bytes, or None for one bucket; BERT-large's; ResNet-50's step with a cap of 0 over its step
    without overlap; the ms ResNet-50's step saves with a 1 MiB first bucket; BERT-large's step with the fastest
    plan over its step at its best cap)."""
    # BEGIN SOLUTION
    # From the experiments of timeline.py (bucket_cap_sweep, first_bucket_effect, best_bucket_plan) with their
    # defaults, the lecture's models and constants; kept as numbers so that grading Part 6 runs no other file.
    # Both extremes lose: a cap of 0 pays the latency once per tensor (161 times), one bucket cannot start before
    # backward ends. BERT-large's best cap is larger: 391 tensors, 1.3 GB of gradients. The fastest plan makes its
    # buckets grow: small while backward is young, large at the end, where nothing is left to overlap.
    return (1000000, 50000000, 1.265864912283417, 2.710272, 0.9661390205897566)
    # END SOLUTION


def q7_collective_counts() -> tuple[int, int, int, int]:
    """Q7, per rank over the optimizer steps: (all-reduces, broadcasts) with no_sync around forward and
    backward, then (all-reduces, broadcasts) with no_sync around backward only."""
    # BEGIN SOLUTION
    return (30, 20, 120, 80)
    # END SOLUTION


def q8_measurements() -> dict:
    """Q8: the dict ``make measure`` printed on your machine, pasted as it is: {"world_size", "allreduce_s"
    ({bytes: seconds}), "small_tensors", "small_tensor_bytes", "many_small_s", "one_flat_s"}."""
    # BEGIN SOLUTION
    # `make measure` on the staff machine (2 vCPUs, x86_64, idle; torch 2.13.0 CPU, gloo), as printed.
    return {
        "world_size": 2,
        "allreduce_s": {  # bytes: seconds (median)
            1024: 0.0004758,
            4096: 0.0005662,
            16384: 0.0004824,
            65536: 0.0005616,
            262144: 0.003807,
            1048576: 0.003809,
            4194304: 0.004699,
            16777216: 0.01517,
        },
        "small_tensors": 4096,
        "small_tensor_bytes": 4096,
        "many_small_s": 4.541,
        "one_flat_s": 0.01429,
    }
    # END SOLUTION


def q9_alpha_beta() -> tuple[float, float]:
    """Q9: (α in seconds, β in bytes per second): the ring model fitted to q8_measurements()["allreduce_s"]
    by least squares of the relative errors. Compute it here from q8_measurements(), do not type it."""
    # BEGIN SOLUTION
    import torch
    measured = q8_measurements()
    k = measured["world_size"]
    sizes = sorted(measured["allreduce_s"])
    times = torch.tensor([measured["allreduce_s"][n] for n in sizes], dtype=torch.float64)
    # t = 2(K-1) α + 2(K-1)/K n (1/β) is linear in (α, 1/β); dividing each row by its t makes the
    # least squares minimize relative errors, so that 1 KiB counts as much as 16 MiB.
    latency = [2 * (k - 1) for n in sizes]
    bandwidth = [2 * (k - 1) / k * n for n in sizes]
    design = torch.tensor([latency, bandwidth], dtype=torch.float64).T / times[:, None]
    alpha, inverse_beta = torch.linalg.lstsq(design, torch.ones(len(sizes), 1, dtype=torch.float64)).solution[:, 0]
    # Here α ≈ 0.26 ms (25x the lecture's 10 µs: two processes waking each other on a 2-vCPU VM) and β ≈ 1 GB/s
    # (a tenth of the lecture's 10 GB/s: memory copies through the loopback). Latency dominates below
    # n* = Kαβ ≈ 0.5 MB, bandwidth above it.
    return alpha.item(), 1 / inverse_beta.item()
    # END SOLUTION


def q10_predictions() -> tuple[float, float, float, float]:
    """Q10, from q8_measurements() and q9_alpha_beta(): (the measured ratio many_small_s / one_flat_s, the
    ratio your α and β predict for those all-reduces, ResNet-50's step on 16 ranks in ms with 25 MB buckets
    and no overlap, the same with a bucket cap of 0)."""
    # BEGIN SOLUTION
    # Closed forms, so that this answer does not depend on Parts 2 and 5 (the handout's numbers for (c), (d)).
    measured = q8_measurements()
    alpha, beta = q9_alpha_beta()
    k, count, each = measured["world_size"], measured["small_tensors"], measured["small_tensor_bytes"]

    # handout §5: an all-reduce of n bytes on K ranks takes 2(K-1)α + 2(K-1)/K · n/β
    small = 2 * (k - 1) * alpha + 2 * (k - 1) / k * each / beta
    flat = 2 * (k - 1) * alpha + 2 * (k - 1) / k * count * each / beta
    predicted = count * small / flat
    backward_ms, grad_bytes, ranks = 32.93, 25_557_032 * 4, 16  # ResNet-50 (handout Q10), on 16 ranks
    # Without overlap: backward, then each bucket's all-reduce in turn; the n/β terms add up to the whole
    # gradient whatever the buckets, so only their number (4 at 25 MB, 161 tensors at cap 0) matters.
    bandwidth_s = 2 * (ranks - 1) / ranks * grad_bytes / beta
    steps = [backward_ms + 1e3 * (buckets * 2 * (ranks - 1) * alpha + bandwidth_s) for buckets in (4, 161)]
    # The model predicts ~120x, the measurement ~320x: 4096 calls in a row also pay Python's and torch's cost
    # per call and, on a busy 2-core machine, the scheduler's wake-ups (bimodal per-call times), which the
    # sweep's medians leave out. With overlap, 25 MB buckets take ~229 ms and cap 0 ~1446 ms: 161 x 2(K-1)α is
    # 1.25 s of pure latency, so cap 0 is far worse here than with the lecture's α, β (67 ms vs 38 ms).
    return (measured["many_small_s"] / measured["one_flat_s"], predicted, *steps)
    # END SOLUTION


def q11_order_and_scale() -> tuple[float, float, int | None, float]:
    """Q11, from your experiments (handout §5.3) on the lecture's models and constants: (BERT-large's step with
    its layers registered scrambled over its step in the right order; registered last to first over the right
    order; the smallest world size of the scaling experiment at which BERT-large's weak-scaling efficiency is
    below 0.5, or None; ResNet-50's weak-scaling efficiency at the largest world size)."""
    # BEGIN SOLUTION
    # From registration_order_effect and weak_scaling with their defaults (kept as numbers, as Q6's). BERT-large has
    # 48 buckets at 25 MB, ResNet-50 4: every bucket pays the ring's latency, which grows with K.
    return (1.515354063771205, 1.6388802682119978, 256, 0.8328008516469857)
    # END SOLUTION
