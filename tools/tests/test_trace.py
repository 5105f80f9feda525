"""`make trace` (solutions/tracer.py, provided to students), run as a student runs it, on the reference."""

from __future__ import annotations

import json
import os
import shutil
import sys

import pytest
from conftest import copy_release, make, replace_stubs_with_solutions

from tools import on_student_side


@pytest.fixture(scope="module")
def tracer():
    with on_student_side():
        import tracer
        yield tracer


@pytest.fixture(scope="module")
def traced(tmp_path_factory):
    """One `make trace` in a fresh release holding the reference student files (about 15 s)."""
    release = copy_release(str(tmp_path_factory.mktemp("release") / "assignment"))
    replace_stubs_with_solutions(release)
    out = os.path.join(release, "my-trace")
    result = make(release, "trace", f"OUT={out}", timeout=240)
    assert result.returncode == 0, result.stdout + result.stderr
    with open(os.path.join(out, "timeline.json"), encoding="utf-8") as f:
        return out, result.stdout, json.load(f)


def test_make_trace_writes_valid_traces_and_a_picture(traced, tracer):
    out, stdout, data = traced
    for impl in tracer.IMPLS:
        for rank, run in enumerate(data["runs"][impl]):
            events = tracer.load_events(os.path.join(out, f"{impl}-rank{rank}.json"))
            names = [e.get("name", "") for e in events]
            wanted = ["grad ready p", "launch bucket ", "backward "] + (["wait bucket "] if impl == "minddp" else [])
            for mark in wanted:
                assert any(n.startswith(f"{tracer.LABEL}: {mark}") for n in names), (impl, rank, mark)
            assert any(n == "gloo:all_reduce" for n in names), "the profiler's own events are in the trace"
            assert len(run["iterations"]) == data["steps"]
            it = run["iterations"][-1]
            assert len(it["ready"]) == len(run["params"]) and len(it["done"]) == len(run["buckets"])
    with open(os.path.join(out, "timeline.png"), "rb") as f:
        png = f.read()
    assert png.startswith(b"\x89PNG\r\n\x1a\n") and len(png) > 20_000
    import matplotlib.image
    height, width, _ = matplotlib.image.imread(os.path.join(out, "timeline.png")).shape
    assert width > 1500 and height > 500
    assert "https://ui.perfetto.dev" in stdout and "chrome://tracing" in stdout, stdout


def test_the_reference_launches_buckets_in_index_order(traced, tracer):
    """Read back from the Chrome traces: every traced backward launches bucket 0, 1, ..., n-1."""
    out, stdout, data = traced
    for impl in tracer.IMPLS:
        for rank, run in enumerate(data["runs"][impl]):
            orders = tracer.launch_orders(tracer.load_events(os.path.join(out, f"{impl}-rank{rank}.json")))
            assert len(orders) == data["steps"], orders
            assert len(run["buckets"]) == 6  # the mlp, one bucket per layer
            assert all(order == list(range(6)) for order in orders.values()), (impl, rank, orders)
            assert not tracer.order_problems(orders, len(run["buckets"]))
    assert "NOT IN INDEX ORDER" not in stdout and stdout.count("index order, every iteration") == 4, stdout


def test_an_out_of_order_launch_is_detected(tracer):
    """The same functions on a synthetic trace: bucket 2 launched before bucket 1, and a bucket never launched."""
    def event(name, ts, dur=1.0):
        return {"ph": "X", "name": f"{tracer.LABEL}: {name}", "ts": ts, "dur": dur}

    events = [event("backward 3", 0, 100), event("launch bucket 0/3 (p5, p4; 0.01 MiB)", 10),
              event("launch bucket 2/3 (p1, p0; 0.01 MiB)", 20), event("launch bucket 1/3 (p3, p2; 0.01 MiB)", 30),
              event("backward 4", 200, 100), *(event(f"launch bucket {k}/3 (p0; 0.01 MiB)", 210 + k) for k in range(3)),
              event("backward 5", 400, 100), event("launch bucket 0/3 (p0; 0.01 MiB)", 410),
              event("launch bucket 1/3 (p0; 0.01 MiB)", 420), {"ph": "X", "name": "gloo:all_reduce", "ts": 15, "dur": 5}]
    orders = tracer.launch_orders(events)
    assert orders == {3: [0, 2, 1], 4: [0, 1, 2], 5: [0, 1]}
    problems = tracer.order_problems(orders, num_buckets=3)
    assert list(problems) == [3, 5], problems
    assert "[0, 2, 1]" in problems[3] and "expected [0, 1, 2]" in problems[5]


def test_without_matplotlib_the_traces_are_written_and_the_picture_explained(traced, tracer, monkeypatch, capsys,
                                                                           tmp_path):
    """The launcher's last step, on a copy of the run above: what it prints when matplotlib is missing."""
    recorded, _, data = traced
    out = str(tmp_path / "trace")
    shutil.copytree(recorded, out, ignore=shutil.ignore_patterns("timeline.png"))
    monkeypatch.setattr(tracer, "record", lambda *args, **kwargs: data)
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # `import matplotlib` raises ImportError
    assert tracer.main(["--out", out]) == 0
    printed = capsys.readouterr().out
    assert "no timeline.png: matplotlib is not installed" in printed and "requirements-trace.txt" in printed
    assert not os.path.exists(os.path.join(out, "timeline.png"))


def test_a_bucket_is_found_by_its_address_after_its_first_launch(tracer):
    """Finding a bucket on the backward thread must cost a lookup, not a comparison of gradients: the content
    (``identify``) is asked once per buffer; a buffer carrying two buckets in one iteration is asked every time."""
    import torch
    recorder = tracer.Recorder(["p0", "p1"])
    asked = []
    buffers = [torch.zeros(4), torch.zeros(4)]
    recorder.identify = lambda tensor: asked.append(tensor) or next(b for b, t in enumerate(buffers) if t is tensor)
    for _ in range(3):
        recorder.start_iteration()
        assert [recorder.bucket_of(buffers[1]), recorder.bucket_of(buffers[0])] == [1, 0]
    assert len(asked) == 2  # the first iteration only
    view = buffers[1][:2]  # another address (storage, offset, length): not bucket 1
    recorder.identify = lambda tensor: asked.append(tensor) or 0
    assert recorder.bucket_of(view) == 0 and len(asked) == 3
    scratch = torch.zeros(4)  # one tensor all-reduced for bucket 0, then for bucket 1
    contents = iter([0, 1, 0, 1])
    recorder.identify = lambda tensor: next(contents)
    for _ in range(2):
        recorder.start_iteration()
        assert [recorder.bucket_of(scratch), recorder.bucket_of(scratch)] == [0, 1]
