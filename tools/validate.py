"""`assign.py validate`: the public tests pass on the solutions and fail, by a stub, on the student release.

Two runs of the public tests (the release's tests/, hidden tests already removed):

1. solutions: the release with the student files replaced by the reference; every test must pass, each
   within the per-test budget.
2. release: the student zip unpacked and tested with the student's own `make test`; every test must fail
   with a stub's ``NotImplementedError: Part N: ... — see handout §N``, except the tests of PROVIDED code
   listed below, which must pass. A test that passes on stubs, or fails for another reason, is reported by
   name: it either tests nothing students write or is broken by something other than a missing part.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from tools.release import STAFF_ONLY, Layout, Release, write_release, write_student_zip
from tools.student.course import STUB_RE

PLUGINS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "plugins")
STUB_FAILURE_RE = re.compile(r"NotImplementedError: " + STUB_RE.pattern)
TEST_BUDGET_S = 60.0  # each public test, on 2 cores

# Tests of provided code: they cannot fail on stubs, so they must PASS there. A file, a test, or a test
# with all its parameters ("file::test" covers "file::test[...]"). Each says what provided code it tests.
PROVIDED_CODE_TESTS = {
    "tests/test_provided.py": "the provided code: the worker pool, the shape tables, bucket_size_limits, the "
                              "timeline's constants, argument checks and ascii_timeline",
    "tests/test_probe.py": "the probe (probe.py: `make probe`, `make probe-buckets`) on torch's DDP and bucketing",
}


class ValidateError(RuntimeError):
    """A test run produced no outcomes (pytest or make could not start); the message holds its output."""


@dataclass
class Run:
    name: str
    seconds: float
    tests: dict[str, dict]
    collect_errors: dict[str, str]


def provided_reason(nodeid: str, allow_list: dict[str, str] = PROVIDED_CODE_TESTS) -> str | None:
    for key, reason in allow_list.items():
        if nodeid == key or nodeid.startswith((key + "::", key + "[")):
            return reason
    return None


def last_error_line(text: str) -> str:
    """The line a human reads first: pytest's last 'E ' line, else the last non-empty line."""
    lines = [line for line in text.splitlines() if line.strip()]
    errors = [line[1:].strip() for line in lines if line.startswith("E ")]
    return (errors or lines or ["(no output)"])[-1][:300]


@dataclass(frozen=True)
class Phase:
    """One pytest run that loads the outcomes plugin."""

    name: str
    command: list[str]
    cwd: str
    outcomes: str
    log: str


def run_phase(phase: Phase) -> Run:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [PLUGINS, os.environ.get("PYTHONPATH")]))}
    began = time.monotonic()
    with open(phase.log, "wb") as out:
        subprocess.run(phase.command, cwd=phase.cwd, env=env, stdout=out, stderr=subprocess.STDOUT,
                       stdin=subprocess.DEVNULL)
    seconds = time.monotonic() - began
    try:
        with open(phase.outcomes, encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, ValueError):
        with open(phase.log, encoding="utf-8", errors="replace") as f:
            tail = f.read()[-3000:]
        raise ValidateError(f"the {phase.name} run recorded no outcomes; its output ends with:\n{tail}") from None
    return Run(phase.name, seconds, data["tests"], data["collect_errors"])


def prepare(release: Release, layout: Layout, workdir: str) -> tuple[str, str]:
    """(a solutions tree: the release with the reference student files, the unpacked student release)."""
    solved = os.path.join(workdir, "solutions-run")
    write_release(release.files, solved)
    for path in [entry.path for entry in layout.student_files()] + list(STAFF_ONLY):  # the staff's tests too
        shutil.copyfile(os.path.join(layout.solutions, path), os.path.join(solved, path))
    archive = os.path.join(workdir, "student.zip")
    write_student_zip(release.files, layout, archive)
    with zipfile.ZipFile(archive) as zf:
        zf.extractall(os.path.join(workdir, "student"))
    return solved, os.path.join(workdir, "student", "assignment")


def run_both(release: Release, layout: Layout, workdir: str, parallel: bool = True) -> tuple[Run, Run]:
    """Both runs, at the same time by default. Each leaves much of a core idle (workers wait on process
    start-up and on each other), so on 2 cores together they take about as long as the slower one
    (measured: 163 s at once, 307 s one after the other)."""
    solved, student = prepare(release, layout, workdir)
    files = {name: (os.path.join(workdir, f"{name}.json"), os.path.join(workdir, f"{name}.log"))
             for name in ("solutions", "release")}
    pytest_args = ["-p", "no:cacheprovider", "-p", "pytest_outcomes", "-q"]
    solutions = Phase("solutions", [sys.executable, "-m", "pytest", *pytest_args,
                                    f"--outcomes-json={files['solutions'][0]}"], solved, *files["solutions"])
    # The release is tested through the student's own front door, with this venv (nothing installed).
    stubs = Phase("release", ["make", "--no-print-directory", "test", f"VENV={sys.prefix}",
                              "PYTEST_ARGS=" + " ".join([*pytest_args, f"--outcomes-json={files['release'][0]}"])],
                  student, *files["release"])
    with ThreadPoolExecutor(max_workers=2 if parallel else 1) as pool:
        runs = list(pool.map(run_phase, [solutions, stubs]))
    return runs[0], runs[1]


def judge(solutions: Run, stubs: Run, allow_list: dict[str, str] = PROVIDED_CODE_TESTS) -> list[str]:
    """Every way the two runs differ from what they must be, one line per test."""
    problems = [f"{nodeid}: cannot be collected ({run.name}): {last_error_line(text)}"
                for run in (solutions, stubs) for nodeid, text in run.collect_errors.items()]
    for nodeid, test in solutions.tests.items():
        if test["outcome"] != "passed":
            problems.append(f"{nodeid}: {test['outcome']} on the solutions: {last_error_line(test['text'])}")
    for run in (solutions, stubs):
        problems += [f"{nodeid}: took {t['duration']:.0f} s on the {run.name} (budget {TEST_BUDGET_S:.0f} s)"
                     for nodeid, t in run.tests.items() if t["duration"] > TEST_BUDGET_S]
    for nodeid in solutions.tests:
        if not staff_only(nodeid):  # not in the release: they run on the solutions alone
            problems += _judge_stub(nodeid, stubs.tests.get(nodeid), provided_reason(nodeid, allow_list))
    problems += [f"{key}: in PROVIDED_CODE_TESTS (tools/validate.py) but no public test matches it; remove it"
                 for key in allow_list if not any(provided_reason(n, {key: ""}) is not None for n in solutions.tests)]
    return problems


def staff_only(nodeid: str) -> bool:
    """A test of a file that stays out of the release (tools/release.py STAFF_ONLY)."""
    return nodeid.split("::")[0] in STAFF_ONLY


def _judge_stub(nodeid: str, test: dict | None, provided: str | None) -> list[str]:
    if test is None:
        return [f"{nodeid}: ran on the solutions but not on the release"]
    outcome, text = test["outcome"], test["text"]
    if provided is not None:
        if outcome != "passed":
            return [f"{nodeid}: tests provided code ({provided}) so it must pass on the stubs, but "
                    f"{outcome}: {last_error_line(text)}"]
        return []
    if outcome == "passed":
        return [f"{nodeid}: passes on the stubs, so it tests no student code; if it tests provided code, add it "
                "to PROVIDED_CODE_TESTS in tools/validate.py with the reason"]
    if outcome == "skipped":
        return [f"{nodeid}: skipped on the stubs: {last_error_line(text)}"]
    if not STUB_FAILURE_RE.search(text):
        return [f"{nodeid}: fails on the stubs, but not with a stub's NotImplementedError: {last_error_line(text)}"]
    return []


def summary(solutions: Run, stubs: Run, allow_list: dict[str, str] = PROVIDED_CODE_TESTS) -> list[str]:
    def count(run: Run, outcome: str) -> int:
        return sum(t["outcome"] == outcome for t in run.tests.values())

    by_stub = sum(t["outcome"] in ("failed", "error") and bool(STUB_FAILURE_RE.search(t["text"]))
                  for t in stubs.tests.values())
    provided = sum(provided_reason(n, allow_list) is not None and t["outcome"] == "passed"
                   for n, t in stubs.tests.items())
    staff = sum(map(staff_only, solutions.tests))
    lines = [f"solutions: {len(solutions.tests)} tests ({staff} of them staff-only: {', '.join(STAFF_ONLY)}), "
             f"{count(solutions, 'passed')} passed ({solutions.seconds:.0f} s)",
             f"release:   {len(stubs.tests)} public tests, {by_stub} failed on a stub, {provided} passed "
             f"(provided code, allow-listed) ({stubs.seconds:.0f} s)"]
    for run in (solutions, stubs):
        slowest = sorted(run.tests.items(), key=lambda item: -item[1]["duration"])[:5]
        lines.append(f"slowest on the {run.name}: " + ", ".join(f"{n.split('::')[-1]} {t['duration']:.1f} s"
                                                                  for n, t in slowest))
    return lines


def validate(release: Release, layout: Layout, keep: str | None = None, parallel: bool = True) -> int:
    workdir = keep or tempfile.mkdtemp(prefix="minddp-validate-")
    began = time.monotonic()
    try:
        solutions, stubs = run_both(release, layout, workdir, parallel)
    except ValidateError as error:
        print(f"validate: {error}", file=sys.stderr)
        return 2
    finally:
        if keep is None:
            shutil.rmtree(workdir, ignore_errors=True)
    for line in summary(solutions, stubs):
        print(f"validate: {line}")
    print(f"validate: {time.monotonic() - began:.0f} s in all ({'both runs at once' if parallel else 'one after the other'})")
    problems = judge(solutions, stubs)
    if problems:
        print(f"validate: {len(problems)} problem(s):\n  " + "\n  ".join(problems), file=sys.stderr)
        return 1
    print("validate: OK")
    return 0
