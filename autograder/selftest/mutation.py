"""`make mutants`: does the autograder catch realistic mistakes, and accept correct code written other ways?

    python -m autograder.selftest.mutation                  # every submission (make mutants)
    python -m autograder.selftest.mutation --only sum-not-average,hooks-on-grad-accumulator
    python -m autograder.selftest.mutation list             # names and descriptions

Each file of ``mutants/`` and ``correct/`` is one submission: the reference solution plus the edit a student
would have made (the edit formats of ``cases.py``: ``(old, new)`` pairs or a whole ``Function``).

    mutants/NAME.py   docstring: the mistake, in one line. ``EDITS``; ``VIOLATES``: the handout's contract item
                      it breaks, alone ("C3", "E4", "simulate_step"; ``coverage.py`` keeps the table of items
                      and their mutants, COVERAGE.md); and ``CAUGHT_BY = {test number: words}``:
                      that test must fail and its message must contain the words (case-insensitive), i.e.
                      the feedback names the mistake. The submission must lose points (of Parts 1-6; a mutant
                      whose CAUGHT_BY names only bonus tests must lose bonus points).
    correct/NAME.py   docstring: how this student wrote it. ``EDITS``. It must pass every test the solutions
                      pass (100%, and the bonus when the variant keeps it).

Every submission is graded by the full pipeline (``python -m grader``, as ``run_autograder`` runs it), against
one reference pass, with the grader's own deadlines, on the parts that read a file it edits
(``grader/parts.py``; ``--parts``): every other part runs exactly the solutions' code, so it grades as theirs
did. A mutant is graded on its ``CAUGHT_BY`` checks only (``--checks``), with every check of the parts those
depend on: they decide the code the checks run (the mutant's file or a stand-in), so each named check runs
exactly as in a whole grading, at a fifth of the cost (``--every-part`` grades everything the edits reach,
for the full list of failing tests). The table gives each submission's expected outcome, score, the tests
that failed among those graded and whether the verdict is right; any wrong verdict exits 1.
"""

from __future__ import annotations

import argparse
import glob
import importlib.util
import io
import os
import shutil
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from autograder.assemble import student_paths
from autograder.selftest.kinds import Case
from autograder.selftest.runner import REPO, Outcome, SelfTest, files_by_part, graded_in, make_submission, part_of
from grader.parts import PART_ORDER, parts_in_full, parts_reading
from tools import student_side

HERE = os.path.dirname(os.path.abspath(__file__))

KINDS = ("mutants", "correct")
# The subset `make test` grades (about a minute); CI and `make mutants` grade every submission.
FAST = ("sum-not-average", "ready-order-launch", "buffer-quirk-ignored", "no-sync-ignored", "seal-above-limit",
        "ring-without-latency", "hooks-on-grad-accumulator")


@dataclass(frozen=True)
class Submission:
    name: str  # the file's name without .py
    kind: str  # "mutants" or "correct"
    about: str  # the docstring's first line
    edits: dict
    caught_by: dict  # mutants: {test number: words its message must contain}
    violates: str  # mutants: the one contract item of the handout it breaks ("C3", "simulate_step"; coverage.py)
    parts: tuple  # the parts whose checks run a file it edits: the only ones it can change

    def case(self, every_part: bool = False) -> Case:
        """As a self-test case with no expectation of its own (``verdict`` judges it)."""
        return Case(f"{self.kind[0]}-{self.name}", self.about, edits=self.edits, full=(), hostile=False,
                    parts=PART_ORDER if every_part else self.parts,  # every part: also those run before its file
                    checks=None if every_part or not self.caught_by else tuple(self.caught_by))


def load(path: str, kind: str) -> Submission:
    name = os.path.basename(path)[:-3]
    spec = importlib.util.spec_from_file_location(f"selftest_{kind}_{name.replace('-', '_')}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    about = (module.__doc__ or "").strip().splitlines()
    caught_by = getattr(module, "CAUGHT_BY", {})
    problems = [f"no docstring (the {'mistake' if kind == 'mutants' else 'variant'} in one line)"] if not about else []
    problems += ["no EDITS"] if not getattr(module, "EDITS", None) else []
    problems += ["no CAUGHT_BY {test number: words}"] if kind == "mutants" and not caught_by else []
    problems += ["CAUGHT_BY in a correct variant"] if kind == "correct" and caught_by else []
    violates = getattr(module, "VIOLATES", "")
    problems += ["no VIOLATES (the handout's contract item it breaks: see COVERAGE.md)"] if kind == "mutants" and \
        not violates else []
    reach = parts_reading(getattr(module, "EDITS", {}), files_by_part())
    beyond = sorted({str(n).split(".")[0] for n in caught_by} - set(reach))
    problems += [f"CAUGHT_BY names part(s) {', '.join(beyond)}, whose checks run none of the edited files"] if beyond else []
    if problems:
        raise ValueError(f"{path}: " + "; ".join(problems))
    return Submission(name, kind, about[0], module.EDITS, dict(caught_by), violates, reach)


def submissions(only: list[str] | None = None) -> list[Submission]:
    found = [load(path, kind) for kind in KINDS for path in sorted(glob.glob(os.path.join(HERE, kind, "*.py")))]
    if only:
        unknown = set(only) - {s.name for s in found}
        if unknown:
            raise SystemExit(f"unknown submissions {sorted(unknown)}; see `mutation.py list`")
        found = [s for s in found if s.name in only]
    return found


def required(tests: list[dict]) -> list[dict]:
    return [t for t in tests if part_of(t) not in ("A", "B")]


def verdict(sub: Submission, outcome: Outcome, baseline: dict) -> list[str]:
    """What is wrong with the grader's answer for ``sub`` (empty: the verdict is right)."""
    if outcome.problems or outcome.graded.results is None:
        return outcome.problems or ["no results.json"]
    tests = {t["number"]: t for t in outcome.graded.results["tests"]}
    baseline = {n: t for n, t in baseline.items() if graded_in(t, outcome.case)}
    if sub.kind == "correct":
        lost = [f"{n} ({t['status']}: {(t['output'].strip().splitlines() or [''])[0][:200]})"
                for n, t in tests.items() if t["score"] < baseline[n]["score"]]
        return [f"a correct variant lost points on {', '.join(lost)}"] if lost else []
    problems = []
    # A mistake in a bonus part (every CAUGHT_BY test a bonus one) can only cost extra credit: it must lose some
    # (extra-credit tests have max_score 0 in results.json: the reference's own scores are the full marks).
    bonus_only = all(str(number).split(".")[0] in ("A", "B") for number in sub.caught_by)
    if bonus_only:
        full = sum(t["score"] for t in baseline.values())
        kept = sum(t["score"] for t in tests.values())
    else:
        full = sum(t["max_score"] for t in required(list(baseline.values())))
        kept = sum(t["score"] for t in required(list(tests.values())))
    if kept >= full:
        problems.append("the mutant kept full marks" + (" (bonus included)" if bonus_only else ""))
    for number, words in sub.caught_by.items():
        test = tests.get(number)
        if test is None:
            problems.append(f"no test {number}")
        elif test["status"] == "passed":
            problems.append(f"test {number} passed")
        elif words.lower() not in test["output"].lower():
            problems.append(f"test {number} failed, but its message does not say {words!r} (README.md, 'A mutant': "
                            "other words of the message, or a check taught to name the mistake, which students "
                            f"get too): {' '.join(test['output'].split())[:300]!r}")
    return problems


def harness() -> None:
    """Make the students' harness (``checks``) importable here."""
    student_side()


def local_message(folder: str, number: str, server=None) -> str | None:
    """What `make test` says for check ``number`` on a graded submission's files (None: it passes): the
    release with the submission's files copied in, run by the students' own runner (on ``server``, a fork
    server of the release's, if given: it never imports the code under test, only its workers do)."""
    harness()
    from checks.local import CheckFailed, LocalRunner
    from checks.registry import public_checks
    root = os.path.join(folder, "release")
    shutil.copytree(os.path.join(REPO, "assignment"), root, ignore=shutil.ignore_patterns("__pycache__"),
                    dirs_exist_ok=True)  # a mutant caught by two checks asks twice
    for path in student_paths():
        shutil.copyfile(os.path.join(folder, "submission", path), os.path.join(root, path))
    runner = LocalRunner(root, server=server)
    try:
        runner.check(next(c for c in public_checks() if c.number == number))
        return None
    except CheckFailed as failure:
        return str(failure)
    finally:
        runner.close()


def local_messages(rows: list[tuple[Submission, Outcome, list[str]]], jobs: int) -> dict[tuple[str, str], str | None]:
    """``local_message`` for every check that catches a graded mutant, ``jobs`` mutants at a time (one mutant's
    checks one after the other: they share its release folder), each thread with one fork server for all its
    mutants (torch imported ``jobs`` times, not once per mutant): {(mutant, check number): message}."""
    harness()
    from checks.check import WARM_UP
    from checks.pool import ForkServer

    def ask(mutants: list[tuple[Submission, Outcome]]) -> dict:
        server = ForkServer(paths=[os.path.join(REPO, "assignment")], warm_up=WARM_UP)
        try:
            return {(sub.name, number): local_message(outcome.folder, number, server)
                    for sub, outcome in mutants for number in sub.caught_by}
        finally:
            server.stop()
    mutants = [(sub, outcome) for sub, outcome, _ in rows if sub.kind == "mutants"]
    shares = [mutants[i::max(1, jobs)] for i in range(max(1, jobs))]
    with ThreadPoolExecutor(max_workers=len(shares)) as pool:
        return {key: said for answers in pool.map(ask, shares) for key, said in answers.items()}


def failing(outcome: Outcome) -> list[str]:
    results = outcome.graded.results or {}
    return [t["number"] for t in results.get("tests", []) if t.get("status") != "passed"]


def grade_all(test: SelfTest, subs: list[Submission], jobs: int,
              every_part: bool = False) -> list[tuple[Submission, Outcome, list[str]]]:
    """Grade every submission (the solutions first, once: the reference pass and the baseline)."""
    outcomes, _ = test.run([s.case(every_part) for s in subs], jobs=jobs, solutions_runs=0)
    baseline = {t["number"]: t for t in test.baseline["tests"]}
    return [(s, o, verdict(s, o, baseline)) for s, o in zip(subs, outcomes, strict=True)]


def table(rows: list[tuple[Submission, Outcome, list[str]]]) -> str:
    lines = [f"{'submission':<28} {'expected':<30} {'graded':<12} {'score':>6} {'time':>6}  "
             f"{'failing tests':<24} verdict",
             f"{'-' * 28} {'-' * 30} {'-' * 12} {'-' * 6} {'-' * 6}  {'-' * 24} -------"]
    for sub, outcome, problems in rows:
        expected = ("100% (every test)" if sub.kind == "correct"
                    else "fails " + ", ".join(f"{n} '{w}'" for n, w in sub.caught_by.items()))
        score = "-" if outcome.score is None else f"{outcome.score:g}"
        fails = ",".join(failing(outcome)) or "-"
        parts = ",".join(outcome.case.parts or ["all"])
        if outcome.case.checks:  # the named checks, then the parts graded in full beside them
            parts = " +".join([",".join(outcome.case.checks),
                               *sorted(parts_in_full(outcome.case.checks) & set(outcome.case.parts or ()))])
        lines.append(f"{sub.name:<28} {expected[:30]:<30} {parts:<12} {score:>6} {outcome.graded.seconds:5.1f}s  "
                     f"{fails[:24]:<24} {'RIGHT' if not problems else 'WRONG'}")
        lines += [f"{'':<28}   - {p}" for p in problems]
    return "\n".join(lines)


def summary(rows: list[tuple[Submission, Outcome, list[str]]], seconds: float) -> str:
    mutants = [r for r in rows if r[0].kind == "mutants"]
    correct = [r for r in rows if r[0].kind == "correct"]
    killed = sum(not p for _, _, p in mutants)
    accepted = sum(not p for _, _, p in correct)
    rate = lambda k, n: f"{k}/{n} = {100 * k / n:.0f}%" if n else "-"  # noqa: E731
    return (f"kill rate (mutants caught, by a test naming the mistake): {rate(killed, len(mutants))}; "
            f"acceptance rate (correct variants at 100%): {rate(accepted, len(correct))}; {seconds:.0f} s")


def sample_export(subs: list[Submission], out: str) -> str:
    """A Gradescope export (what `make regrade` reads) of these submissions, the solutions and the stubs: one
    submission_<id>/ folder each holding its submission.zip, and submission_metadata.yml naming each one
    (e.g. "mutant sum-not-average"), so staff can try `make regrade` and read its tables and plots."""
    import tempfile
    import zipfile
    stubs = Case("stubs", "the release's stubs", start="stubs")
    cases = [(Case("solutions", "the reference solution"), "solutions")] + [(stubs, "stubs")] + [
        (sub.case(), f"{sub.kind[:-1] if sub.kind == 'mutants' else 'correct'} {sub.name}") for sub in subs]
    top = "sample_export"
    metadata = []
    with tempfile.TemporaryDirectory() as tmp, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zf:
        for number, (case, who) in enumerate(cases, start=1):
            folder = make_submission(case, os.path.join(tmp, str(number)))
            inner = io.BytesIO()
            with zipfile.ZipFile(inner, "w", zipfile.ZIP_DEFLATED) as upload:
                for root, _, names in os.walk(folder):
                    for name in sorted(names):
                        upload.write(os.path.join(root, name), os.path.relpath(os.path.join(root, name), folder))
            zf.writestr(f"{top}/submission_{number}/submission.zip", inner.getvalue())
            metadata.append(f"submission_{number}:\n  :submitters:\n  - :name: {who}\n    :sid: '{number}'\n"
                            f"    :email: {case.name}@example.edu\n")
        zf.writestr(f"{top}/submission_metadata.yml", "".join(metadata))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m autograder.selftest.mutation", description=__doc__.splitlines()[0])
    parser.add_argument("command", nargs="?", default="grade", choices=["grade", "list", "export"],
                        help="grade (default), list, or export: a sample Gradescope export for `make regrade`")
    parser.add_argument("--out", default=os.path.join(REPO, "dist", "sample-export.zip"), help="export: the zip")
    parser.add_argument("--only", help="comma-separated submission names (default: all)")
    parser.add_argument("--fast", action="store_true", help="only the subset `make test` grades")
    parser.add_argument("--jobs", type=int, default=2, help="submissions graded at the same time")
    parser.add_argument("--every-part", action="store_true", help="grade every check of every part, not only a "
                                                                   "mutant's CAUGHT_BY checks in the parts that read "
                                                                   "an edited file (a cross-check of grader/parts.py)")
    parser.add_argument("--keep", action="store_true", help="keep the work folder (graded folders, logs)")
    args = parser.parse_args(argv)
    subs = submissions(args.only.split(",") if args.only else list(FAST) if args.fast else None)
    if args.command == "list":
        for sub in subs:
            print(f"{sub.kind:<8} {sub.name:<28} {sub.about}")
        return 0
    if args.command == "export":
        os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
        print(f"{sample_export(subs, args.out)}: the solutions, the stubs and {len(subs)} self-test submission(s); "
              f"`make regrade EXPORT={os.path.relpath(args.out)}` grades them")
        return 0
    began = time.monotonic()
    test = SelfTest()
    rows = grade_all(test, subs, args.jobs, args.every_part)
    print(table(rows))
    print("\n" + summary(rows, time.monotonic() - began) + f"; work folder {test.workdir}")
    if not args.keep:
        shutil.rmtree(test.workdir, ignore_errors=True)
    return 0 if all(not p for _, _, p in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
