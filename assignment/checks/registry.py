# GENERATED from solutions/checks/registry.py by tools/assign.py (staff: edit that file, then `make assignment`).
# Provided code: do not edit it by hand; the grader uses its own copy.
"""Provided — every check, in handout order: the one list that the tests, the grader and the tools read.

(Its own module, so that ``checks.py``, which every part imports, imports none of them back.)
"""

from __future__ import annotations

from checks import bonus, part1, part2, part3, part4, part5, part6
from checks.check import Check


def public_checks() -> list[Check]:
    """Every check, in handout order (Parts 1-6, then bonus A and B)."""
    return [c for module in (part1, part2, part3, part4, part5, part6, bonus) for c in module.CHECKS]


def full_marks(part: str | None = None) -> float:
    """The points of every check (of ``part`` only, if given), bonus included: what a perfect submission
    scores. Every total anywhere (the handout's tables, the tests' expectations) is derived from this."""
    return sum(c.weight for c in public_checks() if part is None or c.part == part)
