"""The autograder's self-test (`make selftest`): grade every case of autograder/selftest/cases.py and check it.

The source folder is built once and the reference pass is computed once (by the first grading of the
solutions) and reused; deadlines are the grader's own. The solutions are graded twice, and their
results.json must be identical (except extra_data: times, the uid); once with SELFTEST=isolation, which CI runs
after a SELFTEST=all that compared two.

Knobs (environment): SELFTEST (which cases: "fast", the default of `make test`: the solutions and the stubs;
"all"; "isolation": those whose outcome rests on the isolation layers (``Case.isolation``) and the fast ones;
or comma-separated names), SELFTEST_CONFIG ("privileged", the default, or "docker": each grading in a fresh
Gradescope-shaped container), SELFTEST_JOBS (cases graded at the same time, default 2), SELFTEST_PYTHON (the
Python that runs the grader, privileged), SELFTEST_SOLUTIONS_RUNS (how many times the solutions are graded: CI's
`make test` grades them once, its `make docker` twice, in Gradescope's room). The upload attacks of attacks/upload.py (UPLOADS) run with SELFTEST=all or
by name. CI: SELFTEST=all in the Docker-default configuration (`make docker`), SELFTEST=isolation in the
privileged one (`make isolation`, in `make ci-last`: the cases where the two rooms hold by different layers).
"""

from __future__ import annotations

import os
import time

import pytest

from autograder.selftest import runner as selftest
from autograder.selftest.attacks.grade_uploads import upload_outcomes
from autograder.selftest.attacks.upload import UPLOADS
from autograder.selftest.cases import CASES

CHOICE = os.environ.get("SELFTEST", "fast")
FAST = ("solutions", "stubs")
SELECTED = CASES if CHOICE == "all" else [c for c in CASES if c.isolation or c.name in FAST] if CHOICE == "isolation" \
    else [c for c in CASES if c.name in (FAST if CHOICE == "fast" else CHOICE.split(","))]
SOLUTIONS_RUNS = int(os.environ.get("SELFTEST_SOLUTIONS_RUNS", 1 if CHOICE == "isolation" else 2))
# Uploads that Case.edits cannot express (links, devices, crafted zips): with SELFTEST=all, or by name.
UPLOADS_SELECTED = [u for u in UPLOADS if CHOICE == "all" or u.case.name in CHOICE.split(",")]


@pytest.fixture(scope="module")
def graded(show, selftest_instance):
    test = selftest_instance
    began = time.monotonic()
    outcomes, runs = test.run(SELECTED, jobs=int(os.environ.get("SELFTEST_JOBS", "2")), solutions_runs=SOLUTIONS_RUNS)
    text = "\n".join(["", selftest.table(outcomes), f"solutions graded {len(runs)} times: "
                      + ", ".join(f"{r.graded.seconds:.1f} s" for r in runs),
                      f"self-test: {time.monotonic() - began:.0f} s in all, {test.workdir}", ""])
    show(text)
    return {o.case.name: o for o in outcomes}, runs


@pytest.mark.parametrize("name", [c.name for c in SELECTED])
def test_case(graded, name):
    outcome = graded[0][name]
    assert outcome.passed, (f"self-test case {name!r} ({outcome.case.about}), graded in "
                            f"{outcome.graded.seconds:.1f} s:\n  - " + "\n  - ".join(outcome.problems)
                            + f"\n\nthe grader's log ends with:\n{outcome.graded.log[-1500:]}")


if any(c.name == "stubs" for c in SELECTED):  # (no test that could only skip)
    def test_make_test_says_what_gradescope_says_of_the_launch(graded):
        """One oracle for check 1.4 too: `make test` starts a real torchrun, Gradescope a jailed launch, and
        both print the same message for the stubs' init_process_group (each rank writes the same message)."""
        from autograder.selftest import mutation
        outcome = graded[0]["stubs"]
        entry = next(t for t in outcome.graded.results["tests"] if t["number"] == "1.4")
        local = mutation.local_message(outcome.folder, "1.4")
        assert local == entry["output"], f"--- make test says:\n{local}\n--- Gradescope says:\n{entry['output']}"


if SOLUTIONS_RUNS > 1:  # (no test that could not fail)
    def test_solutions_graded_identically(graded):
        runs = graded[1]
        assert len(runs) == SOLUTIONS_RUNS
        problems = selftest.determinism_problems(runs)
        assert not problems, "the same submission must get the same results.json every time:\n" + "\n".join(problems)


if UPLOADS_SELECTED:  # (no empty parametrisation: pytest would report it as a skip)
    @pytest.fixture(scope="module")
    def uploads_graded(graded, show, selftest_instance):
        outcomes = upload_outcomes(selftest_instance, UPLOADS_SELECTED, jobs=int(os.environ.get("SELFTEST_JOBS", "2")))
        show("\n" + selftest.table(outcomes) + "\n")
        return {o.case.name: o for o in outcomes}


    @pytest.mark.parametrize("name", [u.case.name for u in UPLOADS_SELECTED])
    def test_upload(uploads_graded, name):
        outcome = uploads_graded[name]
        assert outcome.passed, (f"upload attack {name!r} ({outcome.case.about}):\n  - " + "\n  - ".join(outcome.problems)
                                + f"\n\nthe grader's log ends with:\n{outcome.graded.log[-1500:]}")


def test_the_jail_walk_finds_what_only_root_may_read(tmp_path):
    """jail-walk's walker (run by a worker, as the student's uid) names a copy of the secret, of the reference
    cache and of a grader file, wherever it is and whatever its name; a tree without them passes."""
    from autograder.selftest.attacks import environment
    walker: dict = {"__file__": str(tmp_path / "own" / "answers.py")}  # (its own folder is skipped)
    exec(compile(environment.JAIL_WALK.replace("_walk_the_jail(FORBIDDEN)", ""), "jail_walk", "exec"), walker)
    forbidden = environment.forbidden_files()
    for n in range(3):
        (tmp_path / f"harmless-{n}.txt").write_text("nothing to see\n" * (n + 1))
    walker["_walk_the_jail"](forbidden, str(tmp_path), least=3)
    planted = {"venv/.setup-kept-elsewhere": "0123456789abcdef" * 4 + "\n",
               "venv/lib/cache.json": '{"fingerprint": {"format": 3}}' + " " * (2 << 20),
               "venv/share/copy.py": open(os.path.join(selftest.AUTOGRADER, "grader", "hidden.py")).read(),
               "venv/reference-cache.json.old": "{}"}
    for path, text in planted.items():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(text)
    with pytest.raises(AssertionError) as raised:
        walker["_walk_the_jail"](forbidden, str(tmp_path), least=3)
    assert all(str(tmp_path / path) in str(raised.value) for path in planted), raised.value
