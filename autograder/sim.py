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
import signal
import subprocess
import sys
import tempfile
import time
import uuid
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
MARKER = ".made-by-minddp-gradescope-sim"
SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"  # Gradescope's: the system python3
sys.path.insert(0, HERE)

from grader.results import gradescope_problems  # noqa: E402


# -- cgroups: v1 (cpu + memory controllers) or v2 (unified) --------------------------------------------------

class Cgroup:
    """A cgroup with a CPU quota and a memory limit, and what it measured."""

    def __init__(self, cpus: float, memory_mb: int):
        name = f"minddp-sim-{uuid.uuid4().hex[:8]}"
        self.v2 = not os.path.isdir("/sys/fs/cgroup/memory") and os.path.exists("/sys/fs/cgroup/cgroup.controllers")
        period = 100_000
        if self.v2:
            self.dirs = {"all": os.path.join("/sys/fs/cgroup", name)}
            os.mkdir(self.dirs["all"])
            self._write("all", "cpu.max", f"{int(cpus * period)} {period}")
            self._write("all", "memory.max", str(memory_mb * 2**20))
            self._write("all", "memory.swap.max", "0", missing_ok=True)
        else:
            self.dirs = {c: os.path.join("/sys/fs/cgroup", c, name) for c in ("cpu", "cpuacct", "memory")}
            for path in dict.fromkeys(self.dirs.values()):
                os.makedirs(path, exist_ok=True)
            self._write("cpu", "cpu.cfs_period_us", str(period))
            self._write("cpu", "cpu.cfs_quota_us", str(int(cpus * period)))
            self._write("memory", "memory.limit_in_bytes", str(memory_mb * 2**20))
            self._write("memory", "memory.memsw.limit_in_bytes", str(memory_mb * 2**20), missing_ok=True)

    def _write(self, controller: str, name: str, value: str, missing_ok: bool = False) -> None:
        path = os.path.join(self.dirs[controller], name)
        if missing_ok and not os.path.exists(path):
            return
        with open(path, "w") as f:
            f.write(value)

    def _read(self, controller: str, name: str) -> str:
        with open(os.path.join(self.dirs[controller], name)) as f:
            return f.read()

    def join(self) -> None:
        """In the child, before exec: this process (and so everything it starts) joins the cgroup."""
        for path in dict.fromkeys(self.dirs.values()):
            with open(os.path.join(path, "cgroup.procs"), "w") as f:
                f.write("0")

    def cpu_seconds(self) -> float:
        if self.v2:
            stats = dict(line.split() for line in self._read("all", "cpu.stat").splitlines())
            return int(stats["usage_usec"]) / 1e6
        return int(self._read("cpuacct", "cpuacct.usage")) / 1e9

    def peak_mb(self) -> float:
        if self.v2:
            return int(self._read("all", "memory.peak")) / 2**20 if os.path.exists(
                os.path.join(self.dirs["all"], "memory.peak")) else float("nan")
        return int(self._read("memory", "memory.max_usage_in_bytes")) / 2**20

    def oom_kills(self) -> int:
        name, key = ("memory.events", "oom_kill") if self.v2 else ("memory.oom_control", "oom_kill")
        controller = "all" if self.v2 else "memory"
        fields = dict(line.split() for line in self._read(controller, name).splitlines() if len(line.split()) == 2)
        return int(fields.get(key, 0))

    def remove(self) -> None:
        for path in dict.fromkeys(self.dirs.values()):
            procs = os.path.join(path, "cgroup.procs")
            for pid in open(procs).read().split() if os.path.exists(procs) else []:
                try:
                    os.kill(int(pid), signal.SIGKILL)
                except ProcessLookupError:
                    pass
            for _ in range(50):
                try:
                    os.rmdir(path)
                    break
                except OSError:
                    time.sleep(0.1)  # the killed processes leave the cgroup asynchronously


# -- the simulation ------------------------------------------------------------------------------------------

def setup_stamp(archive: str) -> str:
    """What setup.sh's result depends on: its own text and the requirements (not the zip's timestamps)."""
    with zipfile.ZipFile(archive) as zf:
        return hashlib.sha256(zf.read("setup.sh") + zf.read("requirements.txt")).hexdigest()


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
    open(os.path.join(root, MARKER), "w").close()
    with zipfile.ZipFile(archive) as zf:
        zf.extractall(os.path.join(root, "source"))
    for name in ("setup.sh", "run_autograder"):
        os.chmod(os.path.join(root, "source", name), 0o755)
    os.makedirs(os.path.join(root, "results"))
    return needed


def setup(root: str, archive: str, torch_index: str | None) -> float:
    env = {**os.environ, "AUTOGRADER_ROOT": root, "PATH": SYSTEM_PATH}
    if torch_index is not None:
        env["TORCH_INDEX_URL"] = torch_index
    began = time.monotonic()
    subprocess.run(["bash", os.path.join(root, "source", "setup.sh")], env=env, check=True)
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


def hogs(count: int) -> list[subprocess.Popen]:
    """Processes that spin on the CPU outside the cgroup, as other tenants of a loaded machine would."""
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"], start_new_session=True)
            for _ in range(count)]


def grade(root: str, cpus: float, memory_mb: int, hog: int) -> dict:
    group = Cgroup(cpus, memory_mb)
    spinning = hogs(hog)
    log = os.path.join(root, "grading.log")
    began = time.monotonic()
    try:
        with open(log, "wb") as out:
            code = subprocess.call(["bash", os.path.join(root, "source", "run_autograder")], preexec_fn=group.join,
                                   stdout=out, stderr=subprocess.STDOUT,
                                   env={"PATH": SYSTEM_PATH, "LANG": "C.UTF-8", "AUTOGRADER_ROOT": root,
                                        "HOME": "/root"})
        wall = time.monotonic() - began
        measured = {"exit_code": code, "wall_s": wall, "cpu_s": group.cpu_seconds(), "peak_mb": group.peak_mb(),
                    "oom_kills": group.oom_kills(), "log": log}
    finally:
        for proc in spinning:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
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
          f"{measured['wall_s']:.1f} s, {measured['cpu_s']:.1f} CPU-s, peak {measured['peak_mb']:.0f} MB, "
          f"{measured['oom_kills']} OOM kill(s)" + (f"; setup.sh {setup_s:.0f} s" if setup_s else ""))
    print(f"  results.json: {os.path.join(root, 'results', 'results.json')}; log: {measured['log']}")
    for problem in problems:
        print(f"  PROBLEM: {problem}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
