"""`make gradescope-sim`: Gradescope, simulated on this machine, as strictly as it can be.

    python autograder/sim.py [--root /autograder] [--submission solutions|stubs|PATH] [--cpus 0.5]
                             [--memory-mb 768] [--hog N] [--torch-index URL] [--reuse-setup] [--expect SCORE]

1. builds dist/autograder.zip (`make autograder`) and unzips it into ROOT/source, as Gradescope does;
2. runs ROOT/source/setup.sh as root (apt, a venv at ROOT/venv, torch from TORCH_INDEX_URL: the PyTorch CPU
   index by default, `--torch-index ""` for pip's configured index where that index is unreachable);
3. puts the submission in ROOT/submission and runs ROOT/source/run_autograder as root, inside a cgroup of
   `--cpus` CPUs and `--memory-mb` MB (cgroup v1 or v2, whichever this machine has), optionally while
   `--hog` processes spin on every core outside it;
4. validates results.json against Gradescope's specification and prints wall time, CPU-seconds, peak
   memory, OOM kills and the score (exit 1 on any problem, or on a score other than `--expect`).

ROOT defaults to /autograder, like Gradescope; a ROOT not made by this tool is never touched.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
MARKER = ".made-by-minddp-gradescope-sim"
SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"  # Gradescope's: the system python3
sys.path.insert(0, HERE)
# Wall-time budgets at Gradescope's half vCPU (reported, never a verdict: machines differ): the solutions,
# and the worst hostile submission (every part hangs), against Gradescope's 10-minute limit.
BUDGETS_S = {"solutions": 60.0, "hostile": 300.0}

from limits import Cgroup, hogs, stop_hogs  # noqa: E402

from grader.reference import CACHE_NAME  # noqa: E402
from grader.results import gradescope_problems  # noqa: E402

SETUP_CACHE = ".setup-reference-cache.json"  # --reuse-setup: the reference cache setup.sh made

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


def lay_out(root: str, archive: str, reuse_setup: bool) -> bool:
    """ROOT/source from the zip, fresh submission/ and results/; True if setup.sh must run."""
    if os.path.exists(root) and not os.path.exists(os.path.join(root, MARKER)):
        raise SystemExit(f"{root} exists and was not made by this tool: refusing to touch it (use --root)")
    stamp = setup_stamp(archive)
    setup_done = os.path.join(root, "venv", ".setup-done")
    needed = not (reuse_setup and os.path.exists(setup_done) and open(setup_done).read() == stamp)
    for name in ("source", "submission", "results") + (("venv",) if needed else ()):
        shutil.rmtree(os.path.join(root, name), ignore_errors=True)
    os.makedirs(root, exist_ok=True)
    closed = [d for d in ancestors(root) if not os.stat(d).st_mode & 0o001]
    if closed:  # Gradescope's /autograder is reachable by every uid: the student uid runs ROOT/venv's python
        raise SystemExit(f"{closed[0]} is not searchable by other users (mode {os.stat(closed[0]).st_mode & 0o777:o}), "
                         f"so the student uid could not run {root}/venv/bin/python: chmod o+x it or pick another --root")
    open(os.path.join(root, MARKER), "w").close()
    with zipfile.ZipFile(archive) as zf:
        zf.extractall(os.path.join(root, "source"))
    for name in ("setup.sh", "run_autograder"):
        os.chmod(os.path.join(root, "source", name), 0o755)
    os.makedirs(os.path.join(root, "results"))
    if not needed:  # what setup.sh's last steps leave in the source folder: root's modes, the reference cache
        source = os.path.join(root, "source")
        subprocess.run(["chmod", "-R", "go-rwx", source], check=True)
        shutil.copyfile(os.path.join(root, "venv", SETUP_CACHE), os.path.join(source, CACHE_NAME))
        subprocess.run([os.path.join(root, "venv", "bin", "python"), "-m", "grader", "--source", source,
                        "--reference-only"], cwd=source, check=True)  # kept if it fits this zip, else made anew
    return needed


def setup(root: str, archive: str, torch_index: str | None) -> float:
    env = {**os.environ, "AUTOGRADER_ROOT": root, "PATH": SYSTEM_PATH}
    if torch_index is not None:
        env["TORCH_INDEX_URL"] = torch_index
    began = time.monotonic()
    subprocess.run(["bash", os.path.join(root, "source", "setup.sh")], env=env, check=True)
    shutil.copyfile(os.path.join(root, "source", CACHE_NAME), os.path.join(root, "venv", SETUP_CACHE))
    with open(os.path.join(root, "venv", ".setup-done"), "w") as out:
        out.write(setup_stamp(archive))
    return time.monotonic() - began


def place_submission(root: str, submission: str) -> None:
    build = _build_module()
    target = os.path.join(root, "submission")
    if submission == "solutions":
        build.reference_submission(target)
    elif submission == "stubs":
        os.makedirs(target)
        sys.path.insert(0, os.path.join(REPO, "tools", "student"))
        from course import load_student_files
        for entry in load_student_files(os.path.join(REPO, "solutions", "student_files.json")):
            os.makedirs(os.path.dirname(os.path.join(target, entry.path)) or target, exist_ok=True)
            shutil.copyfile(os.path.join(REPO, "assignment", entry.path), os.path.join(target, entry.path))
    elif os.path.isdir(submission):
        shutil.copytree(submission, target, symlinks=True)
    else:
        build.unpack_like_gradescope(submission, target)


def _build_module():
    import importlib.util
    spec = importlib.util.spec_from_file_location("autograder_build", os.path.join(HERE, "build.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def grade(root: str, cpus: float, memory_mb: int, hog: int) -> dict:
    group = Cgroup(cpus, memory_mb)
    spinning = hogs(hog)
    log = os.path.join(root, "grading.log")
    began = time.monotonic()
    try:
        with open(log, "wb") as out:
            proc = subprocess.Popen(["bash", os.path.join(root, "source", "run_autograder")], preexec_fn=group.join,
                                    stdout=out, stderr=subprocess.STDOUT,
                                    env={"PATH": SYSTEM_PATH, "LANG": "C.UTF-8", "AUTOGRADER_ROOT": root,
                                         "HOME": "/root"})
            process_peak = 0.0  # sampled every 0.1 s: a benchmark figure (the cgroup's own peak counts page cache)
            while proc.poll() is None:
                process_peak = max(process_peak, group.process_mb())
                try:
                    proc.wait(timeout=0.1)
                except subprocess.TimeoutExpired:
                    pass
            code = proc.returncode
        wall = time.monotonic() - began
        measured = {"exit_code": code, "wall_s": wall, "cpu_s": group.cpu_seconds(), "peak_mb": group.peak_mb(),
                    "process_peak_mb": process_peak, "oom_kills": group.oom_kills(), "log": log}
    finally:
        stop_hogs(spinning)
        group.remove()
    return measured


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="autograder/sim.py", description=__doc__.splitlines()[0])
    parser.add_argument("--root", default="/autograder")
    parser.add_argument("--submission", default="solutions", help="solutions, stubs, or a folder or .zip")
    parser.add_argument("--cpus", type=float, default=0.5, help="CPU quota (Gradescope's default: 0.5)")
    parser.add_argument("--memory-mb", type=int, default=768, help="memory limit (Gradescope's default: 768)")
    parser.add_argument("--hog", type=int, default=0, help="processes spinning outside the cgroup meanwhile")
    parser.add_argument("--torch-index", default=None, help="TORCH_INDEX_URL for setup.sh ('' = pip's own)")
    parser.add_argument("--reuse-setup", action="store_true", help="keep ROOT/venv if setup.sh ran for this zip")
    parser.add_argument("--expect", type=float, help="the score the submission must get")
    parser.add_argument("--budget-s", type=float, help="the wall-time budget to report against (default: "
                        f"{BUDGETS_S['solutions']:g} s for the solutions, {BUDGETS_S['hostile']:g} s otherwise)")
    args = parser.parse_args(argv)
    if os.geteuid() != 0:
        raise SystemExit("gradescope-sim runs as root, as Gradescope does")
    root = os.path.abspath(args.root)
    archive = _build_module().build_zip(os.path.join(REPO, "dist", "autograder.zip"))
    setup_s = setup(root, archive, args.torch_index) if lay_out(root, archive, args.reuse_setup) else 0.0
    place_submission(root, args.submission)
    measured = grade(root, args.cpus, args.memory_mb, args.hog)
    with open(os.path.join(root, "results", "results.json"), encoding="utf-8") as f:
        results = json.load(f)
    problems = gradescope_problems(results)
    if measured["oom_kills"]:
        problems.append(f"{measured['oom_kills']} process(es) were killed by the out-of-memory killer")
    if args.expect is not None and abs(results.get("score", -1) - args.expect) > 1e-6:
        problems.append(f"score {results.get('score')}, expected {args.expect:g}")
    print(f"gradescope-sim: {args.submission} at {args.cpus:g} CPU, {args.memory_mb} MB"
          f"{f', {args.hog} hog(s) beside it' if args.hog else ''}: score {results.get('score')}, wall "
          f"{measured['wall_s']:.1f} s, {measured['cpu_s']:.1f} CPU-s, peak {measured['peak_mb']:.0f} MB (processes "
          f"{measured['process_peak_mb']:.0f} MB without page cache), "
          f"{measured['oom_kills']} OOM kill(s)" + (f"; setup.sh {setup_s:.0f} s" if setup_s else ""))
    budget = args.budget_s or BUDGETS_S["solutions" if args.submission == "solutions" else "hostile"]
    scaled = budget * 0.5 / args.cpus  # the budgets are for Gradescope's half vCPU
    print(f"  budget: {scaled:.0f} s ({budget:g} s at 0.5 CPU): "
          + ("within it" if measured["wall_s"] <= scaled else "OVER IT (a benchmark figure, not a verdict)"))
    print(f"  results.json: {os.path.join(root, 'results', 'results.json')}; log: {measured['log']}")
    for problem in problems:
        print(f"  PROBLEM: {problem}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
