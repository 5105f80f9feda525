# GENERATED from solutions/tests/test_probe.py by tools/assign.py (staff: edit that file, then `make assignment`).
# Public tests: do not edit them by hand; the grader runs its own copy (and more tests).
"""Tests of the provided probe (probe.py: `make probe`, `make probe-buckets`): they pass from the start and
need none of your code. The probe's records of torch's collectives are checked against what the checks' own
scenario (checks.scenarios.train) records for the same sequence; what torch does is yours to observe with it."""

from __future__ import annotations

import re

import probe
import pytest
import torch

from checks.scenarios import bucket_cases

MiB = 2**20


def ops_of(report: probe.Report, impl: str = "torch", rank: int = 0) -> list[dict]:
    """The record of the construction and of each operation but a block's entry and exit, in order."""
    return [r for r in report.runs[impl][rank]["ops"] if r["op"] not in ("enter", "exit")]


def described(collectives: list[dict]) -> list[tuple]:
    return [(c["op"], tuple(map(tuple, c["sizes"])), tuple(c["dtypes"])) for c in collectives]


# -- DDP mode, on torch's DDP ---------------------------------------------------------------------------------

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
    for tensors, words in (("2/t", "at least 4"), ("5/t", "even number"), ("4KiB/x", "unknown layout '/x'")):
        with pytest.raises(probe.ProbeError, match=re.escape(words)):
            probe.probe_buckets(tensors)


def test_bucket_mode_makes_and_names_a_transposed_view():
    spec, = probe.parse_tensors("24:float16@cpu/t")
    tensor = spec.tensor()
    assert (tensor.shape, tensor.stride(), tensor.is_contiguous(), tensor.dtype) == ((12, 2), (1, 12), False, torch.float16)
    assert "12x2 transposed" in probe.probe_buckets("24:float16@cpu/t 8")
