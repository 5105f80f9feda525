"""The grading run, top to bottom (``run_autograder`` calls ``main``); SECURITY.md says who runs what.

1. A fallback results.json (score 0, a message) first, so no crash ever leaves Gradescope with nothing.
2. Isolation: as root, student code runs only in jails (``sandbox.py``); when they cannot be set up the
   grading stops with "autograder error: isolation unavailable" (it never grades as root without them).
3. Staging (``stage.py``): the release plus exactly the files students edit, regular files only.
4. Static checks (``static.py``): each file compiles and uses none of torch's DDP machinery; the
   integrity report for staff.
5. Reference pass (``reference.py``): every reference call of every check, public and hidden inputs, on
   the reference solution or torch, in trusted workers that never see student code; each call's time is
   kept. setup.sh computes it when the image is built; a grading reuses it once it has checked that this
   machine reproduces it bit for bit (else it computes it again).
6. Student pass, part by part (1, 2, 3, 4, 5, 6, A, B): each check's runs (``checks/part*.py`` and
   ``hidden.py``) on the student's code in fresh jailed workers, with a torch stand-in
   (``standins.py``) for an earlier part whose file failed; a run's deadline comes from the
   reference's time for the same call (``checks.deadline_s``), never from a fixed number of seconds.
7. Every student process is killed and checked gone; results.json is written atomically.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sys
import tempfile
import time
import traceback
from collections import Counter
from dataclasses import dataclass, field

HERE = os.path.dirname(os.path.abspath(__file__))

from checks.check import WARM_UP, Check, Outcome, Run, candidate_kwargs, deadline_s, judge, message  # noqa: E402
from checks.feedback import scenario_failure  # noqa: E402
from checks.local import LaunchFailed  # noqa: E402
from checks.pool import ForkServer, ScenarioError, WorkerPool  # noqa: E402
from checks.registry import public_checks  # noqa: E402
from grader import grader_version, jailtree, sandbox, settings, version  # noqa: E402
from grader.hidden import HIDDEN, RANDOM_LABEL  # noqa: E402
from grader.hidden_words import NOT_RUN, hidden_message, substitution_note  # noqa: E402
from grader.isolation import Isolation  # noqa: E402
from grader.parts import DEPENDS, PART_ORDER, bonus_work, in_scope  # noqa: E402
from grader.reference import CACHE_NAME, ReferencePass  # noqa: E402
from grader.results import TestResult, write_fallback, write_results  # noqa: E402
from grader.stage import read_upload, stage  # noqa: E402
from grader.standins import standin_text, untrapped  # noqa: E402
from grader.static import check_file, integrity_findings  # noqa: E402
from grader.zygote import GradingPool, LaunchPool, StorePool  # noqa: E402

TIMEOUTS_BEFORE_GIVING_UP = 2  # per part (the bonus parts count as one): code that hangs must not take 10 minutes
PART_BUDGET_FLOOR_S, PART_BUDGET_FACTOR = 60.0, 10.0  # ... nor code that is merely slow: a part's time budget
WORKER_MAX_RSS_MB = 450  # student workers, at least; Gradescope gives 768 MB to everything
MEMORY_FACTOR = 1.5  # ... or this times what a reference worker needed for the same run, if that is more
WORKER_MAX_OUTPUT_MB = 32
STAFF_FAILURE_CHARS = 3000  # of each hidden failure's whole message, in the staff-only entry
FALLBACK = "The autograder stopped before it could grade this submission. Please tell the course staff."
with open(os.path.join(HERE, "torchrun_env.json"), encoding="utf-8") as _f:
    TORCHRUN_ENVS = json.load(_f)  # what torchrun gives each rank (grader/torchrun_env.py captured it)


@dataclass
class Variant:
    """A code folder a check runs on: the student's files, with stand-ins for ``standins`` (paths)."""

    name: str
    folder: str
    standins: list[str] = field(default_factory=list)


class Grader:
    def __init__(self, source: str, submission: str, workdir: str, layers: sandbox.Layers | None,
                 parts: tuple[str, ...] = PART_ORDER, checks: tuple[str, ...] | None = None, tree: str = ""):
        self.source, self.workdir, self.layers, self.tree = source, workdir, layers, tree
        self.parts = parts  # staff tools may grade fewer (``--parts``); Gradescope grades them all
        self.only = checks  # ... or fewer checks (``--checks``, grader/parts.py's in_scope)
        # Student workers read the harness and the staged code through read-only mounts: copies in the work
        # folder (root's, 0700) with modes they can read, whatever setup.sh did to the source folder.
        self.harness = os.path.join(workdir, "harness")
        shutil.copytree(os.path.join(source, "harness"), self.harness, ignore=shutil.ignore_patterns("__pycache__"))
        readable_by_all(self.harness)
        self.reference_dir = os.path.join(source, "reference")
        self.skeleton = os.path.join(source, "skeleton")
        sys.path.insert(0, self.skeleton)
        from course import load_student_files  # the release's one reader of student_files.json
        self.files = load_student_files(os.path.join(self.skeleton, "student_files.json"))
        self.file_of = {str(f.part): f for f in self.files}
        self.checks = public_checks()
        self.upload = read_upload(submission)
        self.staged = stage(self.upload, self.skeleton, [f.path for f in self.files], workdir)
        readable_by_all(self.staged.student_dir)
        self.release = version.ours(self.skeleton), version.theirs(self.upload)
        self.broken: dict[str, str] = {}  # student file -> why it cannot be graded
        self.integrity: list[str] = []
        self.notes: list[str] = []
        self.reference: ReferencePass | None = None
        self.cache: dict[tuple[str, str], list] = {}  # (variant, run key) -> the student's result
        # Only runs that several checks make (Part 6's answers) are kept in the cache; any other result is dropped
        # once judged (the largest are tens of MB, and the grader shares 768 MB with the workers).
        made = Counter(run.key() for check in self.checks for runs in self.runs_of(check).values() for run in runs)
        self.rerun = {key for key, count in made.items() if count > 1}
        self.part_failed: dict[str, bool] = {}
        self.timeouts: dict[str, int] = {}
        self.import_hangs: dict[str, str] = {}  # part -> the student file that never finished importing
        self.public_timeouts: set[str] = set()  # checks whose public runs missed a deadline (their hidden ones are not run)
        self.hidden_failures: list[str] = []  # "N.Mh: the whole message", for staff only
        self.hidden_ran: list[str] = []  # "N.Mh: passed: its runs' labels": what a hidden entry does not show, for staff
        self.spent: dict[str, float] = {}  # seconds each part's checks took so far
        self.budgets: dict[str, float] = {}  # part -> its time budget (from the reference's times, carved from the whole)
        self.deadline = float("inf")  # time.monotonic() by which the student pass must be over (``main``)
        self.scaled = False  # the parts' budgets were scaled down to fit the time left (``carve_budgets``)
        self.keys: dict[int, dict[str, str]] = {}  # id of a Run (all live as long as the grading) -> its keys
        self.variants: dict[str, Variant] = {}
        self.isolation: Isolation | None = None
        self.server: ForkServer | None = None

    # -- 4. static checks --------------------------------------------------------------------------------
    def static_checks(self) -> None:
        for entry in self.files:
            path = os.path.join(self.staged.student_dir, entry.path)
            if entry.path in self.staged.missing:
                self.broken[entry.path] = (f"{entry.path} was not found in your submission, so Part {entry.part} "
                                           "scores 0. Upload the zip that `make submit` builds.")
                continue
            error, banned = check_file(path, entry.path)
            if error:
                self.broken[entry.path] = f"{entry.path} does not compile, so Part {entry.part} scores 0:\n{error}"
            elif banned:
                self.broken[entry.path] = (f"{entry.path} uses torch's own DDP machinery, which this homework asks "
                                           f"you to build (handout §8, allowed APIs), so Part {entry.part} scores "
                                           "0:\n  " + "\n  ".join(banned))
            self.integrity += integrity_findings(path, entry.path)

    # -- 5. the reference pass -------------------------------------------------------------------------
    def runs_of(self, check: Check) -> dict[str, tuple[Run, ...]]:
        return {"public": tuple(check.runs), "hidden": tuple(HIDDEN.get(check.number, ()))}

    def start_server(self) -> None:
        """The grading's fork server (``zygote.py``): it forks the reference's trusted workers first, then
        the student's jailed ones, so torch is imported once per grading."""
        if self.layers is not None:
            self.isolation = Isolation(self.layers, self.tree, self.harness)
        network = self.isolation is not None and self.isolation.root == "empty"
        self.server = ForkServer(module="grader.zygote", paths=[self.harness, os.path.dirname(HERE)],
                                 env={**student_env(), "PYTHONPATH": ""}, args=("--network",) if network else (),
                                 warm_up=WARM_UP)

    def stop_server(self) -> None:
        if self.isolation is not None:
            self.isolation.end_check()  # first: stopping the server would orphan what it started
        if self.server is not None:
            self.server.stop()
        if self.isolation is not None:
            self.isolation.close()

    def reference_pass(self, cache: str, verify: bool = True) -> None:
        """Every reference call once (``reference.py``), or a cache of them this machine reproduces. Its
        workers are trusted children of the grading's fork server, all gone before any student code runs."""
        runs = [run for check in self.checks for kind in self.runs_of(check).values() for run in kind]
        self.reference = ReferencePass(runs, self.harness, self.reference_dir, trusted_env(), self.server)
        self.reference.run(cache, self.source, verify)

    def reference_of(self, run: Run) -> tuple[list | None, dict[str, list], float | None, float]:
        """(the reference's result, its results under each named mistake, seconds, peak MB of a worker)."""
        keys = self.reference_keys(run)
        if not keys:
            return None, {}, None, 0.0
        main = keys[""]
        mistakes = {text: self.reference.result(key) for text, key in keys.items() if text}
        return self.reference.result(main), mistakes, self.reference.seconds[main], self.reference.peak_mb[main]

    def reference_keys(self, run: Run) -> dict[str, str]:
        """{"" (the reference's answer) or a mistake: the key of that reference call}. Kept: a key is JSON of
        the call's arguments, and making them again for every look-up cost a grading ~2.5 CPU-s."""
        if id(run) not in self.keys:
            self.keys[id(run)] = {text: Run(run.fn, kwargs, run.world_size).key()
                                  for text, kwargs in run.reference_calls().items()}
        return self.keys[id(run)]

    # -- 6. the student pass ---------------------------------------------------------------------------------
    def student_pass(self) -> list[TestResult]:
        """Every check's public runs, part by part, then every check's hidden runs, part by part. No public run
        comes after a hidden one, so nothing a hidden run leaves behind (the pid counter, the clock, a part's
        time spent, the stand-ins it chose) can reach a public entry (SECURITY.md: hidden inputs). The entries
        are listed check by check, each public entry before its hidden twin."""
        self.carve_budgets()
        checks = [c for part in PART_ORDER if part in self.parts for c in self.checks
                  if c.part == part and in_scope(c.number, self.parts, self.only)]
        done: dict[tuple[str, str], TestResult] = {}
        for kind in ("public", "hidden"):
            self.part_failed = {}  # the public pass chooses stand-ins from public entries alone
            for part in dict.fromkeys(c.part for c in checks):
                for check in [c for c in checks if c.part == part]:
                    entry = self.grade_runs(check, kind, done.get((check.number, "public")))
                    if entry is not None:
                        done[(check.number, kind)] = entry
                self.part_failed[part] = any(e.status != "passed" for e in done.values() if e.part == part)
        return [done[(c.number, kind)] for c in checks for kind in ("public", "hidden") if (c.number, kind) in done]

    def variant(self, check: Check) -> Variant | str:
        """The code ``check`` runs on, or why it cannot run."""
        part = check.part
        own = self.file_of.get(part)
        if own is not None and own.path in self.broken:
            return self.broken[own.path]
        for work in bonus_work(check.number):
            path = self.file_of[work].path
            if path in self.broken:
                return (f"Not run: bonus {part} is graded with your own {path}, which could not be graded:\n"
                        f"{self.broken[path]}")
        replaced = sorted(self.file_of[p].path for p in DEPENDS.get(part, ())
                          if self.part_failed.get(p) or self.file_of[p].path in self.broken)
        name = "+".join(["student", *sorted(os.path.basename(p)[:-3] for p in replaced)])
        if name not in self.variants:
            folder = self.staged.student_dir
            if replaced:
                folder = os.path.join(self.workdir, name)
                shutil.copytree(self.staged.student_dir, folder)
                for path in replaced:
                    with open(os.path.join(self.skeleton, path), encoding="utf-8") as f:
                        text = standin_text(path, f.read())
                    with open(os.path.join(folder, path), "w", encoding="utf-8") as f:
                        f.write(text)
                readable_by_all(folder)
            self.variants[name] = Variant(name, folder, replaced)
        return self.variants[name]

    def grade_runs(self, check: Check, kind: str, public: TestResult | None) -> TestResult | None:
        """The entry of ``check``'s ``kind`` runs ("public" or "hidden"; None: it has none), in fresh workers.
        A hidden entry speaks only hidden_words' words; ``public`` is its public twin's entry."""
        runs = self.runs_of(check)
        if not runs[kind]:
            return None
        entry = self.entry(check, kind, bool(runs["hidden"]))
        variant = self.variant(check)
        group = "bonus" if check.bonus else check.part
        why = self.not_run(check, kind, variant, group)
        if why is not None:
            entry.output = why
            return entry
        pools: dict[int, WorkerPool] = {}
        timed_out_before = self.timeouts.get(group, 0)
        began = time.monotonic()
        try:
            failure = self.first_failure(check, runs[kind], variant, pools, group)
        finally:
            self.spent[group] = self.spent.get(group, 0.0) + time.monotonic() - began
            for pool in pools.values():
                pool.close(graceful=False)
            if self.isolation is not None:
                self.isolation.end_check()  # nothing of a check outlives it
        if kind == "public" and self.timeouts.get(group, 0) > timed_out_before:
            self.public_timeouts.add(check.number)
        note = substitution_note(variant.standins)  # after the reason: the message's first line says what differs
        if kind == "hidden":
            self.hidden_ran.append(f"{entry.number}: {'passed' if failure is None else 'failed'}: "
                                   f"{hidden_runs_text(runs[kind])}")
        if failure is None:
            entry.score, entry.status, entry.output = entry.max_score, "passed", note.strip()
        elif kind == "hidden":  # the grader's words only (settings: who sees it); the whole story is staff's
            entry.output = hidden_message(check, failure.kind, failure.label,
                                          public is not None and public.status != "passed") + note
            self.hidden_failures.append(f"{entry.number}: {failure.text}\n  (the run: {failure.config})")
        else:
            entry.output = failure.text + note
        return entry

    def not_run(self, check: Check, kind: str, variant: Variant | str, group: str) -> str | None:
        """Why ``check``'s ``kind`` runs are not attempted (None: they are). A hidden entry says it in
        hidden_words' fixed words: no number of seconds, no file's text."""
        hidden = kind == "hidden"
        if isinstance(variant, str):
            return NOT_RUN["broken"] if hidden else variant
        if hidden and check.number in self.public_timeouts:
            return NOT_RUN["public-timeout"]
        if group in self.import_hangs:
            return NOT_RUN["import-hang"] if hidden else (
                f"Not run: importing your {self.import_hangs[group]} never finished (an earlier check of this part "
                "shows where it was stuck), so the rest of this part is not attempted.")
        if self.timeouts.get(group, 0) >= TIMEOUTS_BEFORE_GIVING_UP:
            return NOT_RUN["timeouts"] if hidden else (
                f"Not run: {TIMEOUTS_BEFORE_GIVING_UP} earlier checks of this part did not finish in time (see their "
                "output), so the rest of it is not attempted.")
        if self.spent.get(group, 0.0) > self.budget(group):
            return NOT_RUN["budget"] if hidden else (
                f"Not run (time budget): the earlier checks of this part used up its time ({self.budget(group):.0f} "
                f"s{self.budget_why(group)}), so the rest of it is not attempted.")
        if self.time_left() <= 0:
            return NOT_RUN["time-up"]
        return None

    def budget(self, group: str) -> float:
        """How long a part's checks may take in all (``carve_budgets``)."""
        if group not in self.budgets:
            self.budgets[group] = self.part_budget(group)
        return self.budgets[group]

    def carve_budgets(self) -> None:
        """Each part's budget: what the reference's times say it needs (``part_budget``), unless the parts'
        needs add up to more than the time left before the grading must end: then each gets its share of that
        time, in proportion to its need, so that every part is attempted and the grading ends in time."""
        groups = list(dict.fromkeys("bonus" if c.bonus else c.part for c in self.checks
                                    if c.part in self.parts and in_scope(c.number, self.parts, self.only)))
        needs = {group: self.part_budget(group) for group in groups}
        left = self.time_left()
        scale = min(1.0, left / sum(needs.values())) if needs and sum(needs.values()) > 0 else 1.0
        self.budgets = {group: need * scale for group, need in needs.items()}
        self.scaled = scale < 1.0

    def budget_why(self, group: str) -> str:
        formula = (f"{PART_BUDGET_FLOOR_S:.0f} s plus {PART_BUDGET_FACTOR:g} times what the reference took for all "
                   "of the part's runs")
        return f": its share of the grading's time, which cannot hold {formula} for every part" \
            if self.scaled else f": {formula}"

    def time_left(self) -> float:
        return self.deadline - time.monotonic()

    def part_budget(self, group: str) -> float:
        total = 0.0
        for check in self.checks:
            if ("bonus" if check.bonus else check.part) != group:
                continue
            for runs in self.runs_of(check).values():
                for run in runs:
                    if run.fn == "launch":
                        total += 2 * self.reference.pool_start_s
                    elif run.reference_calls():
                        total += self.reference.seconds[self.reference_keys(run)[""]]
        return PART_BUDGET_FLOOR_S + PART_BUDGET_FACTOR * total

    def entry(self, check: Check, kind: str, has_hidden: bool) -> TestResult:
        share = check.public_share if has_hidden else 1.0
        weight = check.weight * (share if kind == "public" else 1.0 - share)
        label = f"Bonus {check.part}" if check.bonus else f"Part {check.part}"
        name = f"{label}: {check.name}" + (" (hidden inputs)" if kind == "hidden" else "")
        return TestResult(name, check.number + ("h" if kind == "hidden" else ""), weight, part=check.part,
                          visibility=settings.HIDDEN_VISIBILITY if kind == "hidden" else "visible",
                          extra_credit=check.bonus)

    def first_failure(self, check: Check, runs: tuple[Run, ...], variant: Variant, pools: dict,
                      group: str) -> Failed | None:
        for run in runs:
            verdict = self.verdict(check, run, variant, pools, group)
            if verdict:  # a random configuration's label names its features, never its values: shown to the student
                verdict.label = run.label if run.label.startswith(RANDOM_LABEL) else ""
                verdict.config = run.key()
                return verdict
        return None

    def verdict(self, check: Check, run: Run, variant: Variant, pools: dict, group: str) -> Failed | None:
        """None if ``run`` passes, else how it failed. (Its results, the reference's and the student's, are not
        held while the next run is made.)"""
        ref, mistakes, ref_s, ref_mb = self.reference_of(run)
        key = (variant.name, run.key())
        if key in self.cache:
            kwargs, got = self.cache[key]
        else:
            try:
                kwargs = candidate_kwargs(run, ref, ref_s)
                got = self.launch(variant, run, kwargs) if run.fn == "launch" else \
                    self.student_call(variant, run, kwargs, pools, self.run_deadline(deadline_s(ref_s)),
                                      memory_cap_mb(ref_mb))
            except (ScenarioError, LaunchFailed) as error:
                if run.advisory and self.time_left() > 0:
                    return None  # advice that could not be given: the check goes on without it
                if error.timed_out and self.time_left() <= 0:
                    going = "the launch" if isinstance(error, LaunchFailed) else "this run"
                    return Failed(message(check, run, f"Stopped (time budget): the grading's time ran out while "
                                                      f"{going} was going (it must end before Gradescope's limit)."),
                                  "stopped")
                if error.timed_out:
                    self.timeouts[group] = self.timeouts.get(group, 0) + 1
                if isinstance(error, LaunchFailed):
                    return Failed(message(check, run, str(error)), "timeout" if error.timed_out else "launch")
                if error.timed_out:
                    stuck = self.stuck_importing(error, variant)
                    if stuck:  # every later run of the part imports it again, and would hang the same way
                        self.import_hangs[group] = stuck
                return Failed(message(check, run, scenario_failure(error)), what_failed(error))
            except Exception as error:  # whatever student code made happen is its failure, not the grader's
                if run.advisory:
                    return None
                return Failed(message(check, run, f"Your code could not be run to the end ({type(error).__name__}: "
                                                  f"{str(error)[:300]})."), "crashed")
            if key[1] in self.rerun:
                self.cache[key] = (kwargs, got)
        text = judge(check, Outcome(run, got, ref, mistakes, kwargs))
        return None if text is None else Failed(text, "differ")

    def run_deadline(self, seconds: float) -> float:
        """A run's deadline, never past the grading's own (a run cut short by that says so: ``timed_out``)."""
        return max(1.0, min(seconds, self.time_left()))

    def stuck_importing(self, error: ScenarioError, variant: Variant) -> str | None:
        """The student file a timed-out rank was still importing (a module-level frame of it on the stack
        the rank's faulthandler dumped at the deadline), if any."""
        code = self.paths(variant)[0]
        for failure in error.failures:
            if failure.kind == "timeout":
                found = re.search(rf'File "{re.escape(code)}/([^"]+\.py)", line \d+ in <module>', failure.where)
                if found:
                    return found.group(1)
        return None

    def paths(self, variant: Variant) -> list[str]:
        """The workers' import folders: the variant's code, then the harness (where a jailed worker sees them)."""
        if self.isolation is None:
            return [variant.folder, self.harness]
        return self.isolation.code_paths(variant.folder, variant.name)

    def worker_setup(self, variant: Variant, **more) -> dict:
        jail = None if self.isolation is None else self.isolation.jail(variant.folder)
        return {"jail": jail, "untrapped": untrapped(variant.standins), **more}

    def fresh_scratch(self) -> None:
        if self.isolation is not None:
            self.isolation.fresh_scratch()

    def worker_env(self) -> dict[str, str]:
        return {**student_env(), **(self.isolation.env() if self.isolation else {})}

    def student_call(self, variant: Variant, run: Run, kwargs: dict, pools: dict, deadline: float,
                     cap_mb: float) -> list:
        if run.world_size not in pools:
            for size in list(pools):  # one pool alive at a time: the pools of a check share the network namespace
                pools.pop(size).close(graceful=False, reap=True)  # (its abstract sockets): one is gone before the next
            pools[run.world_size] = GradingPool(self.server, run.world_size, paths=self.paths(variant),
                                                env=self.worker_env(), setup=self.worker_setup(variant),
                                                on_start=self.fresh_scratch, max_rss_mb=WORKER_MAX_RSS_MB,
                                                max_output_mb=WORKER_MAX_OUTPUT_MB)
        pools[run.world_size].max_rss_mb = cap_mb
        return pools[run.world_size].run(run.scenario, deadline_s=deadline, **kwargs)

    def launch(self, variant: Variant, run: Run, kwargs: dict) -> list:
        """Check 1.4: tests/launch_probe.py's probe in ranks started with exactly the environment torchrun
        gives (``torchrun_env.json``), jailed like every worker; the student's init_process_group makes the
        process group. (torchrun's own agent would be a process of the student's uid free to run programs.)"""
        nproc = run.kwargs["nproc"]
        store = StorePool(self.server, 1, paths=self.paths(variant), env=self.worker_env(),
                          setup={"jail": self.isolation.store_jail() if self.isolation else None})
        pool = GradingLaunchPool(self.server, nproc, paths=self.paths(variant), env=self.worker_env(),
                                 setup=self.worker_setup(variant, launch=True), on_start=self.fresh_scratch,
                                 max_rss_mb=WORKER_MAX_RSS_MB, max_output_mb=WORKER_MAX_OUTPUT_MB)
        pool.torchrun_envs, pool.values, pool.store = TORCHRUN_ENVS[str(nproc)], kwargs["values"], store
        try:
            return pool.run_launch(self.run_deadline(deadline_s(2 * self.reference.pool_start_s)))
        finally:
            pool.close(graceful=False)
            store.close(graceful=False)

    # -- the summary ---------------------------------------------------------------------------------------
    def summary(self, entries: list[TestResult]) -> str:
        """The top-level output every student sees: the entries they can see, part by part (where settings.py
        hides the hidden inputs' entries, their scores are not summed here either)."""
        entries = [e for e in entries if e.visibility == "visible"]
        lines = ["Part                          score", "----------------------------  ------------"]
        for part in PART_ORDER:
            mine = [e for e in entries if e.part == part]
            if not mine:
                continue
            entry = self.file_of.get(part)
            label = f"Part {part}: {entry.name}" if entry else f"Bonus {part}"
            lines.append(f"{label:<28}  {sum(e.score for e in mine):5.1f} / {sum(e.max_score for e in mine):5.1f}")
        lines.append(f"{'Total (bonus is extra)':<28}  {sum(e.score for e in entries):5.1f} / "
                     f"{sum(e.max_score for e in entries if not e.extra_credit):5.1f}")
        found = ", ".join(f"{p} (from {w})" for p, w in self.staged.found.items()) or "none"
        labels = {part: f"Part {part}" if part.isdigit() else f"Bonus {part}" for part in PART_ORDER}
        release = version.note(*self.release, {**labels, "shared": "the provided code and check library"})
        return "\n".join(([release, ""] if release else []) + lines + ["", f"Files graded: {found}", *self.staged.problems,
                                  *[f"Note: {m.splitlines()[0]}" for m in self.broken.values()], *self.notes,
                                  f"Graded by {grader_version.describe(self.source)}."])

    def integrity_entry(self) -> TestResult:
        entry = TestResult("Integrity report (staff only)", "0.1", 0.0, part="0", visibility="hidden", status="passed")
        entry.output = grader_version.describe(self.source) + "\n\n"  # which grader graded: CHANGELOG.md names it
        entry.output += ("Constructs in the student's files that deserve a look (not a verdict):\n  "
                         + "\n  ".join(self.integrity)) if self.integrity else "Nothing unusual found."
        if self.hidden_ran:  # a passed hidden entry shows students nothing of what ran: staff see it here
            entry.output += "\n\nHidden inputs run (entry: verdict: runs):\n  " + "\n  ".join(self.hidden_ran)
        if self.hidden_failures:  # what the students' hidden entries do not show: to answer a regrade request
            entry.output += ("\n\nHidden inputs failed, as the student's code and the reference gave them:\n"
                             + "\n".join(clip_text(f, STAFF_FAILURE_CHARS) for f in self.hidden_failures))
        entry.output += "\n\n" + (self.isolation.describe(uid=False) if self.isolation else "isolation: none (not root)")
        return entry


class GradingLaunchPool(LaunchPool, GradingPool):
    pass


@dataclass
class Failed:
    """How a check's run failed: ``text``, the whole message (a public entry's, and staff's); ``kind``, a key of
    hidden_words.FAILURES (a hidden entry says that and nothing else of it), and ``label``, the random
    configuration that failed (its label: features, never values), if it was one."""

    text: str
    kind: str
    label: str = ""
    config: str = ""  # the run's whole configuration (its key), for staff only


def what_failed(error: ScenarioError) -> str:
    """A scenario's failure, by kind only (a key of hidden_words.FAILURES): nothing the student's code chose,
    not even the name of the exception it raised."""
    first = next((f for kind in ("memory", "output", "raised", "exited", "garbled", "timeout")
                  for f in error.failures if f.kind == kind), error.failures[0])
    return first.kind if first.kind in ("memory", "output", "raised", "exited", "garbled", "timeout") else "failed"


def hidden_runs_text(runs: tuple[Run, ...]) -> str:
    """Staff only: how many runs a hidden entry made, and their labels (a TA who adds one sees it ran)."""
    labels = list(dict.fromkeys(run.label or run.fn for run in runs))
    return f"{len(runs)} run{'s' if len(runs) != 1 else ''} ({'; '.join(labels)})"


def clip_text(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + " ... (cut)"


def memory_cap_mb(reference_peak_mb: float) -> float:
    """A student worker's memory cap for a run: never below what the reference itself needed (a CUDA build of
    torch, say, needs more for everyone), so that nothing on the staff side can zero a whole class."""
    return max(WORKER_MAX_RSS_MB, MEMORY_FACTOR * reference_peak_mb)


# -- environments and folders ---------------------------------------------------------------------------------

def student_env() -> dict[str, str]:
    """All that student code sees of the environment (nothing of the grader's)."""
    return {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": "/tmp", "TMPDIR": "/tmp", "LANG": "C.UTF-8",
            "USER": "student", "LOGNAME": "student", "PYTHONNOUSERSITE": "1", "PYTHONDONTWRITEBYTECODE": "1",
            "TORCH_CPP_LOG_LEVEL": "ERROR"}  # c10d's warnings (no hostname in a jail) would only be noise


def trusted_env() -> dict[str, str]:
    return {**student_env(), "PYTHONPATH": ""}


def readable_by_all(path: str) -> None:
    for root, _dirs, files in os.walk(path):
        os.chmod(root, 0o755)
        for name in files:
            os.chmod(os.path.join(root, name), 0o644)


def isolation(notes: list[str]) -> sandbox.Layers | None | str:
    """The layers student code runs in; None: not root, so none are possible or needed (a staff member's
    ``make grade``); a string: root, but not even a uid of its own is possible (why): student code must not run."""
    if os.geteuid() != 0:
        notes.append("Note: not running as root, so student code ran as this user (no isolation; on Gradescope "
                     "the autograder always isolates it).")
        return None
    return sandbox.isolation_layers()


def close_to_others(source: str) -> None:
    """The grader's own files (the reference, the hidden inputs, the reference cache) are root's alone before
    any student code runs, whatever setup.sh or a copy did to their modes; refuse to grade otherwise."""
    os.chmod(source, 0o700)
    st = os.stat(source)
    if st.st_uid != 0 or st.st_mode & 0o077:
        raise sandbox.SandboxError(f"{source} is not root's alone (owner {st.st_uid}, mode {st.st_mode & 0o777:o})")


def reference_only(source: str, cache: str) -> int:
    """setup.sh: the reference pass, computed once when the image is built, into ``cache``."""
    runs = [run for check in public_checks() for run in (*check.runs, *HIDDEN.get(check.number, ()))]
    reference = ReferencePass(runs, os.path.join(source, "harness"), os.path.join(source, "reference"),
                              trusted_env())
    cwd = os.getcwd()
    workdir = tempfile.mkdtemp(prefix="minddp-reference-")
    try:
        os.chdir(workdir)  # the workers' working folder, as in a grading
        reference.run(cache, source)
    finally:
        os.chdir(cwd)
        sandbox.remove_tree(workdir)
    print(f"reference pass: {len(reference.seconds)} calls, {reference.how}; cache: {cache}")
    return 0


def map_large_blocks() -> None:
    """Every block of 1 MB or more gets a mapping of its own, given back to the system when it is freed.
    glibc's default raises that threshold to the size of the largest block freed (up to 32 MB), so the
    grader's large transient buffers (a cached result of 25 MB, a worker's reply of 8 MB, their base64 text)
    end in a heap that does not shrink: ~50 MB more at the peak of a grading. From 128 kB instead of 1 MB it
    saves no more, and costs the grader a fifth more CPU."""
    import ctypes
    try:
        ctypes.CDLL(None).mallopt(-3, 2**20)  # M_MMAP_THRESHOLD (glibc)
    except AttributeError:
        pass  # another C library, other rules


def arguments(argv: list[str] | None) -> tuple[argparse.Namespace, tuple, tuple | None]:
    """The command line (run_autograder's, setup.sh's, staff tools'): (args, parts graded, checks graded)."""
    parser = argparse.ArgumentParser(prog="python -m grader")
    parser.add_argument("--source", required=True, help="the autograder source folder")
    parser.add_argument("--submission", help="a folder or a .zip")
    parser.add_argument("--results", help="where results.json goes")
    parser.add_argument("--reference-cache", help=f"staff tools: the reference pass made on this machine, by this "
                                                  f"grader, in this session (used without canaries; computed and "
                                                  f"stored if missing). Default: SOURCE/{CACHE_NAME}, from setup.sh, "
                                                  f"used only if this machine reproduces it")
    parser.add_argument("--reference-only", action="store_true", help="setup.sh: compute the reference cache only")
    parser.add_argument("--jail", help="the tree student workers are chrooted into where no mount namespace can be "
                                       "made (a default Docker container). Default: SOURCE/../jail, built by setup.sh "
                                       "(or by the first grading that needs it)")
    parser.add_argument("--build-jail", action="store_true", help="setup.sh: build the jail tree only")
    parser.add_argument("--make-secret", action="store_true", help="setup.sh: draw a new secret for the hidden inputs "
                                                                   "(grader/secret.py) only")
    parser.add_argument("--time-limit-s", type=float, default=settings.TIME_LIMIT_S,
                        help=f"Gradescope's timeout for the assignment (default {settings.TIME_LIMIT_S} s, from "
                             f"grader/settings.py); the grading ends {settings.TIME_MARGIN_S} s before it")
    parser.add_argument("--parts", help="staff tools: grade only these parts (comma-separated); the others are not "
                                        "listed and count as passed, as the reference solution's do (mutation.py: "
                                        "the parts that read none of a mutant's edited files, grader/parts.py)")
    parser.add_argument("--checks", help="staff tools: grade only these checks (comma-separated numbers, e.g. 3.1,B.1; "
                                         "their hidden twins too) and every check of the parts theirs depend on "
                                         "(mutation.py: the checks that must catch a mutant, grader/parts.py)")
    args = parser.parse_args(argv)
    parts = PART_ORDER if args.parts is None else tuple(p.strip() for p in args.parts.split(",") if p.strip())
    if not parts or set(parts) - set(PART_ORDER):
        parser.error(f"--parts {args.parts!r}: name some of {', '.join(PART_ORDER)}")
    checks = None if args.checks is None else tuple(c.strip() for c in args.checks.split(",") if c.strip())
    known = {c.number for c in public_checks()}
    if checks is not None and (not checks or set(checks) - known):
        parser.error(f"--checks {args.checks!r}: name some of {', '.join(sorted(known))}")
    if not (args.reference_only or args.make_secret or args.build_jail) and not (args.submission and args.results):
        parser.error("--submission and --results are needed to grade")
    return args, parts, checks


def main(argv: list[str] | None = None) -> int:
    map_large_blocks()
    args, parts, checks = arguments(argv)
    source = os.path.abspath(args.source)
    cache = os.path.abspath(args.reference_cache or os.path.join(source, CACHE_NAME))
    tree = os.path.abspath(args.jail or os.path.join(os.path.dirname(source), "jail"))
    if args.reference_only:
        return reference_only(source, cache)
    if args.make_secret:
        from grader import secret
        secret.make(os.path.join(source, secret.NAME))
        print(f"a new secret for the hidden inputs: {os.path.join(source, secret.NAME)}")
        return 0
    if args.build_jail:
        print(f"jail tree {tree}: {jailtree.describe(jailtree.build(tree))}")
        return 0
    began = time.monotonic()
    results, submission = os.path.abspath(args.results), os.path.abspath(args.submission)
    write_fallback(results, FALLBACK)
    notes: list[str] = []
    layers = isolation(notes)
    if isinstance(layers, str):
        output = f"autograder error: isolation unavailable ({layers}); student code was not run."
        write_results(results, [], output, time.monotonic() - began)
        print(output)
        return 2
    if layers is not None:
        close_to_others(source)
        sandbox.become_subreaper()  # orphans of student processes come here to be reaped, not to pid 1
    workdir = tempfile.mkdtemp(prefix="minddp-grade-")
    os.chmod(workdir, 0o700)
    cwd = os.getcwd()
    code, extra = 0, {"isolated": layers is not None, "grader": grader_version.record(source)}  # which grader
    try:
        os.chdir(workdir)  # never in the source folder: a relative path must not reach it
        grader = Grader(source, submission, workdir, layers, parts, checks, tree)
        grader.deadline = began + args.time_limit_s - settings.TIME_MARGIN_S
        grader.notes += notes
        grader.static_checks()
        grader.start_server()
        try:
            grader.reference_pass(cache, verify=not args.reference_cache)
            extra["reference"] = grader.reference.how
            entries = grader.student_pass()
        finally:
            grader.stop_server()
        if grader.isolation is not None:
            extra["student_uid"], extra["isolation"] = grader.isolation.uid, grader.isolation.describe()
            print(grader.isolation.describe(), flush=True)
        extra["release"] = version.record(*grader.release)
        entries.append(grader.integrity_entry())
        output = grader.summary(entries)
    except Exception:
        entries, code = [], 1
        # Its traceback is staff's (stdout, extra_data): it may hold what student code made happen after a hidden run.
        extra["error"] = traceback.format_exc(limit=-6)
        print(extra["error"], flush=True)
        output = "autograder error: the autograder itself failed; please tell the course staff."
    finally:
        os.chdir(cwd)
    data = write_results(results, entries, output, time.monotonic() - began, extra)
    sandbox.remove_tree(workdir)
    if layers is not None:
        sandbox.reap_orphans()
    print(output)
    print(f"\nscore {data['score']} in {data['extra_data']['execution_s']} s; results.json written")  # (its folder
    # may be a staff tool's temporary one: the tool says where it keeps it)
    return code
