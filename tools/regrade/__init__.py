"""Staff tool: regrade a Gradescope export with this tree's grader and see whose score a new grader changes.

    make regrade EXPORT=export.zip [OLD=git-rev] [JOBS=n] [OUT=dist/regrade]
    python -m tools.regrade EXPORT [--old REV] [--jobs N] [--out DIR]

EXPORT is Gradescope's "Export Submissions" zip, the folder it unzips to, or any folder of submission
folders / zips. Every submission is graded as `make grade` grades one: the source folder built once by
autograder/assemble.py, each submission in its own folder laid out like /autograder, graded by the one
grading entry point (autograder/grade.py: Gradescope's run_autograder) against ONE reference pass per
grader (run_autograder's MINDDP_REFERENCE_CACHE, computed by the first grading), JOBS at a time. OLD=rev
grades them again with the grader of that git revision (its own assemble.py, or build.py before it was
named so, and grader) and lists the submissions whose score changed.

OUT (default dist/regrade) gets:

    scores.csv, summary.txt          one row per submission x check; the table printed at the end
    scores.png, failures.png         score histogram; failures per check, by part (public and hidden inputs)
    results/<id>.json                each submission's results.json (what ``compare_folders`` reads)
    with OLD: results-old/, scores-old.csv, changed.csv, old_vs_new.png
    runs/<grader version>/           resumable state: the built grader (source/), its reference pass, and
                                     submissions/<id>/ (results/results.json, grader.log, graded.json)

Every file names each grader by its grader version (autograder/grader/grader_version.py: CODE.DRAW, the name
results.json's staff entry and CHANGELOG.md use), with its release. OLD's grader draws its hidden inputs from
this checkout's secret (dist/hidden-secret), as this tree's does: the two differ by their code alone.

A submission whose graded.json names the same submission content under the same grader version is not graded
again: interrupting and rerunning the command continues where it stopped.

The pieces, each a module of this package: export.py reads the export and its metadata; table.py makes the
CSV, the summary and the changed list; plots.py draws; graders.py builds this tree's grader and OLD's;
batch.py grades (resumable, JOBS at a time). This module is the whole run and its command line.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import zipfile

from tools import REPO

from .batch import default_jobs, entry_point, grade_all, read_results, write_json
from .export import RegradeError, Submission, read_export
from .graders import Grader, old_tree, prepare_grader, source_builder
from .plots import plot_failures, plot_old_vs_new, plot_scores
from .table import CHANGED_HEADER, CSV_HEADER, change_rows, change_text, changes, score_rows, summary, write_csv


def open_export(path: str, scratch: str) -> str:
    """The export as a folder: a zip is extracted into ``scratch`` (grade.py's extraction, as Gradescope's,
    which keeps every entry inside the target)."""
    if not os.path.exists(path):
        raise RegradeError(f"EXPORT={path}: no such file or folder")
    if os.path.isdir(path):
        return path
    if not zipfile.is_zipfile(path):
        raise RegradeError(f"EXPORT={path} is neither a zip nor a folder: give Gradescope's export (Assignment > "
                           "Review Grades > Export Submissions: a .zip) or the folder it unzips to")
    target = os.path.join(scratch, "export")
    entry_point().unpack_like_gradescope(path, target)
    return target


def publish(out: str, name: str, grader: Grader, submissions: list[Submission]) -> dict[str, dict | None]:
    """OUT/<name>/<id>.json: this export's results by ``grader`` (only this export's, whatever ran before)."""
    folder = os.path.join(out, name)
    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(folder)
    results = {}
    for sub in submissions:
        results[sub.id] = read_results(grader, sub)
        if results[sub.id] is not None:
            write_json(os.path.join(folder, f"{sub.id}.json"), results[sub.id])
    return results


def timing_text(records: dict[str, dict]) -> str:
    fresh = [r["seconds"] for r in records.values() if not r.get("reused")]
    text = f"{len(records) - len(fresh)} reused from an earlier run"
    if fresh:
        text = f"{len(fresh)} graded now (median {statistics.median(fresh):.0f} s each, max {max(fresh):.0f} s), " + text
    return text


def grade_and_report(grader: Grader, submissions: list[Submission], out: str, jobs: int, progress: bool,
                     suffix: str = "") -> tuple[dict[str, dict | None], str]:
    """Grade, then write results{suffix}/, scores{suffix}.csv and (for this tree's grader) the plots."""
    records = grade_all(grader, submissions, jobs, progress)
    results = publish(out, f"results{suffix}", grader, submissions)
    write_csv(os.path.join(out, f"scores{suffix}.csv"), CSV_HEADER, score_rows(submissions, results, grader.version))
    label = grader.name
    # The old grader's table would repeat the new one's: its changes are what the comparison lists.
    text = summary(results, label, {k: r.get("problems") or [] for k, r in records.items()}, checks=not suffix)
    text += f"\ngradings: {timing_text(records)}"
    if not suffix:
        plot_scores(os.path.join(out, "scores.png"), results, label)
        plot_failures(os.path.join(out, "failures.png"), results, label)
    return results, text


def new_secret(grader: Grader) -> str:
    """The secret this tree's grader draws its hidden inputs from (assemble.py keeps it in dist/)."""
    from grader.grader_version import SECRET_NAME
    return os.path.join(grader.source, SECRET_NAME)


def regrade(export: str, out: str, jobs: int, old: str | None = None, progress: bool = True) -> str:
    """The whole run; returns the text it printed (also in OUT/summary.txt)."""
    if jobs < 1:
        raise RegradeError(f"JOBS={jobs}: give at least 1")
    scratch = tempfile.mkdtemp(prefix="minddp-regrade-")
    try:
        submissions = read_export(open_export(export, scratch))
        os.makedirs(out, exist_ok=True)
        from autograder import assemble
        new = prepare_grader(assemble.build_source, out, "this tree")
        previous = None  # built before any grading: a bad OLD fails in seconds, not after the new grading
        if old:
            tree = old_tree(old, scratch)
            previous = prepare_grader(source_builder(tree), out, f"OLD={old}", secret=new_secret(new))
        print(f"{len(submissions)} submission(s) in {export}; {jobs} at a time; output in {out}", flush=True)
        new_results, text = grade_and_report(new, submissions, out, jobs, progress)
        print(text, flush=True)
        if previous:
            old_results, old_text = grade_and_report(previous, submissions, out, jobs, progress, "-old")
            found = changes(old_results, new_results)
            who = {s.id: s.submitters for s in submissions}
            write_csv(os.path.join(out, "changed.csv"), CHANGED_HEADER,
                      change_rows(found, who, (previous.version, new.version)))
            plot_old_vs_new(os.path.join(out, "old_vs_new.png"), old_results, new_results, previous.name, new.name)
            more = f"\n\n{old_text}\n\n{change_text(found, who, len(submissions))}"
            print(more, flush=True)
            text += more
        with open(os.path.join(out, "summary.txt"), "w", encoding="utf-8") as f:
            f.write(text + "\n")
        return text
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.regrade", description=__doc__.splitlines()[0])
    parser.add_argument("export", nargs="?", help="Gradescope's export zip, or a folder of submissions")
    parser.add_argument("--old", help="a git revision: grade with its grader too, and list the changed scores")
    parser.add_argument("--jobs", type=int, help="gradings at a time (default: the CPUs, and 800 MB each)")
    parser.add_argument("--out", default=os.path.join(REPO, "dist", "regrade"), help="default: dist/regrade")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    args = parser.parse_args(argv)
    if not args.export:
        print("regrade: give the export: make regrade EXPORT=path/to/export.zip (Gradescope: Assignment > Review "
              "Grades > Export Submissions)", file=sys.stderr)
        return 2
    try:
        regrade(args.export, os.path.abspath(args.out), args.jobs or default_jobs(), args.old, not args.no_progress)
    except RegradeError as error:
        print(f"regrade: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("\nregrade: interrupted; rerun the same command to continue (finished gradings are kept)",
              file=sys.stderr)
        return 130
    return 0
