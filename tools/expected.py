#!/usr/bin/env python3
"""Staff: the reference solution's answers to the public inputs, for students' local checks.

    tools/expected.py            write solutions/checks/expected.json   (part of `make assignment`)
    tools/expected.py --check    exit 1 if it differs from what the reference computes now (`make check-sync`)

Checks whose reference is the reference solution (``ref=ANSWER``: Parts 1 and 5) cannot compute it on a
student's machine, so the answers to their PUBLIC inputs (and to the inputs that name mistakes) ship in
the release; hidden inputs never do, and Part 6 (written answers) has none.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from tools import REPO, SOLUTIONS, student_side

student_side()
from checks.check import EXPECTED, reference_solution_results  # noqa: E402
from checks.local import LocalRunner  # noqa: E402
from checks.registry import public_checks  # noqa: E402


def compute() -> dict:
    runner = LocalRunner(SOLUTIONS, expected={})
    try:
        return reference_solution_results(public_checks(), lambda run, kwargs: runner.call(run, kwargs)[0])
    finally:
        runner.close()


def text_of(results: dict) -> str:
    # Calls sorted (stable diffs); each answer's keys in the reference's own order, which the hidden runs'
    # answers keep too: a check that names "the first difference" then names the same one locally.
    return json.dumps(dict(sorted(results.items())), indent=0) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare instead of writing")
    args = parser.parse_args(argv)
    text = text_of(compute())
    if args.check:
        with open(EXPECTED, encoding="utf-8") as f:
            if f.read() != text:
                print(f"{os.path.relpath(EXPECTED, REPO)} is stale: run `make assignment` and commit", file=sys.stderr)
                return 1
        print(f"{os.path.relpath(EXPECTED, REPO)} is current")
        return 0
    with open(EXPECTED, "w", encoding="utf-8") as f:
        f.write(text)
    print(f"wrote {os.path.relpath(EXPECTED, REPO)} ({len(text):,} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
