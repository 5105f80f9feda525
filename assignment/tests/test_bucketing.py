# GENERATED from solutions/tests/test_bucketing.py by tools/assign.py (staff: edit that file, then `make assignment`).
# Public tests: do not edit them by hand; the grader runs its own copy (and more tests).
"""Part 2 — bucketing (handout §2, lecture §2.2)."""

from __future__ import annotations

import random

import pytest
import torch
import torch.distributed as dist

from minddp.bucketing import MiB, bucket_size_limits, compute_bucket_assignment, reverse_order

DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16]


def meta(sizes_bytes, dtype=torch.uint8):
    """Meta tensors of the given byte sizes: metadata only, no memory."""
    itemsize = torch.empty(0, dtype=dtype).element_size()
    return [torch.empty(n // itemsize, dtype=dtype, device="meta") for n in sizes_bytes]


def torch_assignment(tensors, limits):
    """torch's own assignment when fed the reverse order (what its DDP does after iteration 1)."""
    order = reverse_order(len(tensors))
    buckets, _ = dist._compute_bucket_assignment_by_size([tensors[i] for i in order], limits, [], order)
    return buckets


def test_reverse_order():
    assert reverse_order(4) == [3, 2, 1, 0]
    assert reverse_order(0) == []


def test_lecture_exercise_3():
    # p0..p4 = 10, 2, 8, 20, 4 MiB, cap 12 MiB. Reverse order: p4 (4) + p3 (20) = 24 >= 12 -> sealed;
    # p2 (8) + p1 (2) = 10 < 12, + p0 (10) = 20 >= 12 -> sealed.
    params = meta([10 * MiB, 2 * MiB, 8 * MiB, 20 * MiB, 4 * MiB])
    assert compute_bucket_assignment(params, [12 * MiB]) == [[4, 3], [2, 1, 0]], \
        "handout §2: visit parameters in reverse registration order and seal a bucket once bytes >= limit"


def test_sealed_at_greater_or_equal():
    # Each tensor is exactly the limit: >= seals every bucket after one tensor (> would pair them up).
    assert compute_bucket_assignment(meta([8, 8, 8]), [8]) == [[2], [1], [0]], \
        "handout §2: a bucket is sealed when its bytes are >= the limit, not >"


def test_first_bucket_limit_then_cap_repeats():
    # limits [4, 16]: first bucket seals at 4 bytes, every later one at 16 (the last limit repeats).
    tensors = meta([4] * 10)
    assert compute_bucket_assignment(tensors, [4, 16]) == [[9], [8, 7, 6, 5], [4, 3, 2, 1], [0]], \
        "handout §2: the first bucket uses the first limit, later buckets the last one"


def test_dtype_groups_fill_separately():
    tensors = [torch.empty(2, dtype=torch.float32, device="meta"), torch.empty(1, dtype=torch.float64, device="meta"),
               torch.empty(2, dtype=torch.float32, device="meta"), torch.empty(1, dtype=torch.float64, device="meta")]
    # Reverse order: 3 (f64, 8 B), 2 (f32, 8 B), 1 (f64 -> 16 B >= 16: sealed), 0 (f32 -> 16 B: sealed).
    assert compute_bucket_assignment(tensors, [16]) == [[3, 1], [2, 0]], \
        "handout §2: each dtype fills its own buckets; a bucket never mixes dtypes"


def test_unfinished_buckets_close_newest_group_first():
    tensors = [torch.empty(1, dtype=torch.float64, device="meta"), torch.empty(1, dtype=torch.float32, device="meta")]
    # Visited: 1 (f32 group seen first), 0 (f64 seen second); nothing sealed -> f64's bucket comes first.
    assert compute_bucket_assignment(tensors, [100]) == [[0], [1]]
    assert compute_bucket_assignment(tensors, [100]) == torch_assignment(tensors, [100])


def test_bucket_size_limits_mirror_torch_arguments():
    assert bucket_size_limits() == [1 * MiB, 25 * MiB]
    assert bucket_size_limits(bucket_cap_mb=4) == [4 * MiB]
    assert bucket_size_limits(bucket_cap_mb_list=[1, 8]) == [1 * MiB, 8 * MiB]
    with pytest.raises(ValueError, match="not both"):
        bucket_size_limits(bucket_cap_mb=1, bucket_cap_mb_list=[1, 2])


def random_case(rng: random.Random, max_tensors: int):
    dtypes = DTYPES[:rng.randint(1, len(DTYPES))]
    tensors = [torch.empty(rng.randint(1, 64), dtype=rng.choice(dtypes), device="meta")
               for _ in range(rng.randint(1, max_tensors))]
    limits = [rng.choice([0, 1, 2, 4, 8, 32, 64, 100, 256, 1000]) for _ in range(rng.randint(1, 3))]
    return tensors, limits


def test_agrees_with_torch_on_random_inputs():
    """5,000 seeded random cases, smallest first, so a failure shows a small counterexample."""
    rng = random.Random(2026)
    for case in range(5000):
        tensors, limits = random_case(rng, max_tensors=2 + case // 100)
        expected = torch_assignment(tensors, limits)
        got = compute_bucket_assignment(tensors, limits)
        assert got == expected, (
            f"case {case}: sizes={[t.numel() for t in tensors]} "
            f"dtypes={[str(t.dtype).replace('torch.', '') for t in tensors]} limits={limits}\n"
            f"  yours:  {got}\n  torch's: {expected}")
