"""Grading every submission (the grader runs in subprocesses), JOBS at a time, resumable: a submission
graded before by the same grader is not graded again."""

from __future__ import annotations

import json
import os
import shutil
import signal
import sys
import threading
import uuid
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait

from .export import Submission, lone_zip
from .graders import Grader, tree_hash

MB_PER_GRADING = 800  # a grading's peak (grader, fork servers, two workers): what bounds JOBS on memory
RUN_TAG = "MINDDP_REGRADE_RUN"  # in every grader's environment: finds them when the run is interrupted


def default_jobs() -> int:
    """At most the CPUs this process may use, and what fits in available memory at MB_PER_GRADING each."""
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    try:
        with open("/proc/meminfo") as f:
            available_kb = next(int(line.split()[1]) for line in f if line.startswith("MemAvailable:"))
        return max(1, min(cpus, available_kb // 1024 // MB_PER_GRADING))
    except (OSError, StopIteration, ValueError):
        return max(1, cpus)  # no /proc (macOS): the CPUs only


def entry_point():
    """autograder/grade.py, the one grading entry point: its ``grade`` runs run_autograder on a folder laid
    out like /autograder and checks that it left no process or temporary file behind."""
    from autograder import grade
    return grade


def lay_out(path: str, target: str) -> str:
    """The submission as Gradescope hands it to the autograder: an uploaded zip extracted (the export keeps
    the zip as uploaded), a folder as it is (links stay links: the grader refuses them, as on Gradescope)."""
    return entry_point().place_submission(lone_zip(path) or path, target)


def run_folder(grader: Grader, sub: Submission) -> str:
    return os.path.join(grader.runs, "submissions", sub.id)  # apart: an id may be any folder's name


def graded_record(grader: Grader, sub: Submission, digest: str) -> dict | None:
    """graded.json of an earlier grading of this very submission by this grader, if there is one."""
    try:
        with open(os.path.join(run_folder(grader, sub), "graded.json"), encoding="utf-8") as f:
            record = json.load(f)
    except (OSError, ValueError):
        return None
    return record if record.get("submission") == digest else None


def read_results(grader: Grader, sub: Submission) -> dict | None:
    try:
        with open(os.path.join(run_folder(grader, sub), "results", "results.json"), encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


class Stopped(Exception):
    """The run was interrupted: this grading must not count as done."""


def grade_one(grader: Grader, sub: Submission, digest: str, stop: threading.Event, lock: threading.Lock) -> dict:
    """Grade ``sub`` in a fresh folder laid out like /autograder; graded.json, written last, marks it done."""
    if stop.is_set():
        raise Stopped
    folder = run_folder(grader, sub)
    shutil.rmtree(folder, ignore_errors=True)  # what an interrupted grading left
    os.makedirs(folder)
    lay_out(sub.path, os.path.join(folder, "submission"))
    own_cache = os.path.join(folder, "reference-cache.json")
    if os.path.exists(grader.cache):
        shutil.copyfile(grader.cache, own_cache)  # each grading its own copy: the grader rewrites it
    entry_point().lay_out(folder, grader.source)
    graded = entry_point().grade(folder, reference_cache=own_cache, log_path=os.path.join(folder, "grader.log"))
    if stop.is_set():
        raise Stopped  # killed by the interruption: its results are not a grade
    with lock:
        if not os.path.exists(grader.cache) and os.path.exists(own_cache):
            os.replace(own_cache, grader.cache)  # the first grading computed the reference pass
    for name in ("source", "submission", "tmp"):  # copies: the export and runs/<hash>/source have them
        shutil.rmtree(os.path.join(folder, name), ignore_errors=True)
    if os.path.exists(own_cache):
        os.remove(own_cache)
    record = {"submission": digest, "seconds": round(graded.seconds, 1), "returncode": graded.returncode,
              "problems": graded.problems}
    write_json(os.path.join(folder, "graded.json"), record)
    return record


def write_json(path: str, data: dict) -> None:
    partial = path + ".partial"
    with open(partial, "w", encoding="utf-8") as f:
        json.dump(data, f, indent=1)
    os.replace(partial, path)  # whole or absent: an interruption never leaves half a file


def kill_graders(run_id: str) -> None:
    """Every grader of this run, with its process group (its trusted workers): grade.py's ``grade`` starts
    the grader as a session leader, and its jailed workers die with it (PR_SET_PDEATHSIG)."""
    run = entry_point()
    for pid in run.processes_tagged(RUN_TAG, run_id):
        try:
            os.killpg(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            run.kill_all([pid])


def grade_all(grader: Grader, submissions: list[Submission], jobs: int, progress: bool = True) -> dict[str, dict]:
    """graded.json of every submission, grading those not graded yet: one at a time until the reference pass
    exists (the first grading computes it, all others reuse it), then ``jobs`` at a time. Records read from
    an earlier run have "reused": True."""
    from tqdm import tqdm
    digests = {s.id: tree_hash(s.path) for s in submissions}
    records = {s.id: graded_record(grader, s, digests[s.id]) for s in submissions}
    for record in filter(None, records.values()):
        record["reused"] = True
    todo = [s for s in submissions if records[s.id] is None]
    stop, lock = threading.Event(), threading.Lock()
    run_id = os.environ.setdefault(RUN_TAG, uuid.uuid4().hex)  # inherited by every grader this process starts
    bar = tqdm(total=len(submissions), initial=len(submissions) - len(todo), unit="submission", disable=not progress,
               desc=f"grading ({grader.label})", file=sys.stderr, dynamic_ncols=True)
    pool = ThreadPoolExecutor(max_workers=jobs)
    pending: dict = {}
    try:
        while todo and not os.path.exists(grader.cache):
            sub = todo.pop(0)
            pending = {pool.submit(grade_one, grader, sub, digests[sub.id], stop, lock): sub}
            records[sub.id] = next(iter(pending)).result()
            pending = {}
            bar.update()
        pending = {pool.submit(grade_one, grader, s, digests[s.id], stop, lock): s for s in todo}
        while pending:
            done, _ = wait(pending, return_when=FIRST_COMPLETED)
            for future in done:
                records[pending.pop(future).id] = future.result()
                bar.update()
    except KeyboardInterrupt:
        stop.set()
        pool.shutdown(wait=False, cancel_futures=True)
        running = set(pending)
        while running:  # kill again until every thread is back: one may have started a grader meanwhile
            kill_graders(run_id)
            _, running = wait(running, timeout=1.0)
        raise
    finally:
        pool.shutdown(wait=True)
        bar.close()
    return records
