# GENERATED from solutions/tests/test_provided.py by tools/assign.py (staff: edit that file, then `make assignment`).
# Public tests: do not edit them by hand; the grader runs its own copy (and more tests).
"""Tests of the provided code (the worker pool, the shape tables, the model's constants): they pass from
the start, and tell you the harness works on your machine. They are not graded."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.distributed as dist

from checks.pool import STACK_END, ScenarioError, decode, encode
from minddp.bucketing import MiB, bucket_size_limits
from minddp.model_shapes import (
    bert_large_param_macs,
    bert_large_param_shapes,
    meta_tensors,
    param_numels,
    resnet50_param_macs,
    resnet50_param_shapes,
)
from minddp.timeline import (
    ALPHA_S,
    BERT_LARGE_BACKWARD_S,
    BETA_BYTES_PER_S,
    LECTURE_BUCKET_CAP_BYTES,
    RESNET50_BACKWARD_S,
    StepTimeline,
    ascii_timeline,
    backward_ready_times,
    layer_permutation,
)

# -- the worker pool ---------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def pool2(runner):
    return runner.pool(2)


def test_encoding_is_bit_exact():
    values = {"f32": torch.tensor([0.1, -0.0, float("inf"), float("nan")]), "bf16": torch.randn(3, 2).to(torch.bfloat16),
              "f64": torch.randn(2, 2, dtype=torch.float64), "i64": torch.arange(5), "empty": torch.empty(0, 3),
              "nested": [1, "two", None, {"t": torch.ones(2, dtype=torch.float16)}]}
    back = decode(encode(values))
    for key in ("f32", "f64", "i64", "empty"):
        assert back[key].dtype == values[key].numpy().dtype and back[key].shape == tuple(values[key].shape)
        assert back[key].tobytes() == values[key].numpy().tobytes()
    assert np.array_equal(back["bf16"], values["bf16"].float().numpy())  # widened to float32, exactly
    assert back["nested"][:3] == [1, "two", None] and back["nested"][3]["t"].dtype == np.float16
    with pytest.raises(TypeError, match="cannot be sent"):
        encode({"bad": object()})


def test_results_come_back_per_rank(pool2):
    assert pool2.run("checks.scenarios:echo", value=[1.5, "x"]) == [{"rank": 0, "value": [1.5, "x"]},
                                                                     {"rank": 1, "value": [1.5, "x"]}]


def test_deadlock_is_detected_with_stacks_and_pool_recovers(pool2):
    pool2.run("checks.scenarios:echo", value=0)  # started (this test may run alone)
    starts = pool2.starts
    with pytest.raises(ScenarioError) as error:  # the scenario never ends: only the deadline can end the run
        pool2.run("checks.scenarios:deadlock", deadline_s=3)
    assert [f.kind for f in error.value.failures] == ["timeout"] and error.value.finished == [1]
    assert error.value.deadline_s == 3
    where = error.value.failures[0].where
    assert "in deadlock" in where, "the stuck rank's stack names where it was stuck"
    assert STACK_END in where, "the whole stack, down to the main thread's outermost frame"
    assert pool2.run("checks.scenarios:echo", value=1)[1] == {"rank": 1, "value": 1}
    assert pool2.starts == starts + 1, "the pool was restarted once"


def test_exception_on_one_rank_is_reported(pool2):
    with pytest.raises(ScenarioError) as error:
        pool2.run("checks.scenarios:fail_on_rank", rank=1, deadline_s=10)
    failure = error.value.failures[0]
    assert (failure.rank, failure.kind, failure.error) == (1, "raised", "ValueError")
    assert "deliberate failure on rank 1" in failure.message and "fail_on_rank" in failure.where
    assert pool2.run("checks.scenarios:echo", value=2)[0]["value"] == 2


def test_worker_that_exits_is_reported(pool2):
    with pytest.raises(ScenarioError) as error:
        pool2.run("checks.scenarios:exit_abruptly", deadline_s=10)
    assert {(f.kind, f.code) for f in error.value.failures} == {("exited", 3)}
    assert pool2.run("checks.scenarios:echo", value=3)[0]["value"] == 3


# -- the test backend "late" (checks/late_backend.py) -----------------------------------------------------

@pytest.mark.parametrize("in_order", [True, False])
def test_late_backend_completes_a_work_only_when_it_is_waited_on(pool2, in_order):
    for seen in pool2.run("checks.scenarios:late_order", in_order=in_order):
        assert seen["after waiting b"] == {"a": "reduced" if in_order else "as launched", "b": True, "c": True,
                                           "chained done": False}, \
            "waiting on b completes b (in order: and a, launched before it); c still holds what it held at launch"
        assert seen["a"] and seen["chained"], "their values are gloo's, bit for bit"
        assert seen["completed at the end of backward, in this order"] == ([0, 1, 2] if in_order else [2, 1, 0])


@pytest.mark.parametrize("model, ddp_kwargs, hook", [("mlp", {"bucket_cap_mb": 0}, None),
                                                     ("mlp", {"bucket_cap_mb": 1}, "record"),
                                                     ("mlp", {"bucket_cap_mb": 1}, "fp16"),
                                                     ("convbn", {"bucket_cap_mb": 0.01}, None)])
def test_torch_ddp_trains_through_the_late_backend_as_through_gloo(pool2, model, ddp_kwargs, hook):
    kwargs = {"impl": "torch", "model": model, "steps": 3, "ddp_kwargs": ddp_kwargs, "hook": hook}
    gloo = pool2.run("checks.scenarios:train", backend="gloo", **kwargs)
    keys = ("forward", "backward", "buffers", "grads", "params", "buckets")
    for backend in ("in order", "late"):
        late = pool2.run("checks.scenarios:train", backend=backend, **kwargs)
        for mine, theirs in zip(late, gloo, strict=True):
            assert [{k: s[k] for k in keys} for s in mine["steps"]] == [{k: s[k] for k in keys} for s in theirs["steps"]]
            assert mine["construct"] == theirs["construct"] and mine["param_sums"] == theirs["param_sums"]


# -- provided code of the homework -------------------------------------------------------------------------

def test_bucket_size_limits_mirror_torch_arguments():
    assert bucket_size_limits() == [1 * MiB, 25 * MiB]
    assert bucket_size_limits(bucket_cap_mb=4) == [4 * MiB]
    assert bucket_size_limits(bucket_cap_mb_list=[1, 8]) == [1 * MiB, 8 * MiB]
    with pytest.raises(ValueError, match="not both"):
        bucket_size_limits(bucket_cap_mb=1, bucket_cap_mb_list=[1, 2])


def test_resnet50_table_matches_torchvision():
    table = resnet50_param_shapes()
    assert len(table) == 161 and len({name for name, _ in table}) == 161
    assert sum(param_numels(table)) == 25_557_032  # torchvision's documented parameter count
    assert table[0] == ("conv1.weight", (64, 3, 7, 7))
    assert table[3] == ("layer1.0.conv1.weight", (64, 64, 1, 1))
    assert ("layer4.0.downsample.0.weight", (2048, 1024, 1, 1)) in table
    assert table[-2:] == [("fc.weight", (1000, 2048)), ("fc.bias", (1000,))]


def test_bert_large_table_matches_architecture():
    table = bert_large_param_shapes()
    assert len(table) == 391  # 5 embedding tensors + 24 layers x 16 + 2 pooler
    h, layers, ffn, vocab, positions, types = 1024, 24, 4096, 30522, 512, 2
    embeddings = (vocab + positions + types) * h + 2 * h  # three tables + LayerNorm
    per_layer = 4 * (h * h + h) + 2 * h + (h * ffn + ffn) + (ffn * h + h) + 2 * h
    assert sum(param_numels(table)) == embeddings + layers * per_layer + h * h + h == 335_141_888
    assert table[0] == ("embeddings.word_embeddings.weight", (30522, 1024))
    assert table[5] == ("encoder.layer.0.attention.self.query.weight", (1024, 1024))
    assert table[-1] == ("pooler.dense.bias", (1024,))


def test_macs_tables():
    macs, names = resnet50_param_macs(), [name for name, _ in resnet50_param_shapes()]
    assert len(macs) == 161
    assert macs[names.index("fc.weight")] == 1000 * 2048  # once per image, after pooling
    assert macs[names.index("layer4.2.conv2.weight")] == 7 * 7 * 512 * 512 * 9
    assert macs[names.index("conv1.weight")] == 112 * 112 * 64 * 3 * 49
    assert 4.0e9 < sum(macs) < 4.2e9  # ResNet-50's well-known ~4.1 GMACs per 224x224 image
    bert = bert_large_param_macs()
    assert bert[0] == 1024 and bert[5] == 1024 * 1024  # an embedding lookup reads one row per token


def test_meta_tensors_allocate_nothing():
    tensors = meta_tensors(bert_large_param_shapes())
    assert all(t.device.type == "meta" and t.dtype == torch.float32 for t in tensors)
    assert tensors[0].shape == (30522, 1024)


def test_lecture_bucket_counts_need_decimal_megabytes():
    """The lecture: "with the default 25 MB, 4 and 48 buckets". 25 MiB (with or without torch's 1 MiB first
    bucket) reproduces ResNet-50's 4 but gives BERT-large 37 / 38; only 25e6 bytes gives 48 (torch's
    own assignment, in reverse order, as DDP uses it)."""
    def count(shapes, limits):
        tensors = meta_tensors(shapes)
        order = list(range(len(tensors) - 1, -1, -1))
        return len(dist._compute_bucket_assignment_by_size([tensors[i] for i in order], limits, [], order)[0])

    counts = {label: (count(resnet50_param_shapes(), limits), count(bert_large_param_shapes(), limits))
              for label, limits in (("25 MiB", [25 * MiB]), ("1 MiB + 25 MiB", [MiB, 25 * MiB]), ("25e6", [25 * 10**6]))}
    assert counts == {"25 MiB": (4, 37), "1 MiB + 25 MiB": (5, 38), "25e6": (4, 48)}
    assert LECTURE_BUCKET_CAP_BYTES == 25 * 10**6


def test_constants_are_the_lectures():
    assert (ALPHA_S, BETA_BYTES_PER_S) == (10e-6, 10e9)
    assert 0 < RESNET50_BACKWARD_S < BERT_LARGE_BACKWARD_S


def test_backward_ready_times_rejects_a_bad_order():
    with pytest.raises(ValueError):
        backward_ready_times([1, 2, 3], 1.0, order=[0, 0, 1])


def test_ascii_timeline():
    # Backward 0..20 ms, bucket 0 at 20..30, bucket 1 at 30..40; 8 columns of 5 ms each.
    tl = StepTimeline(buckets=[[1], [0]], bucket_ready=[0.010, 0.020], comm_start=[0.020, 0.030],
                      comm_end=[0.030, 0.040], backward_end=0.020, overlap=False)
    assert ascii_timeline(tl, width=8) == ("no overlap: step 40.0 ms\n"
                                           "  backward |████    |\n"
                                           "  comm     |    0011|")


def test_layer_permutation():
    table = [("a.0.w", (1,)), ("a.0.b", (1,)), ("a.1.w", (1,)), ("head.w", (1,))]
    assert layer_permutation(table, "reverse") == [0, 1, 2, 3]
    assert layer_permutation(table, "reversed") == [3, 2, 0, 1]  # layers move, a.0 keeps w before b
    scrambled = layer_permutation(table, "scrambled", seed=3)
    assert scrambled == layer_permutation(table, "scrambled", seed=3)
    assert sorted(scrambled) == [0, 1, 2, 3] and abs(scrambled.index(0) - scrambled.index(1)) == 1
