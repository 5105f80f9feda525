"""Grades the upload attacks (``upload.py``'s ``UPLOADS``) with the runner's machinery, and the solutions
with the source's permissions as Gradescope leaves them; ``autograder/tests/test_selftest.py`` calls
``upload_outcomes``::

    .venv/bin/python autograder/selftest/attacks/grade_uploads.py uploads [--only NAME,NAME] [--keep]
    .venv/bin/python autograder/selftest/attacks/grade_uploads.py permissions   # the solutions, source mode 700 as setup.sh leaves it
"""

from __future__ import annotations

import os
import sys

if __name__ == "__main__":  # run as a script: the runner's package
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

# The one place the attacks use the self-test's runner (grading a submission, its SelfTest, its table and
# checks), the case list and build.py: nothing in selftest/attacks/ imports this module, so the runner's
# imports (run -> cases -> attacks -> kinds) run one way. When selftest/run.py's grade(), Limits, Graded and
# process helpers move to autograder/grade.py, these imports are the ones to change.
from build import expected_score

from selftest import run
from selftest.attacks.upload import UPLOADS, Upload
from selftest.cases import CASES


def upload_outcomes(test, uploads: list, jobs: int = 2) -> list:
    """Grade ``uploads`` with the runner's machinery (its make_submission only writes files): ``test`` is a
    ``run.SelfTest`` that has graded the solutions (its reference cache and baseline are reused)."""
    import shutil
    from concurrent.futures import ThreadPoolExecutor

    def grade_one(upload: Upload):
        folder = test.folder(upload.case.name)
        submission = upload.build(os.path.join(folder, "submission"), os.path.join(folder, "source"))
        cache = test.cache + ".copy-" + os.path.basename(folder)
        shutil.copyfile(test.cache, cache)
        graded = run.grade(test.source, submission, folder, cache, python=test.python, limits=test.limits,
                           room=test.room, jail=test.jail)
        problems = list(graded.problems)
        if graded.results is not None:
            problems += run.schema_problems(graded.results) or run.expectation_problems(
                upload.case, graded.results, test.baseline)
        return run.Outcome(upload.case, graded, problems)

    with ThreadPoolExecutor(max_workers=jobs) as pool:
        return list(pool.map(grade_one, uploads))


def grade_uploads(only: list | None = None, jobs: int = 2, keep: bool = False) -> int:
    import shutil

    test = run.SelfTest()
    first = test.grade_case(next(c for c in CASES if c.name == "solutions"))
    outcomes = upload_outcomes(test, [u for u in UPLOADS if not only or u.case.name in only], jobs)
    print(run.table([first] + outcomes))
    print(f"work folder {test.workdir}")
    if not keep:
        shutil.rmtree(test.workdir, ignore_errors=True)
    return 0 if first.passed and all(o.passed for o in outcomes) else 1


def grade_with_gradescope_permissions(keep: bool = False) -> int:
    """Grade the solutions with the source's permissions as Gradescope leaves them: setup.sh runs
    `chmod -R go-rwx /autograder/source` when the image is built. Must still score full marks."""
    import shutil
    import subprocess

    test = run.SelfTest()
    subprocess.run(["chmod", "-R", "go-rwx", test.source], check=True)  # as setup.sh does
    outcome = test.grade_case(next(c for c in CASES if c.name == "solutions"), cached=False)
    problems = list(outcome.problems)
    results = outcome.graded.results or {}
    full = expected_score("full")
    if results.get("score") != full:
        problems.append(f"the solutions score {results.get('score')} instead of {full:g} once the source is mode 700 "
                        "(setup.sh): " + "; ".join(f"{t['number']}: {t['output'][:120]!r}" for t in
                                                   results.get("tests", []) if t.get("status") != "passed")[:1500])
    print("gradescope-permissions:", "PASS" if not problems else "FAIL")
    for problem in problems:
        print("  - " + problem)
    print(f"work folder {test.workdir}")
    if not keep:
        shutil.rmtree(test.workdir, ignore_errors=True)
    return 0 if not problems else 1


if __name__ == "__main__":
    import argparse
    parser = argparse.ArgumentParser(description="grade the upload attacks")
    parser.add_argument("command", choices=["uploads", "permissions"])
    parser.add_argument("--only")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--keep", action="store_true")
    arguments = parser.parse_args()
    if arguments.command == "permissions":
        sys.exit(grade_with_gradescope_permissions(arguments.keep))
    sys.exit(grade_uploads(arguments.only.split(",") if arguments.only else None, arguments.jobs, arguments.keep))
