"""`make gradescope-sim` on a machine that was used: one that has an /autograder (a privileged run made it, or
anything else did), and after a run killed before its end (kill -9 of the tool, as a closed terminal does). Both
configurations must then simulate as on a fresh machine: the image's /autograder is its own, and the next run
ends what the dead one left running (root only; `make limits` runs it after its own simulations, so the docker
image and the privileged room's setup are reused).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

import pytest

from autograder import sim
from autograder.grade import processes_tagged
from grader.run import FALLBACK
from tools import REPO

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="gradescope-sim runs as root, as Gradescope does")
IMAGE = os.path.join(REPO, "dist", "gradescope-image")
TIMEOUT_S = 1800  # the tool's own guard: a simulation at half a CPU on a loaded machine


# `make gradescope-sim`'s command, on the stubs (they fail at once), at a whole CPU: the room is what is tested
# here, not Gradescope's limits (make limits' other runs), so its gradings take half the time.
COMMAND = [sys.executable, "-m", "autograder.sim", "--submission", "stubs", "--reuse-setup", "--cpus", "1"]


def simulate(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*COMMAND, *args], cwd=REPO, capture_output=True, text=True, timeout=TIMEOUT_S)


def grading_began(results: str) -> bool:
    """The grader's first act is its fallback results.json (any other is an earlier run's, which the image's
    folder keeps until the run lays out a fresh one)."""
    try:
        with open(results, encoding="utf-8") as f:
            return json.load(f).get("output") == FALLBACK
    except (OSError, ValueError):  # none yet
        return False


def kill_mid_grading(args: list[str], results: str) -> None:
    """Start a simulation and kill -9 its process group once its grader has begun: the grader, in a session of
    its own (privileged) or a container (docker), and what runc started, outlive it, as they do when a TA's
    terminal closes."""
    with tempfile.TemporaryFile() as said:  # a file, not a pipe: nothing the tool prints can block it
        proc = subprocess.Popen([*COMMAND, *args], cwd=REPO, stdout=said, stderr=subprocess.STDOUT,
                                start_new_session=True)
        try:
            while not grading_began(results) and proc.poll() is None:  # a condition, polled: no fixed wait
                time.sleep(0.1)
            if proc.poll() is not None:
                said.seek(0)
                raise AssertionError(f"the simulation ended before its grading began:\n{said.read().decode()[-3000:]}")
        finally:
            with contextlib.suppress(ProcessLookupError):  # (a group already gone: the failure above says why)
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def freeze(pids: list[int]) -> list[int]:
    """Stop the dead run's processes where they are: what it left must still be there when the next run starts
    (left alone, the stubs' grading would soon end by itself, and the clean-up would go untested)."""
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGSTOP)
    return pids


def container_processes(state_json: str) -> list[int]:
    """The processes of a container, from its cgroup (runc's state.json)."""
    with open(state_json, encoding="utf-8") as f:
        folders = set(json.load(f)["cgroup_paths"].values())
    pids = set()
    for folder in folders:
        with contextlib.suppress(OSError), open(os.path.join(folder, "cgroup.procs")) as f:
            pids.update(int(line) for line in f if line.strip())
    return sorted(pids)


def expect_stubs_graded(done: subprocess.CompletedProcess) -> None:
    assert done.returncode == 0 and "score 0.0" in done.stdout and "PROBLEM" not in done.stdout, \
        f"exit code {done.returncode}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"


def started(pid: int) -> tuple[int, str | None]:
    """(pid, when it started, or None if there is no such process): a process, not a pid that may be reused."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return pid, f.read().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return pid, None


def test_the_docker_image_has_its_own_autograder_whatever_this_machine_has():
    """An image made while this machine has an /autograder (of anything, here a file the test plants if it
    has none): the tool lays its /autograder out without refusing, and a container sees none of the host's."""
    from autograder.container import Image
    planted = None
    if not os.path.exists(sim.GRADESCOPE_ROOT):
        os.makedirs(sim.GRADESCOPE_ROOT)
        planted = sim.GRADESCOPE_ROOT
    sentinel = os.path.join(sim.GRADESCOPE_ROOT, "host-only-file")
    with open(sentinel, "w") as f:
        f.write("this machine's, not the image's\n")
    image = Image(tempfile.mkdtemp(prefix="minddp-test-image-", dir="/var/tmp"))
    try:
        archive = os.path.join(image.workdir, "autograder.zip")
        sim.assemble.build_zip(archive)
        assert sim.lay_out(image.path(sim.GRADESCOPE_ROOT), archive, reuse_setup=False, check_reach=False)
        with tempfile.TemporaryFile() as out:
            ran = image.run(["ls", "-A", sim.GRADESCOPE_ROOT], {"PATH": "/usr/bin:/bin"}, stdout=out)
            out.seek(0)
            seen = out.read().decode().split()
        assert ran.exit_code == 0 and sorted(seen) == ["results", "source", "submission"], seen
    finally:
        image.close()
        os.remove(sentinel)
        if planted:
            os.rmdir(planted)


def test_a_killed_docker_run_stops_nothing():
    """(`make limits` grades the stubs in the docker room here, after a killed run: not again before.)"""
    results = os.path.join(IMAGE, "disk", "image", "autograder", "results", "results.json")
    kill_mid_grading(["--config", "docker", "--image", IMAGE], results)
    state = os.path.join(IMAGE, "disk", "runc")
    containers = os.listdir(state)
    assert containers, "the killed run left no container: nothing was tested"
    with open(os.path.join(state, containers[0], "state.json"), encoding="utf-8") as f:
        init = started(json.load(f)["init_process_pid"])
    assert init[1] is not None, "the killed run's container did not outlive it: nothing was tested"
    assert freeze(container_processes(os.path.join(state, containers[0], "state.json")))
    expect_stubs_graded(simulate("--config", "docker", "--image", IMAGE, "--expect", "0"))
    assert started(init[0]) != init, f"the killed run's container (pid {init[0]}) still runs"
    namespaces = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    assert not [name for name in containers if name in namespaces]


def test_a_killed_privileged_run_stops_nothing():
    """In /autograder, as a TA's `make gradescope-sim CONFIG=privileged` (or the fallback where this machine's
    /autograder is not the tool's)."""
    root = sim.Privileged.default_root()
    kill_mid_grading(["--config", "privileged", "--root", root], os.path.join(root, "results", "results.json"))
    left = freeze(processes_tagged(sim.SIM_ROOT, root))
    assert left, "the killed run's grader did not outlive it: nothing was tested"
    done = simulate("--config", "privileged", "--root", root, "--expect", "0")
    expect_stubs_graded(done)
    assert "ending" in done.stderr and processes_tagged(sim.SIM_ROOT, root) == []
    with open(os.path.join(root, "results", "results.json"), encoding="utf-8") as f:
        assert json.load(f)["score"] == 0.0  # this run's results: the dead run's grader wrote none over them
