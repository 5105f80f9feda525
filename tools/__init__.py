"""Staff tools: the release (release.py, assign.py, markers.py, validate.py, instructor_diff.py), the public
answers (expected.py), regrading an export (regrade/), timings, and the repository's import graph."""

from __future__ import annotations

import contextlib
import os
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SOLUTIONS = os.path.join(REPO, "solutions")


def student_side(root: str = SOLUTIONS) -> str:
    """Put a release's root (default: solutions/) first on sys.path, as a student's `make test` and the
    grader's workers find it: the student side (minddp, grading, answers) is imported from there, never
    installed (an installed copy could stand in for a file a submission lacks). Returns ``root``."""
    if root not in sys.path:
        sys.path.insert(0, root)
    return root


@contextlib.contextmanager
def on_student_side(root: str = SOLUTIONS):
    """``student_side`` for a while: the path is as it was afterwards (tests that import a release's code)."""
    added = root not in sys.path
    student_side(root)
    try:
        yield root
    finally:
        if added and root in sys.path:
            sys.path.remove(root)
