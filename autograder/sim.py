"""`make gradescope-sim`: Gradescope, simulated on this machine, as strictly as it can be.

    python -m autograder.sim [--config docker|privileged] [--submission solutions|stubs|PATH] [--cpus 0.5]
                             [--memory-mb 768] [--hog N] [--torch-index URL] [--image DIR] [--root DIR]
                             [--reuse-setup] [--expect SCORE]

Two configurations of the room the autograder runs in:

* ``docker`` (the default, Gradescope's): a container with Docker's defaults (``container.py``: Docker's 14
  capabilities, no CAP_SYS_ADMIN; Docker's seccomp profile; cgroups read-only inside; a network namespace of
  its own). setup.sh runs in it once, writing an image layer (kept in ``--image DIR`` for later runs), then
  every grading runs in a fresh container from that image, as root, /autograder/{submission,results} bound
  from this machine, inside a cgroup of ``--cpus`` CPUs and ``--memory-mb`` MB made outside it;
* ``privileged`` (the former simulation: a VM or a privileged container): setup.sh and run_autograder as root
  with every capability, in ``--root`` on this machine (default /autograder, or FALLBACK_ROOT where this
  machine has an /autograder this tool did not make), inside the same kind of cgroup.

A run killed before its end (Ctrl-C, a closed terminal, kill -9) leaves nothing that stops the next: each room
is locked while a run uses it (``container.exclusive``), and the next run first ends what a dead one left
running (its grader, setup.sh; in the docker room, its containers, their mounts and namespaces). What this
machine has at /autograder never reaches the docker room: the image's /autograder is its own.

Either way: builds dist/autograder.zip (`make autograder`) and unzips it into ROOT/source as Gradescope does;
runs setup.sh (apt, the venv, torch from TORCH_INDEX_URL: the PyTorch CPU index by default, ``--torch-index
""`` for pip's configured index); places the submission; runs run_autograder, optionally while ``--hog``
processes spin on every core outside it; validates results.json against Gradescope's specification and
prints wall time, CPU-seconds, peak memory, OOM kills, the isolation the grader used and the score (exit 1 on
any problem, or on a score other than ``--expect``).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import subprocess
import sys
import time
import zipfile

from autograder import assemble
from autograder.container import exclusive
from autograder.grade import (
    SYSTEM_PATH,
    Here,
    InContainer,
    Limits,
    expected_score,
    grade,
    kill_all,
    place_submission,
    processes_tagged,
)
from autograder.limits import hogs, stop_hogs
from grader.reference import CACHE_NAME
from grader.results import gradescope_problems
from grader.secret import NAME as SECRET_NAME

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
MARKER = ".made-by-minddp-gradescope-sim"
GRADESCOPE_ROOT = "/autograder"
FALLBACK_ROOT = "/var/lib/minddp-gradescope-sim/autograder"  # privileged, where /autograder is not this tool's
SIM_ROOT = "MINDDP_SIM_ROOT"  # in the environment of everything a privileged run starts: finds what a dead one left
# Wall-time budgets at Gradescope's half vCPU (reported, never a verdict: machines differ): the solutions,
# and the worst hostile submission (every part hangs), against Gradescope's 10-minute limit.
BUDGETS_S = {"solutions": 60.0, "hostile": 300.0}

# --reuse-setup keeps what setup.sh made (the reference cache, the secret it drew the hidden inputs from, and
# what it ran for) in ROOT/KEPT, root's alone, never in the venv: that lives in the jail tree, where student
# workers read (jail-walk: nothing of this tool is in it).
KEPT = ".setup-kept"
SETUP_CACHE = os.path.join(KEPT, CACHE_NAME)
SETUP_SECRET = os.path.join(KEPT, SECRET_NAME)
SETUP_DONE = os.path.join(KEPT, ".setup-done")  # what setup.sh ran for (setup_stamp)

# -- the simulation ------------------------------------------------------------------------------------------

def setup_stamp(archive: str) -> str:
    """What setup.sh's result depends on: its own text and the requirements (not the zip's timestamps)."""
    with zipfile.ZipFile(archive) as zf:
        return hashlib.sha256(zf.read("setup.sh") + zf.read("requirements.txt")).hexdigest()


def ancestors(path: str) -> list[str]:
    """``path`` and every folder above it."""
    path = os.path.abspath(path)
    chain = [path]
    while os.path.dirname(path) != path:
        path = os.path.dirname(path)
        chain.append(path)
    return chain


def lay_out(root: str, archive: str, reuse_setup: bool, check_reach: bool = True) -> bool:
    """ROOT/source from the zip, fresh submission/ and results/; True if setup.sh must run. ``root`` is where
    ROOT is on this machine (in the docker configuration: inside the image layer, the image's own)."""
    stamp = setup_stamp(archive)
    setup_done = os.path.join(root, SETUP_DONE)
    needed = not (reuse_setup and os.path.exists(setup_done) and open(setup_done).read() == stamp)
    for name in ("source", "submission", "results") + (("venv", "jail", KEPT) if needed else ()):
        path = os.path.join(root, name)
        if os.path.islink(path):
            os.unlink(path)
        shutil.rmtree(path, ignore_errors=True)
    os.makedirs(root, exist_ok=True)
    closed = [d for d in ancestors(root) if not os.stat(d).st_mode & 0o001] if check_reach else []
    if closed:  # Gradescope's /autograder is reachable by every uid: the student uid runs ROOT/venv's python
        raise SystemExit(f"{closed[0]} is not searchable by other users (mode {os.stat(closed[0]).st_mode & 0o777:o}), "
                         f"so the student uid could not run {root}/venv/bin/python: chmod o+x it or pick another --root")
    with zipfile.ZipFile(archive) as zf:
        zf.extractall(os.path.join(root, "source"))
    for name in ("setup.sh", "run_autograder"):
        os.chmod(os.path.join(root, "source", name), 0o755)
    os.makedirs(os.path.join(root, "results"))
    os.makedirs(os.path.join(root, "submission"))
    return needed


class Privileged:
    """setup.sh and run_autograder as root with every capability, ROOT on this machine: a folder this tool made
    (its MARKER), locked while a run uses it; what a killed run left running there is ended first."""

    name = "privileged"

    def __init__(self, root: str):
        self.root = self.here = root
        if os.path.exists(root) and not os.path.exists(os.path.join(root, MARKER)):
            raise SystemExit(f"{root} exists and was not made by this tool: refusing to touch it (--root picks "
                             "another folder)")
        os.makedirs(root, exist_ok=True)
        open(os.path.join(root, MARKER), "a").close()  # first: a run killed at any point leaves it ours
        if exclusive(os.path.join(root, MARKER), root):
            left = [pid for pid in processes_tagged(SIM_ROOT, root) if pid != os.getpid()]
            if left:
                print(f"ending {len(left)} process(es) a killed run left in {root}", file=sys.stderr)
                groups = limits_cgroups(left)
                kill_all(left)
                remove_when_empty(groups)

    @staticmethod
    def default_root() -> str:
        """/autograder, as on Gradescope, unless this machine has one this tool did not make."""
        mine = os.path.exists(os.path.join(GRADESCOPE_ROOT, MARKER))
        if os.path.exists(GRADESCOPE_ROOT) and not mine:
            print(f"{GRADESCOPE_ROOT} exists and was not made by this tool: the privileged room is {FALLBACK_ROOT} "
                  "(--root picks another)", file=sys.stderr)
            return FALLBACK_ROOT
        return GRADESCOPE_ROOT

    def command(self, args: list[str], env: dict[str, str], cwd: str = "/") -> int:
        return subprocess.run(args, env=env, cwd=cwd).returncode

    def runner(self) -> Here:
        return Here()

    def close(self) -> None:
        pass


class Docker:
    """Gradescope's room: setup.sh builds an image layer; each grading is a fresh container from it
    (``container.py``: Docker's defaults). ROOT is /autograder inside."""

    name = "docker"
    root = "/autograder"

    def __init__(self, image_dir: str | None):
        from autograder.container import Image
        self.image = Image(image_dir)
        self.keep = image_dir is not None
        self.here = self.image.path(self.root)

    def command(self, args: list[str], env: dict[str, str], cwd: str = "/") -> int:
        return self.image.setup(["bash", "-c", 'cd "$0" && exec "$@"', cwd, *args], env)

    def runner(self) -> InContainer:
        """Each grading a fresh container from the image, /autograder/{submission,results} bound from here."""
        results = (os.path.join(self.here, "results"), f"{self.root}/results")
        binds = [(os.path.join(self.here, "submission"), f"{self.root}/submission"), results]
        return InContainer(self.image, binds, report=results)

    @property
    def python(self) -> str:
        return f"{self.root}/venv/bin/python"

    @property
    def jail(self) -> str:
        """The tree setup.sh built in the image (the venv is in it)."""
        return f"{self.root}/jail"

    def close(self) -> None:
        self.image.close(keep=self.keep)


def limits_cgroups(pids: list[int]) -> set[str]:
    """The cgroup folders limits.Cgroup made (minddp-limits-*) that hold these processes (v1: one per controller)."""
    found = set()
    for pid in pids:
        try:
            with open(f"/proc/{pid}/cgroup") as f:
                lines = f.read().splitlines()
        except OSError:
            continue
        for line in lines:
            _, controllers, path = line.split(":", 2)
            top = path.strip("/").split("/")[0]
            if top.startswith("minddp-limits-"):
                controller = controllers.split(",")[0].removeprefix("name=")
                found.add(os.path.join("/sys/fs/cgroup", controller, top) if controller else
                          os.path.join("/sys/fs/cgroup", top))
    return found


def remove_when_empty(folders: set[str]) -> None:
    """A killed run's cgroups, once the processes just killed have left them (asynchronously: a few tries)."""
    for folder in folders:
        for _ in range(50):
            try:
                os.rmdir(folder)
                break
            except FileNotFoundError:
                break
            except OSError:
                time.sleep(0.1)


def setup_env(room, torch_index: str | None) -> dict[str, str]:
    """setup.sh's environment: the system's PATH (the system python3), pip's settings of this machine."""
    env = {k: v for k, v in os.environ.items() if k.startswith(("PIP_", "http_", "https_", "HTTP_", "HTTPS_", "NO_PROXY",
                                                                "no_proxy"))}
    env.update({"PATH": SYSTEM_PATH, "HOME": "/root", "LANG": "C.UTF-8", "AUTOGRADER_ROOT": room.root})
    if room.name == "privileged":
        env = {**os.environ, **env, SIM_ROOT: room.root}
    if torch_index is not None:
        env["TORCH_INDEX_URL"] = torch_index
    return env


def setup(room, archive: str, torch_index: str | None) -> float:
    began = time.monotonic()
    code = room.command(["bash", os.path.join(room.root, "source", "setup.sh")], setup_env(room, torch_index))
    if code != 0:
        raise SystemExit(f"setup.sh failed (exit code {code}) in the {room.name} configuration")
    os.makedirs(os.path.join(room.here, KEPT), mode=0o700, exist_ok=True)
    for kept, name in ((SETUP_CACHE, CACHE_NAME), (SETUP_SECRET, SECRET_NAME)):
        shutil.copy2(os.path.join(room.here, "source", name), os.path.join(room.here, kept))  # (modes: root's)
    with open(os.path.join(room.here, SETUP_DONE), "w") as out:
        out.write(setup_stamp(archive))
    return time.monotonic() - began


def reuse_setup(room) -> None:
    """What setup.sh's last steps leave in the source folder: root's modes, the reference cache (kept if it
    fits this zip, else made anew), the jail tree."""
    source = os.path.join(room.root, "source")
    for kept, name in ((SETUP_CACHE, CACHE_NAME), (SETUP_SECRET, SECRET_NAME)):
        shutil.copy2(os.path.join(room.here, kept), os.path.join(room.here, "source", name))
    python = os.path.join(room.root, "venv", "bin", "python")
    script = (f'chmod -R go-rwx "{source}" && "{python}" -m grader --source "{source}" --reference-only && '
              f'"{python}" -m grader --source "{source}" --build-jail')
    if room.command(["bash", "-c", script], setup_env(room, None), cwd=source) != 0:
        raise SystemExit("reusing setup.sh's results failed")


def place_named_submission(target: str, submission: str) -> None:
    """``solutions``, ``stubs`` (their files as `make submit` zips them), or a folder or a zip."""
    os.rmdir(target)
    if submission == "solutions":
        assemble.reference_submission(target)
    elif submission == "stubs":
        assemble.student_submission(os.path.join(REPO, "assignment"), target)
    else:
        place_submission(submission, target)


def grade_in(room, cpus: float, memory_mb: int, hog: int):
    """The grading, through the one entry point: Gradescope's environment and Python, its limits, ``hog``
    processes spinning outside the cgroup meanwhile."""
    spinning = hogs(hog)
    try:
        env = {"PATH": SYSTEM_PATH, "LANG": "C.UTF-8", "HOME": "/root"}
        if room.name == "privileged":
            env[SIM_ROOT] = room.root  # what a killed run leaves is found by it
        graded = grade(room.here, root=room.root, room=room.runner(), python=f"{room.root}/venv/bin/python",
                       env=env, limits=Limits(cpus, memory_mb),
                       log_path=os.path.join(room.here, "grading.log"), watch_tmp=False)
    finally:
        stop_hogs(spinning)
    with open(os.path.join(room.here, "grading.log"), encoding="utf-8", errors="replace") as f:
        isolation = next((line.strip() for line in f if line.startswith("isolation:")), "isolation: ?")
    return graded, isolation


def prepare(room, archive: str, reuse: bool, torch_index: str | None = None) -> float:
    """ROOT/source from the zip, and setup.sh's results (run now, or kept from a run for the same setup.sh and
    requirements); returns setup.sh's seconds (0 if kept)."""
    if lay_out(room.here, archive, reuse, check_reach=room.name == "privileged"):
        return setup(room, archive, torch_index)
    reuse_setup(room)
    return 0.0


def gradescope_image(image_dir: str, torch_index: str | None = None) -> Docker:
    """The docker configuration's image in ``image_dir``, setup.sh run in it (or kept): for the self-test,
    which grades each case in a fresh container from it."""
    archive = assemble.build_zip(os.path.join(REPO, "dist", "autograder.zip"))
    room = Docker(image_dir)
    prepare(room, archive, reuse=True, torch_index=torch_index)
    return room


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m autograder.sim", description=__doc__.splitlines()[0])
    parser.add_argument("--config", choices=["docker", "privileged"], default="docker",
                        help="docker: Docker's default container, as Gradescope (default); privileged: every "
                             "capability, no container")
    parser.add_argument("--root", help=f"privileged: where ROOT is on this machine (default {GRADESCOPE_ROOT}, or "
                                       f"{FALLBACK_ROOT} if this machine has an {GRADESCOPE_ROOT} not made by this tool)")
    parser.add_argument("--image", help="docker: keep the image (setup.sh's layer) in this folder, for --reuse-setup")
    parser.add_argument("--submission", default="solutions", help="solutions, stubs, or a folder or .zip")
    parser.add_argument("--cpus", type=float, default=0.5, help="CPU quota (Gradescope's default: 0.5)")
    parser.add_argument("--memory-mb", type=int, default=768, help="memory limit (Gradescope's default: 768)")
    parser.add_argument("--hog", type=int, default=0, help="processes spinning outside the cgroup meanwhile")
    parser.add_argument("--torch-index", default=None, help="TORCH_INDEX_URL for setup.sh ('' = pip's own)")
    parser.add_argument("--reuse-setup", action="store_true", help="keep the venv and the jail if setup.sh ran for "
                                                                   "this zip (docker: in --image)")
    parser.add_argument("--expect", type=expected_score,
                        help='the score the submission must get ("full": every point the checks give)')
    parser.add_argument("--budget-s", type=float, help="the wall-time budget to report against (default: "
                        f"{BUDGETS_S['solutions']:g} s for a grading with every point, as the solutions', "
                        f"{BUDGETS_S['hostile']:g} s otherwise)")
    args = parser.parse_args(argv)
    if os.geteuid() != 0:
        raise SystemExit("gradescope-sim runs as root, as Gradescope does")
    archive = assemble.build_zip(os.path.join(REPO, "dist", "autograder.zip"))
    room = Docker(args.image) if args.config == "docker" else \
        Privileged(os.path.abspath(args.root or Privileged.default_root()))
    try:
        setup_s = prepare(room, archive, args.reuse_setup, args.torch_index)
        place_named_submission(os.path.join(room.here, "submission"), args.submission)
        graded, isolation = grade_in(room, args.cpus, args.memory_mb, args.hog)
        measured = graded.measured
        kept = os.path.join(REPO, "dist", "gradescope-sim")  # the docker room's files are gone once it is closed
        os.makedirs(kept, exist_ok=True)
        for name in ("results/results.json", "grading.log"):
            shutil.copyfile(os.path.join(room.here, name), os.path.join(kept, os.path.basename(name)))
        results = graded.results or {}
    finally:
        room.close()
    problems = gradescope_problems(results) + graded.problems
    if args.expect is not None and abs(results.get("score", -1) - args.expect) > 1e-6:
        problems.append(f"score {results.get('score')}, expected {args.expect:g}")
    print(f"gradescope-sim ({room.name}): {args.submission} at {args.cpus:g} CPU, {args.memory_mb} MB"
          f"{f', {args.hog} hog(s) beside it' if args.hog else ''}: score {results.get('score')}, wall "
          f"{graded.seconds:.1f} s, {measured['cpu_s']:.1f} CPU-s, peak {measured['peak_mb']:.0f} MB (processes "
          f"{measured['process_peak_mb']:.0f} MB without page cache), "
          f"{measured['oom_kills']} OOM kill(s)" + (f"; setup.sh {setup_s:.0f} s" if setup_s else ""))
    print(f"  {isolation}")
    full = abs(results.get("score", -1) - expected_score("full")) < 1e-6  # the solutions' budget, whatever its name
    budget = args.budget_s or BUDGETS_S["solutions" if full else "hostile"]
    scaled = budget * 0.5 / args.cpus  # the budgets are for Gradescope's half vCPU
    print(f"  budget: {scaled:.0f} s ({budget:g} s at 0.5 CPU): "
          + ("within it" if graded.seconds <= scaled else "OVER IT (a benchmark figure, not a verdict)"))
    print(f"  results.json and grading.log: {os.path.relpath(kept)}")
    for problem in problems:
        print(f"  PROBLEM: {problem}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
