"""The public tests run every check of checks/part*.py on its public inputs, on one shared runner
(a fork server and pools of gloo workers, started on first use and restarted after a failure)."""

from __future__ import annotations

import os

import pytest

from checks.local import PASSING_NOTES, LocalRunner

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture(scope="session")
def runner():
    runner = LocalRunner(ROOT)
    yield runner
    runner.close()


def pytest_terminal_summary(terminalreporter) -> None:
    """What a passing test does not say by itself: e.g. that a written answer's value is graded on Gradescope only."""
    if PASSING_NOTES:
        terminalreporter.section("what the passing checks did not check here")
        for note in PASSING_NOTES:
            terminalreporter.write_line(note)
