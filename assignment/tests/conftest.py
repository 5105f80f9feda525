# GENERATED from solutions/tests/conftest.py by tools/assign.py (staff: edit that file, then `make assignment`).
# Public tests: do not edit them by hand; the grader runs its own copy (and more tests).
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


@pytest.fixture(scope="module")
def pool2(runner):
    """2 gloo workers for the probe's tests."""
    return runner.pool(2)


ACCUMULATE = "nosync(F B) F B step zero nosync(F B) F B"  # 2 steps of 2 micro-batches, the first under no_sync


@pytest.fixture(scope="module")
def accumulation(pool2):
    """The probe and the checks' training scenario on the same sequence (convbn, 2 ranks)."""
    import probe
    report = probe.probe_ddp(ACCUMULATE, model="convbn", pool=pool2)
    trained = pool2.run("checks.scenarios:train", impl="torch", model="convbn", steps=2, accumulate=2)
    return report, trained


def pytest_terminal_summary(terminalreporter) -> None:
    """What a passing test does not say by itself: e.g. that a written answer's value is graded on Gradescope only."""
    if PASSING_NOTES:
        terminalreporter.section("what the passing checks did not check here")
        for note in PASSING_NOTES:
            terminalreporter.write_line(note)
