"""The contract-coverage table (autograder/selftest/coverage.py): every item of the handout's contract has a
mutant that breaks it alone and a check the item cites catches it; COVERAGE.md is what the table says now.
(That each mutant is really caught, naming its mistake, is test_mutants: CI grades every one.)"""

from __future__ import annotations

from autograder.selftest import coverage


def test_every_contract_item_has_a_mutant_caught_by_a_check_it_cites():
    problems = coverage.problems()
    assert not problems, "\n".join(problems)


def test_the_table_is_current():
    with open(coverage.TABLE, encoding="utf-8") as f:
        written = f.read()
    assert written == coverage.table(), "autograder/selftest/COVERAGE.md is stale: run `make coverage`"


def test_an_item_without_a_mutant_is_reported(monkeypatch):
    """The check can fail: take the mutants of one item away and it is named."""
    real = coverage.mutants_by_item()
    monkeypatch.setattr(coverage, "mutants_by_item", lambda: {k: v for k, v in real.items() if k != "R3"})
    assert any(p.startswith("(R3)") for p in coverage.problems())


def test_a_mutant_naming_no_item_is_reported(monkeypatch):
    real = coverage.mutants_by_item()
    monkeypatch.setattr(coverage, "mutants_by_item", lambda: {**real, "Z9": real["R3"]})
    assert any("'Z9' is no item" in p for p in coverage.problems())
