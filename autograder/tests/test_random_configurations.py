"""The solutions pass the random configurations of checks 3.3, 4.1 and A.2 whatever secret draws them.

Gradescope makes the grader's secret when it builds the image (setup.sh), so the random configurations a course
grades with are drawn there, from a secret no test here has seen. If the reference and torch's DDP differed on
some configuration, every correct submission would lose points on it: so the configurations are drawn from
several other secrets here (fixed ones, so a failure reproduces; RANDOM_SECRETS=n adds n fresh ones) and the
solutions must pass every one, as the check itself compares them.

    .venv/bin/python -m pytest -q autograder/tests/test_random_configurations.py     # in make staff-tools
"""

from __future__ import annotations

import os
import secrets

import pytest

from checks.check import Outcome, candidate_kwargs, judge
from checks.local import LocalRunner
from checks.registry import public_checks
from grader import hidden

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SECRETS = ["course-a", "course-b", "course-c", "course-d", "course-e"] + [secrets.token_hex(8) for _ in range(int(os.environ.get("RANDOM_SECRETS", 0)))]
CHECKS = {check.number: check for check in public_checks()}


@pytest.fixture(scope="module")
def runner():
    runner = LocalRunner(os.path.join(REPO, "solutions"))
    yield runner
    for pool in runner.pools.values():
        pool.close()
    if runner.server is not None:
        runner.server.stop()


DRAWN = {"3.3": lambda secret: hidden.random_runs("3.3", "reducer", 4, secret=secret),
         "4.1": lambda secret: hidden.random_runs("4.1", "minddp", 4, secret=secret),
         "A.2": lambda secret: hidden.random_unused_runs("A.2", 4, secret=secret)}  # as hidden.HIDDEN draws them


@pytest.mark.parametrize("secret", SECRETS)
@pytest.mark.parametrize("number", DRAWN)
def test_the_solutions_pass_the_random_configurations_of_any_secret(runner, secret, number):
    for run in DRAWN[number](secret):
        ref, seconds = runner.call(run, run.reference_calls()[""], deadline=300)
        got, _ = runner.call(run, candidate_kwargs(run, ref, seconds), deadline=300)
        verdict = judge(CHECKS[number], Outcome(run, got, ref, {}, run.kwargs))
        assert verdict is None, f"secret {secret!r}, {run.label}:\n{run.key()}\n{verdict}"
