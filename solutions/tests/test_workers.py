"""The worker pool every multi-process test and the grader stand on: it must never hang or lose a result."""

from __future__ import annotations

import time

import pytest
import torch

from minddp.workers import ScenarioError, decode, encode


def test_encoding_is_bit_exact():
    values = {
        "f32": torch.tensor([0.1, -0.0, float("inf"), float("nan")]),
        "bf16": torch.randn(3, 2).to(torch.bfloat16),
        "f64": torch.randn(2, 2, dtype=torch.float64),
        "i64": torch.arange(5),
        "empty": torch.empty(0, 3),
        "nested": [1, "two", None, {"t": torch.ones(2, dtype=torch.float16)}],
    }
    back = decode(encode(values))
    for key in ("f32", "bf16", "f64", "i64", "empty"):
        assert back[key].dtype == values[key].dtype and back[key].shape == values[key].shape
        assert torch.equal(back[key].view(-1).view(torch.uint8) if back[key].numel() else back[key],
                           values[key].view(-1).view(torch.uint8) if values[key].numel() else values[key])
    assert back["nested"][:3] == [1, "two", None]
    assert torch.equal(back["nested"][3]["t"], values["nested"][3]["t"])
    with pytest.raises(TypeError, match="cannot be sent"):
        encode({"bad": object()})


def test_results_come_back_per_rank(pool2):
    assert pool2.run("scenarios:echo", value=[1.5, "x"]) == [{"rank": 0, "value": [1.5, "x"]},
                                                             {"rank": 1, "value": [1.5, "x"]}]


def test_deadlock_is_detected_with_stacks_and_pool_recovers(pool2):
    starts = pool2.starts
    began = time.monotonic()
    with pytest.raises(ScenarioError) as error:
        pool2.run("scenarios:deadlock", deadline_s=3)
    assert time.monotonic() - began < 10, "a hang must be cut at the deadline"
    assert error.value.timed_out
    message = str(error.value)
    assert "rank(s) [0]" in message and "finished: [1]" in message
    assert "in deadlock" in message, "the stuck rank's Python stack names the function it was stuck in"
    assert pool2.run("scenarios:echo", value=1)[1] == {"rank": 1, "value": 1}
    assert pool2.starts == starts + 1, "the pool was restarted once"


def test_exception_on_one_rank_is_reported(pool2):
    with pytest.raises(ScenarioError, match="deliberate failure on rank 1") as error:
        pool2.run("scenarios:fail_on_rank", rank=1, deadline_s=10)
    assert not error.value.timed_out
    assert pool2.run("scenarios:echo", value=2)[0]["value"] == 2


def test_worker_that_exits_is_reported(pool2):
    with pytest.raises(ScenarioError, match="exited \\(code 3\\)"):
        pool2.run("scenarios:exit_abruptly", deadline_s=10)
    assert pool2.run("scenarios:echo", value=3)[0]["value"] == 3


def test_pool_survives_the_loss_of_its_fork_server(pool2):
    """Workers are forked by a server that imported torch once; code that kills it costs only a restart."""
    assert pool2.run("scenarios:kill_fork_server") == [0, 1], "the workers outlive their fork server"
    with pytest.raises(ScenarioError, match="its fork server was gone"):
        pool2.run("scenarios:exit_abruptly", deadline_s=10)  # the pool must now start new workers ...
    assert pool2.run("scenarios:echo", value=4)[1] == {"rank": 1, "value": 4}  # ... from a new server
