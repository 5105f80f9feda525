#!/usr/bin/env python3
"""Staff tool for the student release (the Makefile runs it with .venv's python: the README's points table imports
solutions/checks, which needs numpy; the rest is standard library).

    tools/assign.py generate                  write assignment/ from solutions/          (make assignment)
    tools/assign.py check                     exit 1 naming the files if assignment/ is stale (make check-sync)
    tools/assign.py diff [--submission PATH]  per function: stub (or a student's version) vs solution (make diff)
    tools/assign.py validate                  public tests pass on solutions/, fail by stub on the release
    tools/assign.py files [--paths]           the student-edited files (solutions/student_files.json)
    tools/assign.py student-zip OUT           assignment/ (+ handout.pdf) for students     (make student)

Markers, hidden tests and the provided-code allow-list are described in tools/README.md.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from tools import REPO, instructor_diff
from tools.instructor_diff import Submission, render, stub_reports, submission_reports
from tools.release import Layout, ReleaseError, build_release, compare, write_release, write_student_zip
from tools.student.course import parts_table


def cmd_generate(layout: Layout, args: argparse.Namespace) -> int:
    release = build_release(layout)
    difference = write_release(release.files, layout.assignment)
    changed = len(difference.modified) + len(difference.missing) + len(difference.extra)
    where = os.path.relpath(layout.assignment)
    print(f"{where}: {len(release.files)} files, {changed} changed" + "".join(
        f"\n  {label}: {', '.join(paths)}" for label, paths in (
            ("updated", difference.modified), ("added", difference.missing), ("removed", difference.extra))
        if paths))
    return 0


def cmd_check(layout: Layout, args: argparse.Namespace) -> int:
    difference = compare(build_release(layout).files, layout.assignment)
    where = os.path.relpath(layout.assignment)
    if not difference:
        print(f"{where} is in sync with solutions/")
        return 0
    lines = [f"{where} differs from what `make assignment` would write (edit solutions/ or tools/student/, "
             "never the generated files; then run `make assignment` and commit):"]
    for label, paths in (("modified", difference.modified), ("missing", difference.missing),
                         ("extra", difference.extra)):
        lines += [f"  {label}: {os.path.join(where, p)}" for p in paths]
    print("\n".join(lines), file=sys.stderr)
    return 1


def cmd_diff(layout: Layout, args: argparse.Namespace) -> int:
    release = build_release(layout)
    submission = Submission(args.submission) if args.submission else None
    reports, notes = [], {}
    for entry in layout.student_files():
        with open(os.path.join(layout.solutions, entry.path), encoding="utf-8") as f:
            solution = f.read()
        placed = release.regions[entry.path]
        if submission is None:
            reports += stub_reports(entry, solution, release.files[entry.path].decode("utf-8"), placed,
                                    args.context)
        else:
            mine, notes[entry.path] = submission_reports(entry, solution, placed, submission.text(entry.path),
                                                         args.context, args.comments)
            reports += mine
    verdicts = None
    if args.results:
        with open(args.results, encoding="utf-8") as f:
            results = json.load(f)
        from tools import student_side
        student_side(layout.solutions)
        from checks.registry import public_checks  # the checks' weights and runs: the bonus's points, the functions
        checks = public_checks()
        bonus: dict[str, float] = {}
        for check in (c for c in checks if c.bonus):
            bonus[check.part] = bonus.get(check.part, 0.0) + check.weight
        verdicts = instructor_diff.read_verdicts(results, bonus, instructor_diff.check_function_names(checks))
    print(render(reports, notes, args.color, submission is not None, verdicts))
    return 0


def cmd_validate(layout: Layout, args: argparse.Namespace) -> int:
    from tools.validate import validate  # imports subprocess machinery only when needed
    release = build_release(layout)
    if compare(release.files, layout.assignment):
        print("validate: note: assignment/ is stale (see `make check-sync`); validating a fresh generation")
    return validate(release, layout, keep=args.keep, parallel=not args.serial)


def cmd_files(layout: Layout, args: argparse.Namespace) -> int:
    files = layout.student_files()
    print("\n".join(f.path for f in files) if args.paths else parts_table(files))
    return 0


def cmd_student_zip(layout: Layout, args: argparse.Namespace) -> int:
    release = build_release(layout)
    names = write_student_zip(release.files, layout, args.output)
    handout = "with handout.pdf" if "handout.pdf" in names else "without handout.pdf (not built yet)"
    print(f"{args.output}: {len(names)} files, {handout}")
    return 0


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--repo", default=REPO, help="repository root (default: this tool's)")
    sub = p.add_subparsers(dest="command", required=True)
    sub.add_parser("generate", help="write assignment/ from solutions/").set_defaults(run=cmd_generate)
    sub.add_parser("check", help="exit 1 if assignment/ differs from a fresh generation").set_defaults(run=cmd_check)
    diff = sub.add_parser("diff", help="per function: stub or submission vs solution")
    diff.add_argument("--submission", help="a student's folder or .zip (files at their paths, maybe in one folder)")
    diff.add_argument("--color", action="store_true", help="color the diff (ANSI)")
    diff.add_argument("--context", type=int, default=2, help="context lines around each change (default 2)")
    diff.add_argument("--comments", action="store_true", help="compare comments and docstrings too (default: code)")
    diff.add_argument("--results", help="a results.json of this submission: each part's verdicts beside its code")
    diff.set_defaults(run=cmd_diff)
    validate = sub.add_parser("validate", help="public tests: pass on solutions/, fail by stub on the release")
    validate.add_argument("--keep", metavar="DIR", help="work in DIR and keep the runs' logs and outcomes")
    validate.add_argument("--serial", action="store_true", help="run the two test runs one after the other")
    validate.set_defaults(run=cmd_validate)
    files = sub.add_parser("files", help="the student-edited files and their parts")
    files.add_argument("--paths", action="store_true", help="only the paths, one per line")
    files.set_defaults(run=cmd_files)
    student = sub.add_parser("student-zip", help="zip assignment/ (+ handout.pdf) for students")
    student.add_argument("output", help="where to write the zip, e.g. dist/student.zip")
    student.set_defaults(run=cmd_student_zip)
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        return args.run(Layout.of_repo(args.repo), args)
    except (ReleaseError, FileNotFoundError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
