# GENERATED from solutions/tests/test_timeline.py by tools/assign.py (staff: edit that file, then `make assignment`).
# Public tests: do not edit them by hand; the grader runs its own copy (and more tests).
"""Tests for the shape tables and the α-β timeline model (lecture §3, §5).

Expected values are worked out by hand in the comments, never by calling the code under test. Times
are in seconds unless a test says otherwise (the lecture's exercise 4 is in ms).
"""

from __future__ import annotations

import random

import pytest
import torch

from minddp.bucketing import MiB, compute_bucket_assignment
from minddp.model_shapes import (bert_large_param_macs, bert_large_param_shapes, meta_tensors, param_numels,
                                 resnet50_param_macs, resnet50_param_shapes)
from minddp.timeline import (ALPHA_S, BERT_LARGE_BACKWARD_S, BETA_BYTES_PER_S, LECTURE_BUCKET_CAP_BYTES,
                             RESNET50_BACKWARD_S, ascii_timeline, backward_ready_times, bert_large_model,
                             bucket_cap_sweep, ddp_step, first_bucket_effect, layer_permutation,
                             registration_order_effect, resnet50_model, ring_allreduce_time,
                             simulate_step, skip_sync_speedup, skip_sync_step_time, true_backward_order,
                             weak_scaling)

MS = 1e-3
RESNET50_BYTES = 25_557_032 * 4  # 102,228,128 bytes of fp32 gradients


# Shape tables --------------------------------------------------------------------------------------

def test_resnet50_table_matches_torchvision():
    table = resnet50_param_shapes()
    assert len(table) == 161
    assert sum(param_numels(table)) == 25_557_032  # torchvision's documented parameter count
    assert len({name for name, _ in table}) == 161
    assert table[0] == ("conv1.weight", (64, 3, 7, 7))
    assert table[3] == ("layer1.0.conv1.weight", (64, 64, 1, 1))
    assert ("layer4.0.downsample.0.weight", (2048, 1024, 1, 1)) in table
    assert table[-2:] == [("fc.weight", (1000, 2048)), ("fc.bias", (1000,))]


def test_bert_large_table_matches_architecture():
    table = bert_large_param_shapes()
    assert len(table) == 391  # 5 embedding tensors + 24 layers x 16 + 2 pooler
    h, layers, ffn, vocab, positions, types = 1024, 24, 4096, 30522, 512, 2
    embeddings = (vocab + positions + types) * h + 2 * h  # three tables + LayerNorm
    per_layer = (4 * (h * h + h)  # q, k, v, attention output
                 + 2 * h  # attention LayerNorm
                 + (h * ffn + ffn) + (ffn * h + h)  # FFN in, out
                 + 2 * h)  # output LayerNorm
    pooler = h * h + h
    assert sum(param_numels(table)) == embeddings + layers * per_layer + pooler == 335_141_888
    assert table[0] == ("embeddings.word_embeddings.weight", (30522, 1024))
    assert table[5] == ("encoder.layer.0.attention.self.query.weight", (1024, 1024))
    assert table[-1] == ("pooler.dense.bias", (1024,))


def test_macs_tables():
    macs = resnet50_param_macs()
    assert len(macs) == 161
    names = [name for name, _ in resnet50_param_shapes()]
    assert macs[names.index("fc.weight")] == 1000 * 2048  # once per image, after pooling
    assert macs[names.index("layer4.2.conv2.weight")] == 7 * 7 * 512 * 512 * 9  # 115,605,504
    assert macs[names.index("conv1.weight")] == 112 * 112 * 64 * 3 * 49
    assert 4.0e9 < sum(macs) < 4.2e9  # ResNet-50's well-known ~4.1 GMACs per 224x224 image
    bert = bert_large_param_macs()
    assert bert[0] == 1024  # an embedding lookup reads one row per token, not the whole table
    assert bert[5] == 1024 * 1024


def test_meta_tensors_allocate_nothing():
    tensors = meta_tensors(bert_large_param_shapes())
    assert all(t.device.type == "meta" and t.dtype == torch.float32 for t in tensors)
    assert tensors[0].shape == (30522, 1024)


def test_lecture_bucket_counts_need_decimal_megabytes():
    # The lecture: "with the default 25 MB, 4 and 48 buckets". Torch's 25 MiB (with or without the 1 MiB
    # first bucket) reproduces ResNet-50's 4 but gives BERT-large 37 / 38. Only 25e6 bytes gives 48:
    # then a BERT layer (48 MiB) splits into two buckets, each a hair over 25 MB.
    resnet = meta_tensors(resnet50_param_shapes())
    bert = meta_tensors(bert_large_param_shapes())
    counts = {}
    for label, limits in (("25 MiB", [25 * MiB]), ("1 MiB + 25 MiB", [MiB, 25 * MiB]), ("25e6", [25 * 10**6])):
        counts[label] = (len(compute_bucket_assignment(resnet, limits)),
                         len(compute_bucket_assignment(bert, limits)))
    assert counts == {"25 MiB": (4, 37), "1 MiB + 25 MiB": (5, 38), "25e6": (4, 48)}
    assert LECTURE_BUCKET_CAP_BYTES == 25 * 10**6


# The α-β cost and the compute stream -------------------------------------------------------------------

def test_ring_allreduce_single_rank_is_free():
    assert ring_allreduce_time(10**9, 1, 1.0, 1.0) == 0.0


@pytest.mark.parametrize("nbytes, world_size, expected", [
    (10**9, 2, 2 * 1e-5 + 1e9 / 1e10),  # 2α + n/β = 0.00002 + 0.1
    (25 * 10**6, 16, 30 * 1e-5 + 30 / 16 * 25e6 / 1e10),  # 0.0003 + 0.0046875 = 0.0049875
    (0, 4, 6 * 1e-5),  # an empty message still pays 2(K-1) latencies
])
def test_ring_allreduce_formula(nbytes, world_size, expected):
    assert ring_allreduce_time(nbytes, world_size, 1e-5, 1e10) == pytest.approx(expected, rel=1e-12)


def test_backward_ready_times_proportional_to_size():
    # Sizes 1 and 3, backward 4 s, reverse order: tensor 1 (3 of 4 units) at 3 s, then tensor 0 at 4 s.
    assert backward_ready_times([1, 3], 4.0) == pytest.approx([4.0, 3.0])
    assert backward_ready_times([1, 3], 4.0, order=[0, 1]) == pytest.approx([1.0, 4.0])
    # Shapes count by elements: 6 and 4 elements, reverse order -> tensor 1 at 0.4 s, tensor 0 at 1 s.
    assert backward_ready_times([(2, 3), ("b", (4,))], 1.0) == pytest.approx([1.0, 0.4])


def test_backward_ready_times_rejects_a_bad_order():
    with pytest.raises(ValueError):
        backward_ready_times([1, 2, 3], 1.0, order=[0, 0, 1])


# The two-stream simulator ------------------------------------------------------------------------------

def test_later_bucket_ready_first_still_waits():
    # Bucket 1 is ready at t=1 but bucket 0 only at t=5: bucket 1 runs 6..7, after bucket 0's 5..6.
    tl = simulate_step([5.0, 1.0], [[0], [1]], [1.0, 1.0])
    assert tl.bucket_ready == [5.0, 1.0]
    assert tl.comm_start == [5.0, 6.0]
    assert tl.comm_end == [6.0, 7.0]
    assert tl.backward_end == 5.0
    assert tl.step_time == 7.0


def test_no_overlap_waits_for_backward():
    # Bucket 0 is ready at 1 but nothing may start before backward ends at 4: 4..6, then 6..7.
    tl = simulate_step([1.0, 4.0], [[0], [1]], [2.0, 1.0], overlap=False)
    assert tl.comm_start == [4.0, 6.0]
    assert tl.step_time == 7.0


def test_lecture_exercise_4():
    # p0..p4 = 10, 2, 8, 20, 4 MB (1-byte elements make MiB exact); cap 12 MB; reverse order:
    # p4 (4) + p3 (20) = 24 >= 12 -> bucket 0; p2 (8) + p1 (2) + p0 (10) = 20 >= 12 -> bucket 1.
    mb = [10, 2, 8, 20, 4]
    tensors = meta_tensors([m * MiB for m in mb], dtype=torch.uint8)
    buckets = compute_bucket_assignment(tensors, [12 * MiB])
    assert buckets == [[4, 3], [2, 1, 0]]
    ready_ms = [5.0, 4.0, 3.0, 2.0, 1.0]  # p4, p3, p2, p1, p0 at 1, 2, 3, 4, 5 ms

    def comm_ms(b):  # 0.5 ms + 0.1 ms per MB
        return 0.5 + 0.1 * sum(mb[i] for i in buckets[b])

    # Overlap: bucket 0 ready at 2 (p3), 2.9 ms -> 2..4.9; bucket 1 ready at 5, 2.5 ms -> 5..7.5.
    overlap = simulate_step(ready_ms, buckets, comm_ms)
    assert overlap.comm_start == pytest.approx([2.0, 5.0])
    assert overlap.step_time == pytest.approx(7.5)
    # No overlap: 5 + 2.9 + 2.5 = 10.4 ms.
    assert simulate_step(ready_ms, buckets, comm_ms, overlap=False).step_time == pytest.approx(10.4)
    # One bucket of 44 MB: 5 + 0.5 + 4.4 = 9.9 ms, with or without overlap.
    assert simulate_step(ready_ms, [[4, 3, 2, 1, 0]], [4.9]).step_time == pytest.approx(9.9)


def _random_case(rng: random.Random):
    n = rng.randint(1, 30)
    ready = [rng.uniform(0, 10) for _ in range(n)]
    indices = list(range(n))
    rng.shuffle(indices)
    cuts = sorted(rng.sample(range(1, n), rng.randint(0, n - 1))) if n > 1 else []
    buckets = [indices[a:b] for a, b in zip([0, *cuts], [*cuts, n])]
    durations = [rng.uniform(0, 3) for _ in buckets]
    return ready, buckets, durations


@pytest.mark.parametrize("seed", range(40))
def test_simulator_properties(seed):
    ready, buckets, durations = _random_case(random.Random(seed))
    backward_end = max(ready)
    with_overlap = simulate_step(ready, buckets, durations)
    without = simulate_step(ready, buckets, durations, overlap=False)
    # Without overlap the stream starts at the end of backward and never idles.
    assert without.step_time == pytest.approx(backward_end + sum(durations))
    assert with_overlap.step_time <= without.step_time + 1e-12
    for tl in (with_overlap, without):
        assert tl.step_time >= backward_end
        for b, bucket in enumerate(buckets):
            assert tl.comm_start[b] >= max(ready[i] for i in bucket)  # never reduce an unfinished bucket
            assert tl.comm_end[b] - tl.comm_start[b] == pytest.approx(durations[b])
            if b:
                assert tl.comm_start[b] >= tl.comm_end[b - 1]  # one bucket at a time, in index order


def test_ascii_timeline():
    # Backward 0..20 ms, bucket 0 at 20..30, bucket 1 at 30..40; 8 columns of 5 ms each.
    tl = simulate_step([0.020, 0.010], [[1], [0]], [0.010, 0.010], overlap=False)
    assert ascii_timeline(tl, width=8) == ("no overlap: step 40.0 ms\n"
                                           "  backward |████    |\n"
                                           "  comm     |    0011|")


# Whole models -------------------------------------------------------------------------------------------

def test_ddp_step_on_a_small_model():
    # 1000 and 3000 fp32 elements = 4000 and 12000 bytes; limit 10000 B: reverse order seals [1] then [0].
    # Backward 1 s by element count: tensor 1 at 0.75 s, tensor 0 at 1 s. K=2: 2α + n/β with α=0.01, β=1e4
    # -> bucket 0 costs 0.02 + 1.2 = 1.22 s (0.75..1.97), bucket 1 0.02 + 0.4 = 0.42 s (1.97..2.39).
    shapes, args = [(1000,), (3000,)], (1.0, 2, 0.01, 1e4, [10_000])
    tl = ddp_step(shapes, *args)
    assert tl.buckets == [[1], [0]]
    assert tl.comm_start == pytest.approx([0.75, 1.97])
    assert tl.step_time == pytest.approx(2.39)
    assert ddp_step(shapes, *args, overlap=False).step_time == pytest.approx(1.0 + 1.22 + 0.42)
    # If backward really produced tensor 0 first, bucket 0 (tensor 1) is ready only at 1 s and bucket 1,
    # ready at 0.25 s, waits for it: 1..2.22, 2.22..2.64 -- no better than no overlap.
    assert ddp_step(shapes, *args, order=[0, 1]).step_time == pytest.approx(2.64)
    # Costs 3:1 instead of 1:3: tensor 1 ready at 0.25 s -> 0.25..1.47, then bucket 1 1.47..1.89.
    assert ddp_step(shapes, *args, compute_costs=[3, 1]).step_time == pytest.approx(1.89)


def test_layer_permutation_and_true_backward_order():
    table = [("a.0.w", (1,)), ("a.0.b", (1,)), ("a.1.w", (1,)), ("head.w", (1,))]
    assert layer_permutation(table, "reverse") == [0, 1, 2, 3]
    assert layer_permutation(table, "reversed") == [3, 2, 0, 1]  # layers move, a.0 keeps w before b
    scrambled = layer_permutation(table, "scrambled", seed=3)
    assert scrambled == layer_permutation(table, "scrambled", seed=3)
    assert sorted(scrambled) == [0, 1, 2, 3] and abs(scrambled.index(0) - scrambled.index(1)) == 1
    # Registered as [3, 2, 0, 1]; backward still yields originals 3, 2, 1, 0, now at positions 0, 1, 3, 2.
    assert true_backward_order([3, 2, 0, 1]) == [0, 1, 3, 2]
    assert true_backward_order([0, 1, 2]) == [2, 1, 0]


# The lecture's experiments ------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def resnet():
    return resnet50_model()


@pytest.fixture(scope="module")
def bert():
    return bert_large_model()


def test_resnet50_overlap_beats_no_overlap(resnet):
    limits = [LECTURE_BUCKET_CAP_BYTES]
    no_overlap = resnet.step(16, limits, overlap=False).step_time
    overlap = resnet.step(16, limits).step_time
    # Calibration: 32.93 ms backward + 4 x 2·15·10 µs + 30/16 x 102,228,128 B / 10 GB/s = 32.93 + 1.2 +
    # 19.168 = 53.30 ms (the lecture's 53.3). Overlap hides all but the last bucket: lecture 37.8 ms, 41%.
    assert no_overlap == pytest.approx(53.30 * MS, abs=0.05 * MS)
    assert overlap == pytest.approx(37.8 * MS, abs=0.2 * MS)
    assert 0.35 < no_overlap / overlap - 1 < 0.47


def test_bucket_cap_extremes(resnet):
    sweep = bucket_cap_sweep(resnet)
    points = {p["cap_bytes"]: p for p in sweep["points"]}
    # Cap 0: 161 buckets, each paying 2·15·10 µs = 0.3 ms of latency (48.3 ms in all): worse than no overlap.
    assert points[0]["num_buckets"] == 161
    assert points[0]["step_s"] > sweep["no_overlap_s"]
    # One bucket: ready only when backward ends, so no overlap at all:
    # 32.93 + 0.3 + 30/16 x 102,228,128 / 1e10 s = 32.93 + 0.3 + 19.168 = 52.398 ms.
    one = points[None]
    assert one["num_buckets"] == 1
    assert one["step_s"] == pytest.approx(52.398 * MS, abs=0.01 * MS)
    whole = [RESNET50_BYTES]
    assert one["step_s"] == pytest.approx(resnet.step(16, whole, overlap=False).step_time)
    # The lecture's 25 MB beats both extremes.
    assert points[LECTURE_BUCKET_CAP_BYTES]["step_s"] < min(points[0]["step_s"], one["step_s"])


def test_small_first_bucket_helps(resnet):
    effect = first_bucket_effect(resnet)
    cap_only, small_first = effect["cap_only"], effect["small_first"]
    assert small_first["limits"] == [MiB, LECTURE_BUCKET_CAP_BYTES]
    # The first bucket now holds only fc (8.2 MB): it is ready almost at once (lecture: 0.02 vs 1.88 ms),
    # and the last, exposed bucket shrinks (lecture: 37.75 -> 35.04 ms).
    assert small_first["first_comm_start_s"] < 0.1 * MS < 1 * MS < cap_only["first_comm_start_s"]
    assert small_first["step_s"] < cap_only["step_s"]
    assert small_first["step_s"] == pytest.approx(35.04 * MS, abs=0.2 * MS)


def test_wrong_registration_order_hurts(bert):
    orders = registration_order_effect(bert)
    reverse, scrambled, reversed_ = (orders[m]["step_s"] for m in ("reverse", "scrambled", "reversed"))
    assert reverse < scrambled <= reversed_
    # Lecture: 270.3 / 425.7 / 444.7 ms. Fully reversed puts the embeddings in bucket 0, so every all-reduce
    # waits for the end of backward: the calibration point (178.6 ms + 266.1 ms of communication).
    assert reverse == pytest.approx(270.3 * MS, rel=0.02)
    assert reversed_ == pytest.approx(444.7 * MS, rel=0.002)
    assert orders["reversed"]["first_comm_start_s"] == pytest.approx(BERT_LARGE_BACKWARD_S)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_any_scrambled_order_hurts(bert, seed):
    orders = registration_order_effect(bert, seed=seed)
    assert orders["scrambled"]["step_s"] > orders["reverse"]["step_s"] * 1.2


def test_weak_scaling_slowdown_grows_with_world_size(resnet, bert):
    for model, lecture in ((resnet, 1.20), (bert, 2.26)):
        rows = weak_scaling(model)
        assert [r["world_size"] for r in rows] == [1, 2, 4, 8, 16, 32, 64, 128, 256]
        assert rows[0]["slowdown"] == 1.0
        slowdowns = [r["slowdown"] for r in rows]
        assert all(a < b for a, b in zip(slowdowns, slowdowns[1:]))
        assert slowdowns[-1] == pytest.approx(lecture, abs=0.03)


def test_skip_sync_step_time():
    # Lecture exercise 11: 100 ms synced, 50 ms not, sync every 4 -> (3 x 50 + 100) / 4 = 62.5 ms.
    assert skip_sync_step_time(100.0, 50.0, 4) == pytest.approx(62.5)
    assert skip_sync_step_time(100.0, 50.0, 1) == pytest.approx(100.0)
    with pytest.raises(ValueError):
        skip_sync_step_time(100.0, 50.0, 0)


def test_skip_sync_speedup_at_256_ranks(resnet, bert):
    for model, lecture in ((resnet, 0.17), (bert, 0.95)):
        result = skip_sync_speedup(model)
        # A skipped sync costs a single-rank iteration: forward (half a backward) + backward.
        assert result["nosync_s"] == pytest.approx(1.5 * model.backward_time)
        expected_average = (7 * result["nosync_s"] + result["sync_s"]) / 8
        assert result["average_s"] == pytest.approx(expected_average)
        assert result["speedup"] == pytest.approx(lecture, abs=0.02)


def test_constants_are_the_lectures():
    assert (ALPHA_S, BETA_BYTES_PER_S) == (10e-6, 10e9)
    assert 0 < RESNET50_BACKWARD_S < BERT_LARGE_BACKWARD_S
