"""Grades the upload attacks (``upload.py``'s ``UPLOADS``) with the runner's machinery, and the solutions
with the source's permissions as Gradescope leaves them; ``autograder/tests/test_selftest.py`` calls
``upload_outcomes``::

    python -m autograder.selftest.attacks.grade_uploads uploads [--only NAME,NAME] [--keep]
    python -m autograder.selftest.attacks.grade_uploads permissions   # the solutions, source mode 700 as setup.sh leaves it
"""

from __future__ import annotations

import os
import sys

# The one place the attacks use the self-test's runner (its SelfTest, its table and checks) and the case
# list: nothing in selftest/attacks/ imports this module, so the runner's imports (runner -> cases ->
# attacks -> kinds) run one way.
from autograder.grade import expected_score
from autograder.selftest import runner
from autograder.selftest.attacks.upload import UPLOADS, Upload
from autograder.selftest.cases import CASES


def upload_outcomes(test, uploads: list, jobs: int = 2) -> list:
    """Grade ``uploads`` with the runner's machinery (its make_submission only writes files): ``test`` is a
    ``runner.SelfTest`` that has graded the solutions (its reference cache and baseline are reused)."""
    from concurrent.futures import ThreadPoolExecutor

    def grade_one(upload: Upload):
        folder = test.folder(upload.case.name)
        upload.build(os.path.join(folder, "submission"), os.path.join(folder, "source"))
        graded = test.grade_in(folder, test.copy_cache(folder))
        problems = list(graded.problems)
        if graded.results is not None:
            problems += runner.schema_problems(graded.results) + runner.hidden_entry_problems(graded.results) or \
                runner.expectation_problems(upload.case, graded.results, test.baseline)
        return runner.Outcome(upload.case, graded, problems)

    with ThreadPoolExecutor(max_workers=jobs) as pool:
        return list(pool.map(grade_one, uploads))


def grade_uploads(only: list | None = None, jobs: int = 2, keep: bool = False) -> int:
    import shutil

    test = runner.SelfTest()
    first = test.grade_case(next(c for c in CASES if c.name == "solutions"))
    outcomes = upload_outcomes(test, [u for u in UPLOADS if not only or u.case.name in only], jobs)
    print(runner.table([first] + outcomes))
    print(f"work folder {test.workdir}")
    if not keep:
        shutil.rmtree(test.workdir, ignore_errors=True)
    return 0 if first.passed and all(o.passed for o in outcomes) else 1


def grade_with_gradescope_permissions(keep: bool = False) -> int:
    """Grade the solutions with the source's permissions as Gradescope leaves them: setup.sh runs
    `chmod -R go-rwx /autograder/source` when the image is built. Must still score full marks."""
    import shutil
    import subprocess

    test = runner.SelfTest()
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
