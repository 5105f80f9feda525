"""Staff only (not in the release: tools/release.py STAFF_ONLY): what `make probe` shows of torch 2.13's DDP, as
facts. The handout asks students to observe these with the probe (R2, W4, W6, C8, Bonus A and B), so they stay here,
where they prove the probe shows them."""

from __future__ import annotations

import math

import probe
from test_probe import described, ops_of

from checks.scenarios import bucket_cases, bucket_limits


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


def test_memory_layout_makes_no_group_of_its_own():
    """R2: a tensor whose memory order is not its shape's shares a bucket with contiguous ones (the bucket copies
    each gradient into its slot; only dtype and device decide the flat buffer)."""
    text = probe.probe_buckets("1KiB 1KiB/t 1KiB", "1MiB")
    rows = [line.split()[2:] for line in text.splitlines() if line.startswith("  bucket ")]
    assert [[t for t in row if t.startswith("t")] for row in rows] == [["t2", "t1", "t0"]], text
