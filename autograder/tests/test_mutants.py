"""`make mutants` as tests: every mutant caught by a test naming its mistake, every correct variant at 100%.

`make test` grades the FAST subset of autograder/selftest/mutation.py (a few minutes); MUTANTS=all (CI's
`.ci/run` sets it) grades every submission under autograder/selftest/mutants/ and correct/. MUTANTS=a,b picks
submissions by name. SELFTEST_JOBS: submissions graded at the same time (default 2).
"""

from __future__ import annotations

import os
import time

import pytest

from autograder.selftest import mutation
from grader.parts import PART_ORDER, parts_in_full

CHOICE = os.environ.get("MUTANTS", "fast")
JOBS = int(os.environ.get("SELFTEST_JOBS", "2"))
SELECTED = mutation.submissions(None if CHOICE == "all" else list(mutation.FAST) if CHOICE == "fast"
                                else CHOICE.split(","))


@pytest.fixture(scope="module")
def verdicts(show, selftest_instance):
    began = time.monotonic()
    rows = mutation.grade_all(selftest_instance, SELECTED, jobs=JOBS)
    show(f"\n{mutation.table(rows)}\n{mutation.summary(rows, time.monotonic() - began)} (MUTANTS={CHOICE})\n")
    return {sub.name: (sub, outcome, problems) for sub, outcome, problems in rows}


def test_both_kinds_selected():
    kinds = {s.kind for s in SELECTED}
    assert CHOICE not in ("fast", "all") or kinds == {"mutants", "correct"}, kinds


@pytest.mark.parametrize("name", [s.name for s in SELECTED])
def test_verdict(verdicts, name):
    sub, outcome, problems = verdicts[name]
    assert not problems, (f"{sub.kind[:-1] if sub.kind == 'mutants' else 'correct variant'} {name!r} ({sub.about}), "
                          f"score {outcome.score}, failing {mutation.failing(outcome)}:\n  - "
                          + "\n  - ".join(problems) + f"\n\nthe grader's log ends with:\n{outcome.graded.log[-1500:]}")


@pytest.fixture(scope="module")
def local_messages(verdicts):
    return mutation.local_messages(list(verdicts.values()), jobs=JOBS)


@pytest.mark.parametrize("name", [s.name for s in SELECTED if s.kind == "mutants"])
def test_make_test_says_what_gradescope_says(verdicts, local_messages, name):
    """One oracle: for the check that catches a mutant, the students' `make test` prints exactly the message
    Gradescope shows for the public inputs."""
    sub, outcome, _ = verdicts[name]
    for number in sub.caught_by:
        entry = next(t for t in outcome.graded.results["tests"] if t["number"] == number)
        local = local_messages[name, number]
        assert local == entry["output"], (f"check {number} on {name}:\n--- make test says:\n{local}\n"
                                          f"--- Gradescope says:\n{entry['output']}")


def test_a_mutant_graded_on_its_checks_gets_what_a_whole_grading_gives(verdicts, selftest_instance):
    """mutation.py grades a mutant on its CAUGHT_BY checks only (``--checks``), with every check of the parts
    those depend on: for the named checks (public and hidden inputs) that gives the very entries of a grading
    of every part. Tried on the selected mutant whose checks depend on the most graded parts."""
    mutants = [verdicts[s.name] for s in SELECTED if s.kind == "mutants"]
    sub, outcome, _ = max(mutants, key=lambda m: len(parts_in_full(m[0].caught_by) & set(m[0].parts)))
    whole = selftest_instance.grade_case(sub.case(every_part=True))

    def named(results: dict) -> list:
        return [{k: t.get(k) for k in ("number", "name", "score", "status", "output")} for t in results["tests"]
                if t["number"].rstrip("h") in sub.caught_by]

    assert outcome.case.checks == tuple(sub.caught_by) and whole.case.checks is None and whole.case.parts == PART_ORDER
    assert named(outcome.graded.results) == named(whole.graded.results) != []
