"""The one way to run a grading: Gradescope's entry point, run_autograder, on a folder laid out like /autograder.

    python -m autograder.grade [--submission PATH] [--keep DIR] [--expect SCORE]   # `make grade [SUBMISSION=...]`

Every front door grades through ``grade()`` below and keeps only what is its own:

    make grade          this file's command line: the folder built from solutions/ now, results.json into dist/
    make selftest       selftest/runner.py: a folder per case (a hostile or mutated submission), its expectation
    make gradescope-sim sim.py: the folder setup.sh prepared, a cgroup of Gradescope's limits, CPU hogs
    make regrade        tools/regrade/: a folder per exported submission, a CSV

A folder ("ROOT") holds ``source/`` (assemble.py builds it: the zip's content), ``submission/`` and
``results/``, as on Gradescope. A *room* is where run_autograder runs: ``Here`` (this machine, as the user
running the tool, optionally in a cgroup) or ``InContainer`` (a fresh container with Docker's defaults, as
on Gradescope; container.py). Either way the grading must leave nothing running and, when asked, nothing in
its temporary folder: what it left is a problem of the grading, reported beside its results.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
import zipfile
from dataclasses import dataclass, field

from autograder.limits import Cgroup
from tools import REPO, student_side

TIMEOUT_S = 1800.0  # the runner's own limit per grading: only a grader bug can reach it
TAG = "MINDDP_GRADING_TAG"  # set in each grading's environment: finds the processes it left behind
SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"  # Gradescope's: the system python3


@dataclass(frozen=True)
class Limits:
    """Each grading inside a cgroup of ``cpus`` CPUs (and ``memory_mb``, if given); None: no cgroup."""
    cpus: float | None = None
    memory_mb: int | None = None


@dataclass
class Graded:
    results: dict | None
    seconds: float
    returncode: int | None
    log: str  # the grader's stdout and stderr (tail; empty when it went to the terminal)
    problems: list = field(default_factory=list)  # what went wrong with the grading itself
    measured: dict = field(default_factory=dict)  # the cgroup's figures: cpu_s, peak_mb, process_peak_mb, oom_kills


# -- laying out ROOT -------------------------------------------------------------------------------------------

def unpack_like_gradescope(archive: str, target: str) -> None:
    """Gradescope extracts an uploaded .zip into /autograder/submission; anything else lands there as is."""
    os.makedirs(target)
    if not zipfile.is_zipfile(archive):
        shutil.copyfile(archive, os.path.join(target, os.path.basename(archive)))
        return
    with zipfile.ZipFile(archive) as zf:
        for info in zf.infolist():
            path = os.path.realpath(os.path.join(target, info.filename))
            if path.startswith(os.path.realpath(target) + os.sep):
                zf.extract(info, target)


def place_submission(submission: str, target: str) -> str:
    """A submission into ``target`` as Gradescope hands it to the autograder: a folder as it is, an uploaded
    zip extracted."""
    if os.path.isdir(submission):
        shutil.copytree(submission, target, symlinks=True)  # as uploaded: links stay links (the grader refuses them)
    else:
        unpack_like_gradescope(submission, target)
    return target


def lay_out(root: str, source: str) -> str:
    """ROOT/source: a fresh copy of ``source`` (a hostile submission may litter it), and an empty results/;
    the caller places ROOT/submission."""
    shutil.copytree(source, os.path.join(root, "source"), symlinks=True)
    os.makedirs(os.path.join(root, "results"), exist_ok=True)
    return root


# -- rooms: where run_autograder runs ------------------------------------------------------------------------------

class Here:
    """This machine, as the user running the tool (root: every capability, as a VM would give); ROOT is the
    same path for the grader and for us. With limits, inside a cgroup made for this grading."""

    name = "privileged"

    def run(self, command: list[str], env: dict[str, str], cwd: str, log, limits: Limits, timeout_s: float):
        """(exit code, problems, processes left, measured)."""
        tag = uuid.uuid4().hex
        problems: list[str] = []
        measured: dict = {}
        group = Cgroup(limits.cpus, limits.memory_mb) if limits.cpus or limits.memory_mb else None
        try:
            with group.process_peak() if group else contextlib.nullcontext([0.0]) as peak:
                proc = subprocess.Popen(command, cwd=cwd, stdout=log, stderr=subprocess.STDOUT if log else None,
                                        stdin=subprocess.DEVNULL, env={**env, TAG: tag}, start_new_session=True,
                                        preexec_fn=group.join if group else None)
                try:
                    returncode = proc.wait(timeout=timeout_s)
                except subprocess.TimeoutExpired:
                    kill_all(processes_tagged(TAG, tag))
                    returncode = proc.wait()
                    problems.append(f"the grader did not finish within {timeout_s:.0f} s and was killed")
            if group:
                measured = {"cpu_s": group.cpu_seconds(), "peak_mb": group.peak_mb(), "process_peak_mb": peak[0],
                            "oom_kills": group.oom_kills()}
        finally:
            if group:
                group.remove()
        if group and group.everywhere():
            problems.append(f"the grading left its cgroup behind: {group.everywhere()}")
        return returncode, problems, processes_tagged(TAG, tag), measured


# The container's first process: runs the grader, then lists what is still running (the grader must leave
# nothing; a container's end would hide it) into the file named by its first argument.
CONTAINER_INIT = """
import json, os, subprocess, sys
code = subprocess.call(sys.argv[2:])
left = []
for pid in os.listdir("/proc"):
    if pid.isdigit() and int(pid) != os.getpid():
        try:
            status = dict(l.split(":", 1) for l in open(f"/proc/{pid}/status") if ":" in l)
            command = open(f"/proc/{pid}/cmdline", "rb").read().replace(b"\\0", b" ").decode("utf-8", "replace")
            left.append(f"{pid} (uid {status['Uid'].split()[0]}, {status['State'].strip()}): {command[:200]}")
        except OSError:
            pass
with open(sys.argv[1], "w") as f:
    json.dump(left, f)
sys.exit(code)
"""


class InContainer:
    """A fresh container from ``image`` (container.Image: Docker's 14 capabilities, its seccomp profile, a
    network namespace of its own) for each grading, as root, as on Gradescope. ``binds``: (this machine's
    folder, where the container sees it); ``report``: a folder both see, for the list of what was left."""

    name = "docker"

    def __init__(self, image, binds: list[tuple[str, str]], report: tuple[str, str]):
        self.image, self.binds, self.report = image, binds, report

    def run(self, command: list[str], env: dict[str, str], cwd: str, log, limits: Limits, timeout_s: float):
        problems: list[str] = []
        name = f"left-{uuid.uuid4().hex[:8]}.json"
        ran = self.image.run(["python3", "-c", CONTAINER_INIT, os.path.join(self.report[1], name), *command], env,
                             binds=self.binds, cwd=cwd, cpus=limits.cpus, memory_mb=limits.memory_mb, stdout=log,
                             timeout_s=timeout_s)
        if ran.exit_code == -9:
            problems.append(f"the grader did not finish within {timeout_s:.0f} s and was killed")
        try:
            with open(os.path.join(self.report[0], name), encoding="utf-8") as f:
                left = json.load(f)
            os.remove(os.path.join(self.report[0], name))
        except (OSError, ValueError):
            left = []
        measured = {"cpu_s": ran.cpu_s, "peak_mb": ran.peak_mb, "process_peak_mb": ran.process_peak_mb,
                    "oom_kills": ran.oom_kills}
        if ran.cgroups_left:
            problems.append(f"the container left its cgroup behind: {ran.cgroups_left}")
        return ran.exit_code, problems, left, measured


# -- grading -----------------------------------------------------------------------------------------------------

def grade(here: str, *, root: str | None = None, room=None, python: str = sys.executable,
          env: dict[str, str] | None = None, grader_args: tuple = (), reference_cache: str | None = None,
          jail: str | None = None, limits: Limits = Limits(), timeout_s: float = TIMEOUT_S,
          log_path: str | None = None, watch_tmp: bool = True) -> Graded:
    """Run ``source/run_autograder`` on the folder ``here`` (laid out like /autograder), as Gradescope runs it.

    ``root``: where the grader sees that folder (default: ``here``; /autograder in sim.py's image); ``room``:
    ``Here()`` (default) or an ``InContainer``; ``python``: the grader's Python (Gradescope's: ROOT/venv);
    ``env``: the environment run_autograder starts with (default: this process's); ``grader_args``: more
    arguments for the grader (the self-test's --parts, --checks, --time-limit-s); ``reference_cache`` and
    ``jail``: staff's files for the grader (run_autograder's MINDDP_REFERENCE_CACHE, MINDDP_JAIL); ``log_path``:
    the grader's output into that file (None: to this terminal); ``watch_tmp``: the grader's TMPDIR is
    ROOT/tmp, and whatever it leaves there is a problem."""
    room = room or Here()
    root = root or here
    env = dict(os.environ if env is None else env)
    env.update({"AUTOGRADER_ROOT": root, "PYTHON": python})
    for name, value in (("MINDDP_REFERENCE_CACHE", reference_cache), ("MINDDP_JAIL", jail)):
        if value:
            env[name] = value
    if watch_tmp:
        os.makedirs(os.path.join(here, "tmp"))
        env["TMPDIR"] = os.path.join(root, "tmp")
    if limits.cpus:
        timeout_s /= min(1.0, limits.cpus)  # the runner's own guard, not a verdict: scaled to the CPU given
    command = ["bash", os.path.join(root, "source", "run_autograder"), *grader_args]
    began = time.monotonic()
    with open(log_path, "wb") if log_path else contextlib.nullcontext() as log:
        returncode, problems, left, measured = room.run(command, env, os.path.join(root, "source"), log, limits,
                                                        timeout_s)
    seconds = time.monotonic() - began
    try:
        with open(os.path.join(here, "results", "results.json"), encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, ValueError) as error:
        data = None
        problems.append(f"results.json is missing or not JSON: {error}")
    uid = ((data or {}).get("extra_data") or {}).get("student_uid")
    if isinstance(room, Here) and isinstance(uid, int):
        left += processes_of_uid(uid)
    if left:
        described = [describe_process(pid) if isinstance(pid, int) else pid for pid in left]
        kill_all([pid for pid in left if isinstance(pid, int)])
        problems.append(f"the grader left {len(left)} process(es) running after it exited: {described}")
    if measured.get("oom_kills"):
        problems.append(f"{measured['oom_kills']} process(es) were killed by the cgroup's out-of-memory killer")
    leftovers = sorted(os.listdir(os.path.join(here, "tmp"))) if watch_tmp else []
    if leftovers:
        problems.append(f"the grader left {len(leftovers)} file(s) in its temporary folder: {leftovers[:5]}")
    if returncode != 0 and not problems:
        problems.append(f"the grader exited with code {returncode}")
    log_text = ""
    if log_path:
        with open(log_path, "rb") as f:
            log_text = f.read()[-4000:].decode("utf-8", "replace")
    return Graded(data, seconds, returncode, log_text, problems, measured)


# -- processes a grading left --------------------------------------------------------------------------------------

def processes_tagged(variable: str, value: str) -> list[int]:
    """Every process whose environment has ``variable=value`` (the grader and its trusted processes)."""
    needle, found = f"{variable}={value}".encode(), []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as f:
                if needle in f.read().split(b"\0"):
                    found.append(int(entry))
        except OSError:
            continue
    return found


def describe_process(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            command = f.read().replace(b"\0", b" ").decode("utf-8", "replace")[:200]
        with open(f"/proc/{pid}/status") as f:
            fields = dict(line.split(":", 1) for line in f if ":" in line)
        return (f"{pid} (uid {fields['Uid'].split()[0]}, ppid {fields['PPid'].strip()}, {fields['State'].strip()}): "
                f"{command}")
    except OSError:
        return f"{pid} (gone)"


def kill_all(pids: list[int]) -> None:
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def processes_of_uid(uid: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        try:
            if entry.isdigit() and os.stat(f"/proc/{entry}").st_uid == uid:
                found.append(int(entry))
        except OSError:
            continue
    return found


# -- `make grade` ------------------------------------------------------------------------------------------------

def expected_score(text: str) -> float:
    """``--expect``: a score, or "full": every point the checks give, bonus included (the sum of the weights
    in solutions/checks: one truth, so no total is typed anywhere)."""
    if text != "full":
        return float(text)
    student_side()
    from checks.registry import full_marks
    return full_marks()


def make_grade(submission: str | None, keep: str | None = None, expect: float | None = None) -> int:
    """`make grade`: the source folder as solutions/ says it is now, the submission (default: the solutions'
    files, as `make submit` would zip them), the grader's output on this terminal; results.json is kept as
    dist/results.json, the folder only with ``keep`` (then it is that folder)."""
    from autograder import assemble
    root = keep or tempfile.mkdtemp(prefix="minddp-autograder-")
    try:
        if os.path.exists(os.path.join(root, "source")):
            shutil.rmtree(os.path.join(root, "source"))
        source = assemble.build_source(os.path.join(root, "source"))
        kept = os.path.join(REPO, "dist", "reference-cache.json")  # what setup.sh would have made (it checks it fits)
        if os.path.exists(kept):
            shutil.copyfile(kept, os.path.join(source, "reference-cache.json"))
        for name in ("submission", "results", "tmp"):
            shutil.rmtree(os.path.join(root, name), ignore_errors=True)
        os.makedirs(os.path.join(root, "results"))
        target = os.path.join(root, "submission")
        if submission is None:
            assemble.reference_submission(target)
        else:
            place_submission(submission, target)
        # The jail tree (used where no mount namespace can be made) is kept in dist/, on the file system of this
        # checkout's venv, so that it is hard links only and built once.
        graded = grade(root, jail=os.path.join(REPO, "dist", "jail"))
        if os.path.exists(os.path.join(source, "reference-cache.json")):
            os.makedirs(os.path.dirname(kept), exist_ok=True)
            shutil.copyfile(os.path.join(source, "reference-cache.json"), kept)
        if graded.results is not None:
            results = os.path.join(REPO, "dist", "results.json")
            shutil.copyfile(os.path.join(root, "results", "results.json"), results)
            print(f"results.json kept as {os.path.relpath(results)}")
    finally:
        if keep is None:
            subprocess.run(["rm", "-rf", "--one-file-system", root], check=False)
    for problem in graded.problems:
        print(f"PROBLEM: {problem}", file=sys.stderr)
    score = (graded.results or {}).get("score")
    if expect is not None and score != expect:
        print(f"expected a score of {expect:g}, got {score}", file=sys.stderr)
        return 1
    return 1 if graded.problems else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m autograder.grade", description=__doc__.splitlines()[0])
    parser.add_argument("--submission", help="a folder or a .zip (default: the solutions)")
    parser.add_argument("--keep", help="use this folder as /autograder and keep it")
    parser.add_argument("--expect", type=expected_score,
                        help='exit 1 unless the score is this ("full": every point the checks give)')
    args = parser.parse_args(argv)
    return make_grade(args.submission, args.keep, args.expect)


if __name__ == "__main__":
    sys.exit(main())
