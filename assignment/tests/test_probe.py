# GENERATED from solutions/tests/test_probe.py by tools/assign.py (staff: edit that file, then `make assignment`).
# Public tests: do not edit them by hand; the grader runs its own copy (and more tests).
"""Tests of the provided probe (probe.py: `make probe`, `make probe-buckets`): they pass from the start and
need none of your code. Each DDP fact below is torch 2.13's, and the probe's records of torch's collectives
are checked against what the checks' own scenario (checks.scenarios.train) records for the same sequence."""

from __future__ import annotations

import math
import re

import probe
import pytest

from checks.scenarios import bucket_cases, bucket_limits

MiB = 2**20


@pytest.fixture(scope="module")
def pool2(runner):
    return runner.pool(2)


def ops_of(report: probe.Report, impl: str = "torch", rank: int = 0) -> list[dict]:
    """The record of the construction and of each operation but a block's entry and exit, in order."""
    return [r for r in report.runs[impl][rank]["ops"] if r["op"] not in ("enter", "exit")]


def described(collectives: list[dict]) -> list[tuple]:
    return [(c["op"], tuple(map(tuple, c["sizes"])), tuple(c["dtypes"])) for c in collectives]


# -- DDP mode, on torch's DDP ---------------------------------------------------------------------------------

ACCUMULATE = "nosync(F B) F B step zero nosync(F B) F B"  # 2 steps of 2 micro-batches, the first under no_sync


@pytest.fixture(scope="module")
def accumulation(pool2):
    """The probe and the checks' training scenario on the same sequence (convbn, 2 ranks)."""
    report = probe.probe_ddp(ACCUMULATE, model="convbn", pool=pool2)
    trained = pool2.run("checks.scenarios:train", impl="torch", model="convbn", steps=2, accumulate=2)
    return report, trained


def test_the_probe_sees_what_the_checks_record(accumulation):
    """Every forward's and backward's collectives, and the construction's, as checks.scenarios.train records
    them for 2 steps of 2 micro-batches (the first under no_sync)."""
    report, trained = accumulation
    for rank in range(2):
        records = ops_of(report, rank=rank)
        assert described(records[0]["collectives"]) == described(trained[rank]["construct"])
        seen = {kind: [described(r["collectives"]) for r in records if r["op"] == kind] for kind in ("F", "B")}
        recorded = {kind: [described(c) for s in trained[rank]["steps"] for c in s[name]]
                    for kind, name in (("F", "forward"), ("B", "backward"))}
        assert seen == recorded


def test_no_sync_is_read_in_forward_and_skips_the_next_buffer_broadcast(accumulation):
    report, _ = accumulation
    for rank in range(2):
        construct, f1, b1, f2, b2, step, zero, f3, b3, f4, b4 = ops_of(report, rank=rank)
        assert [c["op"] for c in f1["collectives"]] and all(c["op"] == "broadcast" for c in f1["collectives"]), \
            "a forward under no_sync() still broadcasts the buffers (the forward before it was synchronised)"
        assert b1["collectives"] == [], "the backward of a forward under no_sync() launches no all-reduce"
        assert f2["collectives"] == [], "the forward after a forward under no_sync() skips its buffer broadcast"
        assert [c["op"] for c in b2["collectives"]] == ["all_reduce"], "torch's first iteration: one bucket"
        assert f2["buckets"] == b2["buckets"] == f1["buckets"], "an iteration under no_sync() records no order"
        assert f3["buckets"] != f2["buckets"] and len(f3["collectives"]) > len(f1["collectives"]), \
            "the rebuild comes in the first forward with gradients after the first synchronised backward"
    lines = report.text().splitlines()
    assert any("-> .grad: each rank's own: accumulated locally, not averaged (all 10 parameters)" in line for line in lines)
    assert any("-> .grad: averaged over the ranks (all 10 parameters)" in line for line in lines)
    assert any("-> buffers the module ran with: each rank's own" in line for line in lines)
    assert any("-> buffers the module ran with: rank 0's on every rank" in line for line in lines)


def test_torch_rebuilds_its_buckets_in_the_next_forward_with_gradients(pool2):
    """After the first synchronised backward, torch's next forward with gradients broadcasts rank 0's ready order
    (before the buffers' broadcast, also under no_sync), and its buckets change there, once."""
    report = probe.probe_ddp("F B nosync(F B) F B F", model="convbn", kwargs_text="bucket_cap_mb=0.001", pool=pool2)
    construct, f1, b1, f2, b2, f3, b3, f4 = ops_of(report)
    assert f2["buckets"] != b1["buckets"] and f4["buckets"] == f3["buckets"] == f2["buckets"]
    assert len(b1["collectives"]) == 1 and len(b3["collectives"]) == len(f2["buckets"]) == 2
    rebuild = described(f2["collectives"])[:-len(f1["collectives"])]
    params = len([p for p in report.described["params"] if p[3]])
    assert rebuild == [("broadcast", ((params + 1,),), ("Int",)), ("broadcast", ((len(f2["buckets"]),),), ("Int",))], \
        "rank 0's order (and the number of buckets), then the bucket boundaries"
    assert described(f2["collectives"])[len(rebuild):] == described(f1["collectives"])
    assert described(f4["collectives"]) == described(f1["collectives"])
    assert "-> torch's buckets (changed): {p9 p8 p6 p7 p4} {p5 p2 p3 p0 p1}" in report.text()


def test_an_unused_parameter_without_the_flag_fails_the_next_forward(pool2):
    report = probe.probe_ddp("F-b B F-b B", model="branchy", pool=pool2)
    for rank in range(2):
        construct, f1, b1, f2 = ops_of(report, rank=rank)  # every rank stops at its error
        assert b1["collectives"] == [], "the single bucket never fills: nothing is reduced"
        assert f2["error"]["type"] == "RuntimeError"
        assert f2["error"]["message"].startswith("Expected to have finished reduction in the prior iteration")
    text = report.text()
    assert "!! every rank raised RuntimeError: Expected to have finished reduction" in text
    assert "(not run: stopped at an error before)" in text


def test_find_unused_parameters_adds_one_usage_all_reduce_and_never_rebuilds(pool2):
    report = probe.probe_ddp("F-b B F B F B", model="branchy", kwargs_text="find_unused_parameters=True bucket_cap_mb=0.001",
                             pool=pool2)
    sizes = [math.prod(shape) for _, shape, _, trainable in report.described["params"] if trainable]
    registration = bucket_cases([{"sizes": sizes, "dtypes": ["float32"] * len(sizes), "order": list(range(len(sizes))),
                                  "limits": bucket_limits(0.001)}], reference=True)[0]["value"]
    for rank in range(2):
        construct, *ops = ops_of(report, rank=rank)
        assert all(r["buckets"] == construct["buckets"] == registration[::-1] for r in ops), \
            "the registration-order buckets, the list reversed, from the start and for good"
        for backward in ops[1::2]:
            assert described(backward["collectives"])[:-1] == [
                ("all_reduce", ((sum(sizes[i] for i in bucket),),), ("Float",)) for bucket in construct["buckets"]], \
                "every bucket is reduced, also the one no rank used (p2 p3 in the first backward)"
            assert described(backward["collectives"])[-1] == ("all_reduce", ((len(sizes),),), ("Int",))
    assert "-> .grad: None (no gradient): p2 p3" in report.text()


# -- the language ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("ops, words, column", [
    ("F B nosync(F B", "is never closed", 5),
    ("F B )", "closes no block", 5),
    ("F ( B )", "'(' must follow nosync or nograd", 3),
    ("nosync F B", "must be followed by '('", 1),
    ("F Bx", "unknown operation: did you mean B?", 3),
    ("F nosnc(F)", "did you mean nosync(?", 3),
    ("B F", "needs a forward before it", 1),
    ("F F-b", "model convbn has no branch b", 3),
])
def test_bad_operations_are_named_with_their_column(ops, words, column):
    with pytest.raises(probe.ProbeError) as error:
        probe.parse_ops(ops, "convbn", 2)
    message = str(error.value)
    assert words in message and f"column {column})" in message, message
    shown, caret = message.splitlines()[1:3]
    assert shown == f"    {ops}" and caret.index("^") == 4 + column - 1, "a caret under the token"
    assert "Operations: F (forward)" in message


def test_operations_parse_into_blocks():
    ops = probe.parse_ops("f b nograd(F) no_sync(nosync(F-b@1) F) eval step", "branchy", 2)
    assert [(o.kind, o.label) for o in ops if o.kind not in ("enter", "exit")] == [
        ("F", "F"), ("B", "B"), ("F", "nograd(F"), ("F", "nosync(nosync(F-b@1"), ("F", "nosync(F"),
        ("eval", "eval"), ("step", "step")]
    assert ops[7].arg == [1] and ops[5].kind == "enter"
    with pytest.raises(probe.ProbeError, match="only ranks 0-1"):
        probe.parse_ops("F-b@2", "branchy", 2)
    with pytest.raises(probe.ProbeError, match="OPS is empty"):
        probe.parse_ops("  ", "mlp", 2)


@pytest.mark.parametrize("kwargs, words", [
    ("bucket_cap=1", "unknown argument 'bucket_cap'"),
    ("bucket_cap_mb=x1", "is not a Python value"),
    ("find_unused_parameters", "write key=value pairs"),
    ("process_group=[[0], [0, 1]]", "must split the ranks 0-1"),
])
def test_bad_kwargs_say_what_to_write(kwargs, words):
    with pytest.raises(probe.ProbeError, match=re.escape(words)):
        probe.parse_kwargs(kwargs, 2)


def test_kwargs_are_python_values():
    assert probe.parse_kwargs("bucket_cap_mb=0.5, broadcast_buffers=false bucket_cap_mb_list=[1, 2.5]", 2) == \
        {"bucket_cap_mb": 0.5, "broadcast_buffers": False, "bucket_cap_mb_list": [1, 2.5]}


# -- bucket mode ------------------------------------------------------------------------------------------------

BUCKET_CASES = [  # (TENSORS, LIMITS, ORDER) and the same case as the checks' bucket_cases write it
    ("10MiB 2MiB 8MiB 20MiB 4MiB", "12MiB", "",  # the lecture's exercise
     {"sizes": [10 * MiB // 4, 2 * MiB // 4, 2 * MiB, 5 * MiB, MiB], "dtypes": ["float32"] * 5, "limits": [12 * MiB]}),
    ("10MiB 2MiB 8MiB:float16 20MiB 4MiB:bfloat16", "6MiB", "",
     {"sizes": [10 * MiB // 4, 2 * MiB // 4, 4 * MiB, 5 * MiB, 2 * MiB],
      "dtypes": ["float32", "float32", "float16", "float32", "bfloat16"], "limits": [6 * MiB]}),
    ("1000 3000:float16 2000 500:float64 40KB@cpu", "4KiB 8KiB", "",
     {"sizes": [1000, 3000, 2000, 500, 10_000], "dtypes": ["float32", "float16", "float32", "float64", "float32"],
      "devices": ["meta"] * 4 + ["cpu"], "limits": [4096, 8192]}),
    ("1KiB*4 3KiB", "2KiB", "1 3 0 4 2",
     {"sizes": [256] * 4 + [768], "dtypes": ["float32"] * 5, "limits": [2048], "order": [1, 3, 0, 4, 2]}),
]


@pytest.mark.parametrize("tensors, limits, order, case", BUCKET_CASES)
def test_bucket_mode_is_torchs_assignment(tensors, limits, order, case):
    expected = bucket_cases([case], reference=True)[0]["value"]
    text = probe.probe_buckets(tensors, limits, order)
    printed = [line.split()[2:] for line in text.splitlines() if line.startswith("  bucket ")]
    assert [[int(t[1:]) for t in row if re.fullmatch(r"t\d+", t)] for row in printed] == expected, text


def test_bucket_mode_defaults_and_errors():
    assert "limits [1 MiB, 25 MiB] (DDP's defaults)" in probe.probe_buckets("4MiB 4MiB")
    for tensors, words in (("3B", "not a whole number of float32 elements"), ("1MiB:int7", "unknown dtype"),
                           ("1MiB@gpu", "device 'gpu'"), ("12XB", "cannot read '12XB' as a size"), ("", "empty")):
        with pytest.raises(probe.ProbeError, match=re.escape(words)):
            probe.probe_buckets(tensors)
    with pytest.raises(probe.ProbeError, match="each of the 2 tensors"):
        probe.probe_buckets("1 2", order="1 1")
