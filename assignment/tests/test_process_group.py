# GENERATED from solutions/tests/test_process_group.py by tools/assign.py (staff: edit that file, then `make assignment`).
# Public tests: do not edit them by hand; the grader runs its own copy (and more tests).
"""Part 1 — the process group (handout §1, lecture §1.3)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from minddp.process_group import (TORCHRUN_VARIABLES, DistEnvError, global_rank, node_and_local_rank,
                                  read_torchrun_env, torchrun_env)

TESTS_DIR = os.path.dirname(os.path.abspath(__file__))
GOOD = {"RANK": "5", "WORLD_SIZE": "8", "LOCAL_RANK": "1", "LOCAL_WORLD_SIZE": "4",
        "MASTER_ADDR": "10.0.0.1", "MASTER_PORT": "29500"}


def test_lecture_exercise_1_rank_layout():
    # 3 machines x 4 GPUs: global rank 7 is on machine 1 (ranks 4-7) with local rank 3.
    assert node_and_local_rank(7, 4) == (1, 3)
    assert global_rank(1, 3, 4) == 7


def test_layout_round_trips():
    for local_world_size in (1, 2, 4, 8):
        for rank in range(4 * local_world_size):
            node, local = node_and_local_rank(rank, local_world_size)
            assert 0 <= local < local_world_size
            assert global_rank(node, local, local_world_size) == rank


def test_read_good_env():
    env = read_torchrun_env(GOOD)
    assert (env.rank, env.world_size, env.local_rank, env.local_world_size) == (5, 8, 1, 4)
    assert (env.master_addr, env.master_port, env.node_rank, env.num_nodes) == ("10.0.0.1", 29500, 1, 2)


def test_torchrun_env_is_what_read_accepts():
    for rank in range(12):
        environ = torchrun_env(rank, 12, 4, "127.0.0.1", 1234)
        assert set(environ) == set(TORCHRUN_VARIABLES)
        assert all(isinstance(v, str) for v in environ.values()), "environment values are strings"
        env = read_torchrun_env(environ)
        assert (env.rank, env.node_rank, env.local_rank) == (rank, rank // 4, rank % 4)


@pytest.mark.parametrize("name", TORCHRUN_VARIABLES)
def test_missing_variable_is_named(name):
    environ = {k: v for k, v in GOOD.items() if k != name}
    with pytest.raises(DistEnvError, match=name):
        read_torchrun_env(environ)


@pytest.mark.parametrize("change, named", [
    ({"RANK": "two"}, "RANK"),
    ({"WORLD_SIZE": "0"}, "WORLD_SIZE"),
    ({"RANK": "-1"}, "RANK"),
    ({"RANK": "8"}, "RANK"),
    ({"LOCAL_RANK": "4"}, "LOCAL_RANK"),
    ({"LOCAL_RANK": "2"}, "LOCAL_RANK"),  # rank 5 with 4 per node is local rank 1
    ({"LOCAL_WORLD_SIZE": "3"}, "LOCAL_WORLD_SIZE"),
    ({"MASTER_PORT": "70000"}, "MASTER_PORT"),
    ({"MASTER_PORT": "http"}, "MASTER_PORT"),
])
def test_invalid_variable_is_named(change, named):
    with pytest.raises(DistEnvError, match=named):
        read_torchrun_env({**GOOD, **change})


def run_probe(launcher: list[str], tmp_path) -> list[dict]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([os.path.dirname(TESTS_DIR), TESTS_DIR])}
    done = subprocess.run([sys.executable, *launcher, os.path.join(TESTS_DIR, "launch_probe.py"), str(tmp_path)],
                          env=env, timeout=90, capture_output=True, text=True)
    # Judge by what the ranks reported, not by exit codes: gloo can abort at exit after the work is done.
    reports = [tmp_path / f"rank{r}.json" for r in range(2)]
    missing = [p.name for p in reports if not p.exists()]
    assert not missing, f"no report from {missing}; exit code {done.returncode}; output:\n{done.stderr[-3000:]}"
    return [json.loads(p.read_text()) for p in reports]


@pytest.mark.parametrize("launcher", [
    ["-m", "minddp.launch", "--nproc-per-node", "2"],
    ["-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2"],  # the real torchrun
], ids=["minddp.launch", "torchrun"])
def test_same_script_under_both_launchers(launcher, tmp_path):
    reports = run_probe(launcher, tmp_path)
    for rank, report in enumerate(reports):
        assert report == {"rank": rank, "world_size": 2, "local_rank": rank, "node_rank": 0,
                          "sum": 3.0, "dist_rank": rank}
