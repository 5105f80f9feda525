"""The grading run, top to bottom (``run_autograder`` calls ``main``).

1. Write a fallback results.json (score 0, a message), so no crash ever leaves Gradescope with nothing.
2. Stage: pristine homework + exactly the student-edited files; report missing files by name.
3. Static checks: every student file compiles and does not use torch's DDP machinery.
4. Reference pass: every scenario on the reference (torch's DDP, or the reference code) in worker
   processes where no student code was ever loaded.
5. Student pass, part by part, in workers running as an unprivileged user (when grading as root). A part
   is graded with the reference version of the files of OTHER parts, except earlier parts that passed, so
   one mistake is charged once (as bytecode: student code runs beside it and must not read its source).
   The bonus is graded with the student's own reducer.py and ddp.py, never the reference's.
6. Compare in this process (which imports neither torch nor student code), score, write results.json
   atomically.
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
import traceback
import uuid
from collections import defaultdict

from .check import LAUNCH, CheckInfo, describe
from .checks import ALL_CHECKS
from .results import TestResult, write_fallback, write_json_atomically, write_results
from .stage import StudentFile, from_reference, load_student_files, make_variant, stage, unpack_if_zip
from .static import check_file


STUDENT_USER = "minddp-student"
SCENARIO_DEADLINE_S = 30.0  # solutions need ~1-3 s per scenario here; Gradescope's half core is slower
TIMEOUTS_BEFORE_GIVING_UP = 2  # per part: a student whose code hangs must not take 10 minutes to grade
TOTAL_BUDGET_S = 420.0  # stop starting new scenarios after this; Gradescope's limit is 10 minutes
# Gradescope gives 768 MB to everything. A worker is ~220 MB after importing torch; workers that grew
# (leaky code keeps every model it built) are restarted between scenarios, and a runaway is stopped.
WORKER_RECYCLE_MB = 360
WORKER_MAX_RSS_MB = 450  # solutions peak at ~320 MB RSS per worker (pages shared with the fork server)
WORKER_MAX_OUTPUT_MB = 32  # per worker log; more is a flood, not feedback
# Which other parts' files a part's checks run (bucketing feeds the wrapper and the timeline model...).
USES_PARTS = {3: {2, 4}, 4: {2, 3}, 5: {2}}
GRADING_TAG = "MINDDP_GRADING"  # in every process a grading starts: finds the ones left behind
BONUS_PARTS = {3, 4}  # the files holding the bonus work (reducer.py, ddp.py): a broken one earns no bonus


class Grader:
    def __init__(self, source: str, submission: str, workdir: str, deadline_s: float = SCENARIO_DEADLINE_S):
        self.source = source
        self.deadline_s = deadline_s
        self.workdir = workdir
        self.began = time.monotonic()
        self.files = load_student_files(os.path.join(source, "student_files.json"))
        self.reference_dir = os.path.join(source, "reference")
        self.scenarios_dir = os.path.join(workdir, "scenarios")
        shutil.copytree(os.path.join(source, "scenarios"), self.scenarios_dir)
        # The student's workers start from a pristine copy of the provided harness only: they never see
        # the reference package (the trusted side imports workers.py from the reference, below).
        self.harness_dir = os.path.join(workdir, "harness")
        os.makedirs(os.path.join(self.harness_dir, "minddp"))
        for name in ("__init__.py", "workers.py"):
            shutil.copyfile(os.path.join(source, "skeleton", "minddp", name),
                            os.path.join(self.harness_dir, "minddp", name))
        if self.reference_dir not in sys.path:
            sys.path.insert(0, self.reference_dir)  # trusted: minddp.workers for this process
        upload = unpack_if_zip(submission, os.path.join(workdir, "upload"))
        self.staged = stage(upload, os.path.join(source, "skeleton"), self.files, workdir)
        self.broken: dict[str, str] = {}  # student file -> why it cannot be graded
        self.checks = [describe(c) for c in ALL_CHECKS]
        self.reference: dict[str, object] = {}
        self.part_failed: dict[int, bool] = defaultdict(bool)
        self.timeouts: dict[str, int] = defaultdict(int)  # "Part 3" or "the bonus" -> checks that timed out
        self.notes: list[str] = []
        self.student_user = isolation_user(self.notes)

    # -- 3. static checks ---------------------------------------------------------------------------------
    def static_checks(self) -> None:
        for entry in self.files:
            if entry.path in self.staged.missing:
                self.broken[entry.path] = (f"{entry.path} was not found in your submission, so Part {entry.part} "
                                           "scores 0. Upload the zip that `make submit` builds.")
                continue
            error, banned = check_file(os.path.join(self.staged.student_dir, entry.path), entry.path)
            if error:
                self.broken[entry.path] = f"{entry.path} does not compile, so Part {entry.part} scores 0:\n{error}"
            elif banned:
                self.broken[entry.path] = (f"{entry.path} uses torch's own DDP machinery, which this homework "
                                           f"asks you to build (handout: allowed APIs), so Part {entry.part} "
                                           "scores 0:\n  " + "\n  ".join(banned))

    def file_of_part(self, part: int) -> StudentFile | None:
        return next((f for f in self.files if f.part == part), None)

    def variant(self, info: CheckInfo) -> str:
        """The code folder a check runs on: see step 5 of the module docstring."""
        scenario = info.scenario
        use_reference = set()
        for entry in self.files:
            if entry.path in self.broken and (entry.part != scenario.part or scenario.bonus):
                use_reference.add(entry.path)
            elif scenario.bonus:
                continue  # extra credit: all of the student's working files
            elif entry.part != scenario.part and (entry.part > scenario.part or self.part_failed[entry.part]):
                use_reference.add(entry.path)
        return make_variant(self.staged.student_dir, self.reference_dir, use_reference, self.workdir)

    # -- 4. and 5. the two passes ------------------------------------------------------------------------
    def pool(self, world_size: int, student: bool):
        from minddp.workers import WorkerPool
        user = self.student_user if student else None
        root = self.harness_dir if student else self.reference_dir
        return WorkerPool(world_size, pythonpath=[self.scenarios_dir], as_numpy=True, user=user, package_root=root,
                          max_rss_mb=WORKER_MAX_RSS_MB, max_output_mb=WORKER_MAX_OUTPUT_MB,
                          recycle_above_mb=WORKER_RECYCLE_MB)

    def reference_pass(self, cache: str | None = None) -> None:
        """Every scenario on the reference. ``cache`` (staff self-tests only) reuses an earlier pass's
        results, computed on this machine: many submissions can then be graded against one pass."""
        needed = [c.scenario for c in self.checks if c.scenario.fn != LAUNCH]  # a launch needs no reference
        if cache and os.path.exists(cache):
            with open(cache, encoding="utf-8") as f:
                from minddp.workers import decode
                self.reference = decode(json.load(f), as_numpy=True)
            if all(s.reference_key() in self.reference for s in needed):
                return
        for world_size in sorted({s.world_size for s in needed}):
            with self.pool(world_size, student=False) as pool:
                for s in needed:
                    key = s.reference_key()
                    if s.world_size != world_size or key in self.reference:
                        continue
                    ran = pool.run("grader_scenarios:run", deadline_s=120.0, code_dir=self.reference_dir,
                                   scenario=s.fn, kwargs={**s.kwargs, **s.ref_kwargs}, trap=False)
                    self.reference[key] = [r["result"] for r in ran]
        if cache:
            from minddp.workers import encode_numpy
            write_json_atomically(cache, encode_numpy(self.reference))

    def student_pass(self) -> list[TestResult]:
        results: dict[str, TestResult] = {}
        # The torchrun launch (world size 0) first, then world size 2 part by part (a part's pass/fail picks
        # the next parts' variants), then 3.
        for world_size in sorted({c.scenario.world_size for c in self.checks}):
            todo = [c for c in self.checks if c.scenario.world_size == world_size]
            if not todo:
                continue
            # Launch checks start their own processes: first, while no worker pool holds memory.
            with self.pool(world_size, student=True) if world_size else contextlib.nullcontext() as pool:
                for info in todo:
                    results[info.number] = self.grade_one(pool, info)
                    if results[info.number].status != "passed" and not info.scenario.bonus:
                        self.part_failed[info.scenario.part] = True
        return [results[c.number] for c in self.checks]

    def grade_one(self, pool, info: CheckInfo) -> TestResult:
        s = info.scenario
        result = TestResult(info.name, info.number, info.weight, visibility=info.visibility, tags=info.tags,
                            extra_credit=bool(s.bonus))
        own = self.file_of_part(s.part)
        if own is not None and own.path in self.broken and not s.bonus:
            result.output = self.broken[own.path]
            return result
        if s.bonus:  # the bonus work is the student's own: never graded with the reference's
            broken = [f.path for f in self.files if f.part in BONUS_PARTS and f.path in self.broken]
            if broken:
                result.output = (f"Not run: bonus {s.bonus} is graded with your own {' and '.join(broken)}, which "
                                 f"could not be graded:\n{self.broken[broken[0]]}")
                return result
        group = group_of(s)
        if self.timeouts[group] >= TIMEOUTS_BEFORE_GIVING_UP:
            result.output = (f"Not run: {TIMEOUTS_BEFORE_GIVING_UP} earlier checks of {group} did not finish "
                             "in time (see their output), so the rest of it is not attempted.")
            return result
        if time.monotonic() - self.began > TOTAL_BUDGET_S:
            result.output = "Not run: the grading time budget was used up by earlier checks that hung."
            return result
        code_dir = self.variant(info)
        note = self.substitution_note(code_dir, USES_PARTS.get(s.part, set()))
        failure = self.run_check(pool, info, code_dir)
        if failure is None:
            result.score, result.status = info.weight, "passed"
            result.output = note.strip()
        else:
            result.output = note + failure + (f"\n\nHint: {info.hint}" if info.hint else "")
        return result

    def run_check(self, pool, info: CheckInfo, code_dir: str) -> str | None:
        """Run one check's scenario on ``code_dir`` and compare; None if it passed, else what to tell the student."""
        from minddp.workers import ScenarioError
        s = info.scenario
        group = group_of(s)
        deadline_s = s.deadline_s if s.deadline_s != 60.0 else self.deadline_s
        if s.fn == LAUNCH:
            got, error = self.launch(code_dir, deadline_s, **s.kwargs)
            if error:
                self.timeouts[group] += "did not finish within" in error
                return error
        else:
            try:
                ran = pool.run("grader_scenarios:run", deadline_s=deadline_s, code_dir=code_dir, scenario=s.fn,
                               kwargs=s.kwargs, trap=True)
            except ScenarioError as error:
                if error.timed_out:
                    self.timeouts[group] += 1
                return failure_text(str(error))
            got = [r["result"] for r in ran]
            banned = sorted({b for r in ran for b in r["banned"]})
            if banned:
                return f"Your code called {', '.join(banned)}, which this homework does not allow."
        try:
            info.function(self.reference.get(s.reference_key()), got)
        except AssertionError as error:
            return str(error)
        except Exception:  # a check crashing on odd output is the student's failure, shown plainly
            return "Your code returned something this check cannot read:\n" + traceback.format_exc(limit=-2)
        return None

    def launch(self, code_dir: str, deadline_s: float, nproc: int) -> tuple[list, str]:
        """Run the torchrun probe (the public tests' launch_probe.py) on ``code_dir`` with a real
        ``torchrun --standalone``, as the student user; return (one report per rank, error text or "")."""
        from minddp.workers import kill_session, output_limiter, tail_of
        out = tempfile.mkdtemp(prefix="launch-", dir=self.workdir)
        os.chmod(out, 0o777)  # the ranks (the student user) write their reports here
        log_path = os.path.join(out, "torchrun.log")
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PYTHONPATH": code_dir, "OMP_NUM_THREADS": "1",
               "HOME": out, "TMPDIR": out, "PYTHONDONTWRITEBYTECODE": "1", GRADING_TAG: os.environ[GRADING_TAG]}
        command = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={nproc}",
                   os.path.join(self.scenarios_dir, "launch_probe.py"), out]
        user = {"user": self.student_user, "group": self.student_user, "extra_groups": []} if self.student_user else {}
        with open(log_path, "wb") as log:
            proc = subprocess.Popen(command, cwd=out, env=env, stdin=subprocess.DEVNULL, stdout=log,
                                    stderr=subprocess.STDOUT, start_new_session=True,
                                    preexec_fn=output_limiter(WORKER_MAX_OUTPUT_MB), **user)
            try:
                proc.wait(timeout=deadline_s)
                timed_out = False
            except subprocess.TimeoutExpired:
                timed_out = True
            finally:
                kill_session(proc)
        tail = tail_of(log_path, 3000)
        reports = []
        for rank in range(nproc):
            try:
                with open(os.path.join(out, f"rank{rank}.json"), encoding="utf-8") as f:
                    reports.append(json.loads(f.read(100_000)))
            except (OSError, ValueError):
                reports.append(None)
        if timed_out:
            return reports, f"Your code did not finish in time: the torchrun launch ran over {deadline_s:g} s.\n{tail}"
        if None in reports:
            missing = [rank for rank, r in enumerate(reports) if r is None]
            return reports, (f"Under torchrun, rank(s) {missing} did not report (exit code {proc.returncode}). "
                             f"The end of torchrun's output:\n{tail}")
        return reports, ""

    def substitution_note(self, code_dir: str, parts_used: set[int]) -> str:
        if code_dir == self.staged.student_dir:
            return ""
        swapped = [f.path for f in self.files if f.part in parts_used and from_reference(code_dir, f.path)
                   and not _same_file(os.path.join(self.reference_dir, f.path),
                                      os.path.join(self.staged.student_dir, f.path))]
        return (f"(Graded with the reference {', '.join(swapped)} in place of yours, so that a mistake in "
                "another part is not charged twice.)\n\n") if swapped else ""

    def summary(self, tests: list[TestResult]) -> str:
        lines = ["Part                          score", "----------------------------  ------------"]
        by_part: dict[str, list[TestResult]] = defaultdict(list)
        for info, test in zip(self.checks, tests):
            key = f"Bonus {info.scenario.bonus}" if info.scenario.bonus else f"Part {info.scenario.part}"
            by_part[key].append(test)
        for key, group in by_part.items():
            entry = self.file_of_part(int(key.split()[1])) if key.startswith("Part") else None
            label = f"{key}: {entry.name}" if entry else key
            lines.append(f"{label:<28}  {sum(t.score for t in group):5.1f} / {sum(t.max_score for t in group):5.1f}")
        lines.append(f"{'Total (bonus is extra)':<28}  {sum(t.score for t in tests):5.1f} / "
                     f"{sum(t.max_score for t in tests if not t.extra_credit):5.1f}")
        found = ", ".join(f"{p} (from {w})" for p, w in self.staged.found.items()) or "none"
        return "\n".join(lines + ["", f"Files graded: {found}", *self.staged.problems,
                                  *[f"Note: {m.splitlines()[0]}" for m in self.broken.values()], *self.notes])


def group_of(scenario) -> str:
    """What hangs are counted per: a part, or the bonus."""
    return "the bonus" if scenario.bonus else f"Part {scenario.part}"


def failure_text(error: str) -> str:
    """A worker's error with what happened first (the exception itself, or why the worker was stopped):
    that is what students read."""
    if "did not finish within" in error:
        return f"Your code did not finish in time:\n{error}"
    if "MB of memory and was stopped" in error:
        return (f"Your code used too much memory (at most {WORKER_MAX_RSS_MB} MB per process: Gradescope has 768 MB "
                f"in all), so it was stopped:\n{error}")
    if "[Errno 27] File too large" in error or "printed more than" in error:
        return (f"Your code printed more than {WORKER_MAX_OUTPUT_MB} MB, so its output was cut off and the "
                f"check stopped; print less (e.g. not in every autograd hook):\n{error}")
    hint = ""
    died = "before reporting a result" in error  # then the others' broken connections are its consequence
    if "doesn't match expected size" in error or (not died and "gloo" in error
                                                   and any(s in error for s in GLOO_MISMATCH)):
        hint = ("\nThe ranks' collectives did not pair up: one rank launched a collective the others did not, "
                "or in a different order or size (handout §3).")
    if "killed by SIGKILL" in error:  # not by us (that is the memory message above): the kernel's OOM killer
        hint += ("\nSIGKILL usually means the machine ran out of memory (Gradescope has 768 MB for everything): "
                 "does your code keep tensors it no longer needs?")
    if died:
        return ("A process running your code exited before it reported a result (os._exit, a crash, or "
                f"an abort).{hint}\n\n{error}")
    return f"Your code raised {exception_line(error)}{hint}\n\nWhere (innermost calls last):\n{error}"


GLOO_MISMATCH = ("Connection reset by peer", "Connection closed by peer", "doesn't match expected size", "Timed out")


def exception_line(error: str) -> str:
    """The first line of the exception in a worker's traceback (of the first rank that failed), found
    after the last stack frame: the message itself may span many lines (or be cut at its start)."""
    lines = error.split("\n\n1:\n")[0].splitlines()
    frames = [i for i, line in enumerate(lines) if line.startswith('  File "')]
    if frames:
        for line in lines[frames[-1] + 1:]:
            if line.strip() and not line.startswith((" ", "\t")):
                return line.strip()
    return next((line.strip() for line in reversed(lines) if line.strip() and not line.startswith(" ")), "")


def _same_file(a: str, b: str) -> bool:
    try:
        with open(a, "rb") as fa, open(b, "rb") as fb:
            return fa.read() == fb.read()
    except OSError:
        return False


def isolation_user(notes: list[str]) -> str | None:
    """The user student code runs as: ``STUDENT_USER`` when grading as root (Gradescope), else nobody else.

    Gradescope runs everything as root; student code must not, so it cannot read the hidden checks or
    the reference, nor write results. The user is created here if setup.sh did not.
    """
    if os.geteuid() != 0:
        notes.append("Note: not running as root, so student code ran as the grading user (no isolation).")
        return None
    if subprocess.run(["id", STUDENT_USER], capture_output=True).returncode != 0:
        subprocess.run(["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", STUDENT_USER],
                       check=True, capture_output=True)
    try:  # e.g. a Python under /root (a developer's pyenv) is not executable by other users
        subprocess.run([sys.executable, "-c", "import torch"], user=STUDENT_USER, group=STUDENT_USER,
                       extra_groups=[], check=True, capture_output=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        notes.append(f"Note: {sys.executable} cannot run as {STUDENT_USER}; student code ran as root (no "
                     "isolation). On Gradescope, setup.sh installs a Python every user can run.")
        return None
    return STUDENT_USER


def hide_source(grader: Grader) -> None:
    """Keep student code away from the hidden checks and the reference, whatever setup.sh did.

    Workers inherit this process's working directory, from which a relative path ("grader/checks.py")
    reaches the source folder without passing through any closed folder above it: work in the work folder
    instead (student code may read it anyway). And when student code runs as another user, close the
    source folder to others, as setup.sh does on Gradescope (`make grade` and self-tests skip setup.sh).
    """
    os.chdir(grader.workdir)
    if grader.student_user:
        os.chmod(grader.source, os.stat(grader.source).st_mode & ~0o077)


def processes_tagged(variable: str, value: str, uid: int | None = None) -> list[int]:
    """Every process (of user ``uid``, if given) whose environment has ``variable=value``: what a grading
    started inherits the tag, so this finds what it left behind (reading others' environments needs root)."""
    needle, found = f"{variable}={value}".encode(), []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            if uid is not None and os.stat(f"/proc/{entry}").st_uid != uid:
                continue
            with open(f"/proc/{entry}/environ", "rb") as f:
                if needle in f.read().split(b"\0"):
                    found.append(int(entry))
        except OSError:  # gone meanwhile, or not ours to read
            continue
    return found


def kill_all(pids: list[int]) -> None:
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def stop_student_processes(user: str | None) -> None:
    """Student code may have left processes behind (a daemon it forked): none may outlive its grading.
    Only this grading's, found by its tag: other gradings may run at the same time (the self-test)."""
    if user:
        import pwd
        kill_all(processes_tagged(GRADING_TAG, os.environ[GRADING_TAG], pwd.getpwnam(user).pw_uid))


def readable_by_all(path: str) -> None:
    """The student's workers read staged code and scenarios; nothing else of ours."""
    for root, dirs, files in os.walk(path):
        os.chmod(root, 0o755)
        for name in files:
            os.chmod(os.path.join(root, name), 0o644)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m grader")
    parser.add_argument("--source", required=True, help="the autograder source folder")
    parser.add_argument("--submission", required=True, help="a folder or a .zip")
    parser.add_argument("--results", required=True, help="where results.json goes")
    parser.add_argument("--deadline-s", type=float, default=SCENARIO_DEADLINE_S,
                        help="per-scenario deadline (staff self-tests shorten it)")
    parser.add_argument("--reference-cache", help="staff self-tests: reuse the reference pass stored here")
    args = parser.parse_args(argv)
    began = time.monotonic()
    args.results = os.path.abspath(args.results)
    os.environ[GRADING_TAG] = uuid.uuid4().hex  # inherited by every process this grading starts
    args.reference_cache = args.reference_cache and os.path.abspath(args.reference_cache)
    write_fallback(args.results, "The autograder stopped before it could grade this submission. Please "
                                 "resubmit; if this persists, contact the course staff.")
    workdir = tempfile.mkdtemp(prefix="minddp-grade-")
    cwd = os.getcwd()
    try:
        grader = Grader(os.path.abspath(args.source), os.path.abspath(args.submission), workdir, args.deadline_s)
        hide_source(grader)
        grader.static_checks()
        readable_by_all(workdir)
        grader.reference_pass(args.reference_cache)
        tests = grader.student_pass()
        stop_student_processes(grader.student_user)
        output = grader.summary(tests)
    except Exception:
        tests, output = [], ("The autograder itself failed (not your fault); please tell the course staff.\n\n"
                             + traceback.format_exc(limit=-6))
    finally:
        os.chdir(cwd)
        shutil.rmtree(workdir, ignore_errors=True)
    data = write_results(args.results, tests, output, time.monotonic() - began)
    print(output)
    print(f"\nscore {data['score']} in {data['execution_time']} s; results: {os.path.abspath(args.results)}")
    return 0
