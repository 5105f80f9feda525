# GENERATED from solutions/tests/conftest.py by tools/assign.py (staff: edit that file, then `make assignment`).
# Public tests: do not edit them by hand; the grader runs its own copy (and more tests).
"""The public tests run every check of checks/part*.py on its public inputs, on one shared runner
(a fork server and pools of gloo workers, started on first use and restarted after a failure)."""

from __future__ import annotations

import os

import pytest

from checks.local import LocalRunner

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture(scope="session")
def runner():
    runner = LocalRunner(ROOT)
    yield runner
    runner.close()
