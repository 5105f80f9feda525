"""`make gradescope-sim` on a machine that was used, as `make limits` walks it (root only): Gradescope's limits,
each configuration graded right after a run of it was killed mid-grading (kill -9 of the tool, as a closed
terminal does), the docker one on a machine that now has an /autograder (the privileged run made it, or anything
else did). Each must grade as on a fresh machine: the image's /autograder is its own, and a run ends what a dead
one left running. The killed runs cost little: they stop where the grading starts (the privileged one after its
setup.sh, which the graded run then reuses).
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


SIM = [sys.executable, "-m", "autograder.sim"]  # `make gradescope-sim`'s command


def simulate(*args: str) -> subprocess.CompletedProcess:
    """A simulation at Gradescope's limits (half a CPU, 768 MB), its report shown (make limits' figures)."""
    done = subprocess.run([*SIM, *args], cwd=REPO, capture_output=True, text=True, timeout=TIMEOUT_S)
    print(done.stdout[-2000:])
    return done


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
    if os.path.exists(results):  # (the privileged room's, from an earlier run: the image's is mounted by the run)
        os.remove(results)
    with tempfile.TemporaryFile() as said:  # a file, not a pipe: nothing the tool prints can block it
        proc = subprocess.Popen([*SIM, "--submission", "stubs", *args], cwd=REPO, stdout=said,
                                stderr=subprocess.STDOUT, start_new_session=True)
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


def expect_full_marks(done: subprocess.CompletedProcess) -> None:
    """The solutions graded at Gradescope's limits: every point (--expect full), nothing wrong."""
    assert done.returncode == 0 and "PROBLEM" not in done.stdout, \
        f"exit code {done.returncode}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"


def started(pid: int) -> tuple[int, str | None]:
    """(pid, when it started, or None if there is no such process): a process, not a pid that may be reused."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return pid, f.read().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return pid, None


def seen_in_a_container(image, path: str) -> list[str]:
    with tempfile.TemporaryFile() as out:
        ran = image.run(["ls", "-A", path], {"PATH": "/usr/bin:/bin"}, stdout=out)
        out.seek(0)
        assert ran.exit_code == 0, out.read().decode()
        out.seek(0)
        return sorted(out.read().decode().split())


def test_the_docker_image_has_its_own_autograder_whatever_this_machine_has():
    """An image made while this machine has an /autograder (of anything, here a file the test plants if it
    has none): the tool lays its /autograder out without refusing, and a container sees none of the host's;
    nor does it once reopened, when its /autograder was made before this machine had one (not hidden then)."""
    from autograder.container import Image
    planted = None
    if not os.path.exists(sim.GRADESCOPE_ROOT):
        os.makedirs(sim.GRADESCOPE_ROOT)
        planted = sim.GRADESCOPE_ROOT
    sentinel = os.path.join(sim.GRADESCOPE_ROOT, "host-only-file")
    with open(sentinel, "w") as f:
        f.write("this machine's, not the image's\n")
    workdir = tempfile.mkdtemp(prefix="minddp-test-image-", dir="/var/tmp")
    image = Image(workdir)
    try:
        archive = os.path.join(image.workdir, "autograder.zip")
        sim.assemble.build_zip(archive)
        assert sim.lay_out(image.path(sim.GRADESCOPE_ROOT), archive, reuse_setup=False, check_reach=False)
        assert seen_in_a_container(image, sim.GRADESCOPE_ROOT) == ["results", "source", "submission"]
        os.removexattr(image.path(sim.GRADESCOPE_ROOT), "trusted.overlay.opaque")  # as an image made before
        assert "host-only-file" in seen_in_a_container(image, sim.GRADESCOPE_ROOT)  # (the test can fail)
        image.close(keep=True)
        image = Image(workdir)  # the next run's
        assert seen_in_a_container(image, sim.GRADESCOPE_ROOT) == ["results", "source", "submission"]
    finally:
        image.close()
        os.remove(sentinel)
        if planted:
            os.rmdir(planted)


def walking_solutions(folder: str) -> str:
    """The solutions whose answers.py walks everything its worker can see, as the student's uid, and fails on any
    readable root-only file (the self-test's case jail-walk): full marks only in a room that hides them."""
    return subprocess.run([sys.executable, "-m", "autograder.selftest.runner", "write", "--cases", "jail-walk",
                           "--into", os.path.join(folder, "walk")], cwd=REPO, check=True, capture_output=True,
                          text=True).stdout.strip()


def test_privileged_after_a_killed_run(tmp_path):
    """In /autograder, as a TA's `make gradescope-sim CONFIG=privileged` (or the fallback where this machine's
    /autograder is not the tool's): setup.sh afresh, a grading of the stubs killed once begun, then the
    solutions at Gradescope's limits (their answers.py walking the jail: nothing root-only may be readable)."""
    root = sim.Privileged.default_root()
    kill_mid_grading(["--config", "privileged", "--root", root], os.path.join(root, "results", "results.json"))
    left = freeze(processes_tagged(sim.SIM_ROOT, root))
    assert left, "the killed run's grader did not outlive it: nothing was tested"
    groups = sim.limits_cgroups(left)
    assert groups, "the killed run's grader was in no cgroup of Gradescope's limits"
    done = simulate("--config", "privileged", "--root", root, "--reuse-setup", "--submission",
                    walking_solutions(str(tmp_path)), "--expect", "full")
    expect_full_marks(done)
    assert "ending" in done.stderr and processes_tagged(sim.SIM_ROOT, root) == []
    assert not [group for group in groups if os.path.exists(group)]  # nor its cgroups


def test_docker_after_a_killed_run(tmp_path):
    """The image of `make docker` (kept in dist/gradescope-image), this machine now having an /autograder: a
    grading of the stubs killed once begun, then the solutions at Gradescope's limits (their answers.py walking
    the jail)."""
    results = os.path.join(IMAGE, "disk", "image", "autograder", "results", "results.json")
    kill_mid_grading(["--config", "docker", "--image", IMAGE, "--reuse-setup"], results)
    state = os.path.join(IMAGE, "disk", "runc")
    containers = os.listdir(state)
    assert containers, "the killed run left no container: nothing was tested"
    with open(os.path.join(state, containers[0], "state.json"), encoding="utf-8") as f:
        init = started(json.load(f)["init_process_pid"])
    assert init[1] is not None, "the killed run's container did not outlive it: nothing was tested"
    assert freeze(container_processes(os.path.join(state, containers[0], "state.json")))
    expect_full_marks(simulate("--config", "docker", "--image", IMAGE, "--reuse-setup", "--submission",
                               walking_solutions(str(tmp_path)), "--expect", "full"))
    assert started(init[0]) != init, f"the killed run's container (pid {init[0]}) still runs"
    namespaces = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    assert not [name for name in containers if name in namespaces]
