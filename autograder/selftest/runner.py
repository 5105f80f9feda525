"""Self-test of the hidden autograder: grade broken and hostile submissions and check what it answers.

    python -m autograder.selftest.runner                          # every case (make selftest runs it via pytest)
    python -m autograder.selftest.runner --cases deadlock,os-exit
    python -m autograder.selftest.runner repeat 20                 # make grade-repeat N=20
    python -m autograder.selftest.runner write --cases jail-walk --into DIR   # a case's submission, to grade elsewhere

Every case of ``cases.py`` is a submission made at test time from the reference (or the stubs) by one small
edit. The autograder's source folder is built once; each case is graded by the one grading entry point
(``grade.grade``: Gradescope's run_autograder) in a folder laid out like Gradescope's /autograder
(source/, submission/, results/). The reference pass is computed once, by the first grading of the
solutions, and reused (run_autograder's MINDDP_REFERENCE_CACHE). Deadlines are
the grader's own (derived from the reference's time in the same run): nothing here shortens them. For
every case the runner checks:

* the grader exited 0 and left no process behind (neither its own nor any of the student uid it used);
* results.json is valid (score, tests with name/score/max_score/status/output, each output < 100,000
  characters, score = the sum of the tests' scores) and lists the same tests as the solutions' run;
* the expectation: which parts score 0, which keep full marks (graded independently), the score range,
  the substrings the messages must contain, and any case-specific check (isolation, tampering).

``repeat N`` grades the solutions N times with the full pipeline (reference pass included) and reports
whether the results were identical and the min / median / max time.
"""

from __future__ import annotations

import argparse
import ast
import os
import shutil
import statistics
import sys
import tempfile
import textwrap
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace

from autograder.assemble import build_source, student_files, student_paths
from autograder.grade import SYSTEM_PATH, Graded, InContainer, Limits, grade, lay_out
from autograder.limits import hogs, stop_hogs
from autograder.selftest.cases import CASES
from autograder.selftest.kinds import AT_END, FULL_REST, Case, Function
from grader.parts import PART_ORDER, in_scope, parts_reading

HERE = os.path.dirname(os.path.abspath(__file__))
AUTOGRADER = os.path.dirname(HERE)
REPO = os.path.dirname(AUTOGRADER)

DOCKER_IMAGE = os.path.join(REPO, "dist", "gradescope-image")  # the docker configuration's image, kept between runs


def docker_room(image: str = DOCKER_IMAGE):
    """The docker configuration (sim.py): its image, setup.sh run in it (or kept from an earlier run)."""
    from autograder import sim
    return sim.gradescope_image(image, torch_index=os.environ.get("TORCH_INDEX_URL"))


def files_by_part() -> dict[str, str]:
    """{part: its student file's path}, as grader/parts.py's functions take it."""
    return {str(f.part): f.path for f in student_files()}


# -- making a submission -----------------------------------------------------------------------------------

def replace_function(text: str, path: str, edit: Function, case: str) -> str:
    """``text`` with the function ``edit.qualname`` (decorators included) replaced by ``edit.source``."""
    scope, node = ast.parse(text).body, None
    for name in edit.qualname.split("."):
        node = next((n for n in scope if isinstance(n, (ast.FunctionDef, ast.ClassDef)) and n.name == name), None)
        if node is None:
            raise ValueError(f"case {case}: {path} has no {edit.qualname}; update the case to the current reference")
        scope = node.body
    lines = text.splitlines(keepends=True)
    first = min([node.lineno] + [d.lineno for d in node.decorator_list]) - 1
    indent = " " * node.col_offset
    new = textwrap.indent(textwrap.dedent(edit.source).strip("\n") + "\n", indent)
    return "".join(lines[:first]) + new + "".join(lines[node.end_lineno:])


def apply_edits(text: str, path: str, edits: list, case: str) -> str:
    for edit in edits:
        if isinstance(edit, Function):
            text = replace_function(text, path, edit, case)
            continue
        old, new = edit
        if old is AT_END:
            text += new
            continue
        count = text.count(old)
        if count != 1:
            raise ValueError(f"case {case}: the edit anchor {old[:60]!r} occurs {count} times in {path} "
                             "(expected once); update autograder/selftest/cases.py to the current reference")
        text = text.replace(old, new)
    return text


def make_submission(case: Case, into: str) -> str:
    """The case's submission folder: the student files of solutions/ (or assignment/), edited."""
    root = os.path.join(REPO, "solutions" if case.start == "solutions" else "assignment")
    unknown = set(case.edits) - set(student_paths())
    if unknown:
        raise ValueError(f"case {case.name}: edits files students do not submit: {sorted(unknown)}")
    for path in student_paths():
        source = os.path.join(root, path)
        if not os.path.exists(source) or (path in case.edits and case.edits[path] is None):
            continue  # answers.py before Part 6 existed, or a file the case leaves out
        with open(source, encoding="utf-8") as f:
            text = f.read()
        edit = case.edits.get(path)
        if callable(edit):  # a whole file made when the case is graded (costly to make: not at import)
            edit = edit()
        if isinstance(edit, str):
            text = edit
        elif edit:
            text = apply_edits(text, path, edit, case.name)
        target = os.path.join(into, path)
        os.makedirs(os.path.dirname(target) or into, exist_ok=True)
        with open(target, "w", encoding="utf-8") as f:
            f.write(text)
    return into


def scoped(case: Case) -> Case:
    """The case as graded. One built on the solutions, with no exact score expected, skips the parts graded
    before the first one that reads a file it edits (grader/parts.py, ``--parts``): they run only the
    solutions' files, before any of the case's code has run, so they grade as the solutions' did (the
    ``solutions`` case shows how). A case that expects something of one of those parts is graded whole."""
    if case.parts is not None or case.start != "solutions" or case.score is not None or not case.edits:
        return case
    reach = parts_reading(case.edits, files_by_part())
    skipped = PART_ORDER[:PART_ORDER.index(reach[0])] if reach else ()
    if not skipped or set(skipped) & {*(z.split(".")[0] for z in case.zero), *case.says}:
        return case
    return replace(case, parts=PART_ORDER[len(skipped):])


# -- checking the expectation --------------------------------------------------------------------------------

def part_of(test: dict) -> str:
    """"3.10" -> "3", "A.2" -> "A"."""
    return str(test.get("number", "?")).split(".")[0]


def meant(test: dict, items) -> bool:
    """Whether a case's ``zero`` or ``full`` names ``test``: by its part ("B") or by its check ("B.1", which
    holds its hidden twin "B.1h" too)."""
    number = str(test.get("number", "?"))
    return part_of(test) in items or number.removesuffix("h") in items


def graded_in(test: dict, case: Case) -> bool:
    """Whether a grading of ``case`` (its ``parts`` and ``checks``; None: all, as Gradescope) lists ``test``;
    the integrity report (part 0) is in every grading."""
    return part_of(test) == "0" or in_scope(str(test.get("number")), case.parts, case.checks)


def is_isolated(results: dict) -> bool:
    return "no isolation" not in results.get("output", "")


def schema_problems(results: dict) -> list[str]:
    """What Gradescope would reject (grader.results: the one implementation of its specification)."""
    from grader.results import gradescope_problems
    return gradescope_problems(results)


def withdrawn_problems(results: dict) -> list[str]:
    """Messages that claimed what the recorded run does not show (checks/claims.py withdrew the claim): a
    comparison's explanation that is wrong about this submission, whatever else the case expects."""
    from checks.claims import WITHDRAWN
    return [f"test {t.get('number')}'s message made a claim that the record of the run does not show: "
            f"{t['output'][t['output'].index(WITHDRAWN):][:300]!r}"
            for t in results.get("tests", []) if WITHDRAWN in t.get("output", "")]


def expectation_problems(case: Case, results: dict, baseline: dict | None) -> list[str]:
    """What ``results`` gets wrong about ``case``'s expectation (``baseline``: the solutions' results)."""
    problems = []
    tests = results.get("tests", [])
    if baseline is not None:
        want = [(t["number"], t["name"]) for t in baseline["tests"] if graded_in(t, case)]
        have = [(t.get("number"), t.get("name")) for t in tests]
        if have != want:
            missing = [w for w in want if w not in have]
            problems.append(f"the tests differ from the solutions' run (missing: {missing[:5]})")
    full_score = {t["number"]: t["score"] for t in baseline["tests"]} if baseline else {}
    zero = [t for t in tests if meant(t, case.zero)]
    full = [t for t in tests if t not in zero and (case.full == FULL_REST or meant(t, case.full))]
    for item in case.zero:
        scored = [f"{t['number']} ({t['score']})" for t in tests if meant(t, (item,)) and t.get("score")]
        if scored:
            problems.append(f"part {item} must score 0, but these tests scored: {', '.join(scored)}")
    for part in sorted({part_of(t) for t in full}):
        lost = [t for t in full if part_of(t) == part and (t.get("status") != "passed" or
                                                           t.get("score") != full_score.get(t["number"], t.get("score")))]
        for t in lost[:3]:
            first = (t.get("output", "").strip().splitlines() or [""])[0][:300]
            problems.append(f"part {part} must keep full marks (graded independently), but test {t['number']} "
                            f"{t['status']} with {t['score']}: {first}")
    if case.score is not None:
        low, high = case.score
    else:
        low = sum(full_score.get(t["number"], 0) for t in full)
        high = low + sum(full_score.get(t["number"], 0) for t in tests if t not in full and t not in zero)
    if not low - 1e-3 <= results.get("score", -1) <= high + 1e-3:  # scores are rounded to 4 places
        problems.append(f"score {results.get('score')} is outside the expected range [{low}, {high}]")
    for where, text in case.says.items():
        if where == "top":
            outputs = [results.get("output", "")]
        else:
            outputs = [t.get("output", "") for t in tests if part_of(t) == where]
            if not outputs:
                continue  # a part that does not exist (yet): nothing to say
        if not any(text in o for o in outputs):
            sample = next((o for o in outputs if o.strip()), "(all empty)")
            problems.append(f"no {'top-level' if where == 'top' else 'part ' + where} output contains {text!r}; "
                            f"one reads: {sample.strip()[:300]!r}")
    if case.check is not None:
        problems += case.check(results, is_isolated(results))
    return problems


def hidden_entry_problems(results: dict) -> list[str]:
    """Every hidden entry ("N.Mh") says one of the texts of grader/hidden_words.py's fixed words (nothing the
    student's code chose: no class name, message, count or time), and nothing carries a time measured after
    a hidden run (no execution_time, top-level or per test: SECURITY.md). Held for every grading."""
    from checks.registry import public_checks
    from grader.hidden_words import matches
    checks, file_of = {c.number: c for c in public_checks()}, files_by_part()
    problems = [f"results.json has a top-level {key}, measured after the hidden runs" for key in ("execution_time",)
                if key in results]
    for test in results.get("tests", []):
        number, text = str(test.get("number", "")), test.get("output", "")
        if "execution_time" in test:
            problems.append(f"test {number} has an execution_time")
        if number.endswith("h") and not matches(checks[number[:-1]], text, file_of):
            problems.append(f"hidden entry {number} says what the grader's fixed words cannot: {text[:300]!r}")
    return problems


# -- running cases -------------------------------------------------------------------------------------------

@dataclass
class Outcome:
    case: Case
    graded: Graded
    problems: list[str]
    folder: str = ""  # where it was graded (submission/, results/, grader.log)

    @property
    def passed(self) -> bool:
        return not self.problems

    @property
    def score(self) -> float | None:
        return self.graded.results.get("score") if self.graded.results else None


class SelfTest:
    """Builds the autograder's source once; grades submissions against one reference pass."""

    def __init__(self, workdir: str | None = None, python: str = sys.executable, limits: Limits = Limits(),
                 room=None):
        self.workdir = workdir or tempfile.mkdtemp(prefix="minddp-selftest-")
        self.room = room  # sim.Docker: each grading in a fresh container from its image (with its Python)
        self.python, self.limits = (room.python if room else python), limits
        # The jail tree: the image's (setup.sh built it around the venv), or one kept beside this checkout's
        # venv for every grading of this self-test (hard links on its file system, built once).
        self.jail = room.jail if room else os.path.join(self.workdir, "jail")
        self.source = build_source(os.path.join(self.workdir, "source"))
        self.cache = os.path.join(self.workdir, "reference-cache.json")
        self.baseline: dict | None = None
        self._lock = threading.Lock()
        self._count = 0

    def folder(self, name: str) -> str:
        with self._lock:
            self._count += 1
            path = os.path.join(self.workdir, f"{self._count:02d}-{name}")
        os.makedirs(path)
        return path

    def grade_in(self, folder: str, cache: str | None, case: Case | None = None) -> Graded:
        """Grade ``folder``/submission (the caller wrote it) in ``folder`` laid out like /autograder, through the
        one grading entry point: here, or in a fresh container from this self-test's image."""
        lay_out(folder, self.source)
        room, env = None, None
        if self.room is not None:  # the folder (and the cache beside it) at their own paths inside
            shared = os.path.commonpath([folder, *([os.path.dirname(cache)] if cache else [])])
            room = InContainer(self.room.image, binds=[(shared, shared)], report=(folder, folder))
            env = {"PATH": SYSTEM_PATH, "LANG": "C.UTF-8", "HOME": "/root"}
        args: list[str] = []
        if case is not None:
            for flag, values in (("--parts", case.parts), ("--checks", case.checks)):
                if values is not None:
                    args += [flag, ",".join(values)]
            if case.time_limit_s is not None:
                args += ["--time-limit-s", str(case.time_limit_s)]
        return grade(folder, room=room, env=env, python=self.python, grader_args=tuple(args), reference_cache=cache,
                     jail=self.jail, limits=self.limits, log_path=os.path.join(folder, "grader.log"))

    def copy_cache(self, folder: str) -> str:
        """Each grading its own copy of the reference cache: nothing can spoil the next one's."""
        cache = self.cache + ".copy-" + os.path.basename(folder)
        if os.path.exists(self.cache):
            shutil.copyfile(self.cache, cache)
        return cache

    def grade_case(self, case: Case, cached: bool = True) -> Outcome:
        case = scoped(case)
        folder = self.folder(case.name)
        make_submission(case, os.path.join(folder, "submission"))
        cache = self.copy_cache(folder) if cached else None
        graded = self.grade_in(folder, cache, case)
        if cached and os.path.exists(cache):
            if not os.path.exists(self.cache):
                shutil.copyfile(cache, self.cache)  # the first grading computed the reference pass
            os.remove(cache)  # ~30 MB per grading: a CI run grades 130 times, and pytest keeps three runs' folders
        problems = list(graded.problems)
        if graded.results is not None:
            problems += schema_problems(graded.results) + withdrawn_problems(graded.results) + \
                hidden_entry_problems(graded.results)
            if self.baseline is None and case.name == "solutions":
                self.baseline = graded.results  # the expected score of every test, and the list of tests
            if not problems:
                problems += expectation_problems(case, graded.results, self.baseline)
        return Outcome(case, graded, problems, folder)

    def run(self, cases: list[Case], jobs: int = 1, solutions_runs: int = 1) -> tuple[list[Outcome], list[Outcome]]:
        """Grade the solutions first (the reference pass and the baseline), then ``cases`` on ``jobs`` threads.
        ``solutions_runs=0`` reuses the baseline of an earlier ``run`` (if there was one).

        Returns (the case outcomes in ``cases`` order, every grading of the solutions)."""
        solutions = next(c for c in CASES if c.name == "solutions")
        if solutions_runs == 0 and self.baseline is None:
            solutions_runs = 1  # nothing to reuse yet
        first = [self.grade_case(solutions)] if solutions_runs else []
        repeats = [solutions] * (solutions_runs - 1)
        # The cases that wait out deadlines (a hang, a sleep) all start at once, in slots of their own beside the
        # ``jobs`` that fill the CPUs meanwhile: waiting for a deadline needs no CPU, so it need not hold a job's.
        # (Two of them spin a core until stopped: the other gradings run slower then, and must grade the same,
        # as under `make limits`.)
        todo = [c for c in cases if c.name != "solutions"] + repeats
        waiting = sum(c.waits for c in todo)
        with ThreadPoolExecutor(max_workers=max(1, waiting)) as wait_pool, \
                ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
            futures = [(wait_pool if c.waits else pool).submit(self.grade_case, c) for c in todo]
            done = [f.result() for f in futures]
        outcomes = {c.name: o for c, o in zip(todo, done, strict=True)}
        if first:
            outcomes["solutions"] = first[-1]
        runs = first + done[len(todo) - len(repeats):]
        return [outcomes[c.name] for c in cases], runs


def comparable(results: dict | None) -> dict | None:
    """results.json without what may differ between identical gradings (times, the uid it picked)."""
    if results is None:
        return None
    return {k: v for k, v in results.items() if k != "extra_data"}


def determinism_problems(runs: list[Outcome]) -> list[str]:
    first = comparable(runs[0].graded.results)
    problems = []
    for i, run in enumerate(runs[1:], start=2):
        other = comparable(run.graded.results)
        if other != first:
            diff = [t["number"] for t, u in zip((first or {}).get("tests", []), (other or {}).get("tests", []), strict=False)
                    if t != u]
            problems.append(f"grading {i} of the solutions differs from grading 1 (score {run.score} vs "
                            f"{runs[0].score}; tests differing: {diff or 'top-level fields'})")
    return problems


def table(outcomes: list[Outcome]) -> str:
    rows = [f"{'case':<22} {'expected':<34} {'score':>6} {'time':>6}  verdict",
            f"{'-' * 22} {'-' * 34} {'-' * 6} {'-' * 6}  {'-' * 7}"]
    for o in outcomes:
        c = o.case
        if c.score is not None and c.score[0] == c.score[1]:
            expected = f"score {c.score[0]}"
        else:
            zero = f"0 on {','.join(c.zero)}" if c.zero else ""
            full = ("rest full" if zero else "all parts full") if c.full == FULL_REST else \
                f"full on {','.join(c.full)}" if c.full else ""
            expected = ", ".join(p for p in (zero, full) if p)
        if c.check is not None:
            expected = (expected + " +check").strip()
        if c.parts is not None and c.parts != PART_ORDER:
            expected = f"[{c.parts[0]}-{c.parts[-1]}] {expected}"  # the parts graded (``scoped``)
        score = "-" if o.score is None else f"{o.score:g}"
        verdict = "PASS" if o.passed else "FAIL"
        rows.append(f"{c.name:<22} {expected:<34} {score:>6} {o.graded.seconds:5.1f}s  {verdict}")
        rows += [f"{'':<22}   - {p}" for p in o.problems]
    return "\n".join(rows)


def repeat(n: int, use_cache: bool, python: str = sys.executable) -> int:
    """Grade the solutions ``n`` times in a row; report identical results and min / median / max time."""
    test = SelfTest(python=python)
    solutions = next(c for c in CASES if c.name == "solutions")
    runs = []
    for i in range(n):
        outcome = test.grade_case(solutions, cached=use_cache)
        runs.append(outcome)
        print(f"grading {i + 1}/{n}: score {outcome.score} in {outcome.graded.seconds:.1f} s"
              f"{'' if outcome.passed else '  PROBLEMS: ' + '; '.join(outcome.problems)}", flush=True)
    times = [r.graded.seconds for r in runs]
    scores = {r.score for r in runs}
    problems = determinism_problems(runs)
    print(f"\n{n} gradings of the solutions (reference pass "
          f"{'cached after the first' if use_cache else 'in every grading'}): scores "
          f"{'identical' if len(scores) == 1 else 'DIFFER'} {sorted(scores, key=str)}; results.json "
          f"{'identical' if not problems else 'DIFFER'} (ignoring extra_data); time min "
          f"{min(times):.1f} s, median {statistics.median(times):.1f} s, max {max(times):.1f} s")
    for p in problems:
        print("  " + p)
    ok = len(scores) == 1 and not problems and all(r.passed for r in runs)
    if ok:
        shutil.rmtree(test.workdir, ignore_errors=True)
    else:
        print(f"work folder kept: {test.workdir}")
    return 0 if ok else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m autograder.selftest.runner", description=__doc__.splitlines()[0])
    parser.add_argument("command", nargs="?", default="cases", choices=["cases", "repeat", "list", "write"])
    parser.add_argument("n", nargs="?", type=int, default=20, help="repeat: how many gradings")
    parser.add_argument("--into", help="write: the folder to write the submission of --cases (one case) into, for "
                                       "another front door to grade (make limits: gradescope-sim)")
    parser.add_argument("--cases", help="comma-separated case names (default: all)")
    parser.add_argument("--jobs", type=int, default=1, help="cases graded at the same time")
    parser.add_argument("--solutions-runs", type=int, default=1, help="grade the solutions this many times "
                        "and require identical results")
    parser.add_argument("--cache", action="store_true", help="repeat: reuse the first reference pass")
    parser.add_argument("--keep", action="store_true", help="keep the work folder (graded folders, logs)")
    parser.add_argument("--python", default=sys.executable, help="the Python that runs the grader (and so the "
                        "workers)")
    parser.add_argument("--cpus", type=float, help="grade each case in a cgroup of this many CPUs (root; e.g. "
                        "0.25: a quarter of Gradescope's half vCPU machine)")
    parser.add_argument("--memory-mb", type=int, help="with --cpus: the cgroup's memory limit as well")
    parser.add_argument("--hog", type=int, default=0, help="processes spinning on the CPU beside the gradings")
    parser.add_argument("--config", choices=["privileged", "docker"], default="privileged",
                        help="privileged: grade on this machine as root (every capability); docker: each grading in "
                             "a fresh container with Docker's defaults, as on Gradescope (sim.py, --image)")
    parser.add_argument("--image", default=DOCKER_IMAGE, help="--config docker: the image (setup.sh run in it once, "
                                                              "kept for the next run)")
    args = parser.parse_args(argv)
    if args.command == "list":
        for case in CASES:
            print(f"{case.name:<22} {case.about}")
        return 0
    if args.command == "repeat":
        return repeat(args.n, args.cache, args.python)
    if args.command == "write":
        case = next((c for c in CASES if c.name == args.cases), None)
        if case is None or not args.into:
            parser.error("write: --cases NAME (one case) and --into FOLDER")
        print(make_submission(case, args.into))
        return 0
    names = args.cases.split(",") if args.cases else [c.name for c in CASES]
    unknown = set(names) - {c.name for c in CASES}
    if unknown:
        parser.error(f"unknown cases {sorted(unknown)}; see `run.py list`")
    cases = [c for c in CASES if c.name in names]
    room = docker_room(args.image) if args.config == "docker" else None
    test = SelfTest(python=args.python, limits=Limits(args.cpus, args.memory_mb), room=room)
    began = time.monotonic()
    spinning = hogs(args.hog)
    try:
        outcomes, runs = test.run(cases, jobs=args.jobs, solutions_runs=args.solutions_runs)
    finally:
        stop_hogs(spinning)
        if room is not None:
            room.close()
    print(table(outcomes))
    problems = [f"DETERMINISM: {p}" for p in determinism_problems(runs)]
    for p in problems:
        print(p)
    hostile = [o for o in outcomes if o.case.hostile]
    if hostile:
        worst = max(hostile, key=lambda o: o.graded.seconds)
        print(f"\nworst hostile case: {worst.case.name}, {worst.graded.seconds:.1f} s; whole self-test "
              f"{time.monotonic() - began:.0f} s; work folder {test.workdir}")
    if not args.keep:
        shutil.rmtree(test.workdir, ignore_errors=True)
    return 0 if all(o.passed for o in outcomes) and not problems else 1


if __name__ == "__main__":
    sys.exit(main())
