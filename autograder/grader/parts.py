"""Which student files each part's checks run: the one table behind substitution, bonus grading and scoping.

A part's checks run its own file (Part 1 ``process_group.py``, ..., Part 6 ``answers.py``) and the files of
the earlier parts it ``DEPENDS`` on; where one of those failed its part, the checks run a torch stand-in
instead (``standins.py``), so a mistake is not charged twice. A bonus is graded on the student's own files of
``BONUS_WORK`` (per bonus, or per bonus check): no stand-in there, the bonus is the student's own work.

Staff tools use the same table to grade only the parts a change can reach (``python -m grader --parts``):
a part that reads none of the files a mutant edits grades exactly as the reference solution does. And to
grade only the checks that must catch a mutant (``--checks``): those, plus every check of the parts their
parts depend on, whose verdicts choose the code the named checks run (the student's file or a stand-in).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

PART_ORDER = ("1", "2", "3", "4", "5", "6", "A", "B")
DEPENDS = {"4": ("2", "3"), "5": ("2",), "A": ("2",), "B": ("2",)}
# Per bonus, or per bonus check where its checks differ: Bonus B's first half is the student's Reducer and
# wrapper, its second half their timeline model.
BONUS_WORK = {"A": ("3", "4"), "B.1": ("3", "4"), "B.2": ("5",), "B.3": ("5",)}


def bonus_work(number: str) -> tuple[str, ...]:
    """The parts whose own files bonus check ``number`` ("B.2", "A.1") is graded on; for a bonus ("B"), all its
    checks'."""
    for key in (number, number.split(".")[0]):
        if key in BONUS_WORK:
            return BONUS_WORK[key]
    return tuple(sorted({p for key, parts in BONUS_WORK.items() if key.split(".")[0] == number for p in parts}))


def files_read(part: str, file_of: Mapping[str, str]) -> set[str]:
    """The student files (paths) that ``part``'s checks run; ``file_of``: part -> its own file's path."""
    parts = {part, *DEPENDS.get(part, ()), *bonus_work(part)}
    return {file_of[p] for p in parts if p in file_of}


def parts_reading(paths: Iterable[str], file_of: Mapping[str, str]) -> tuple[str, ...]:
    """The parts (in grading order) whose checks run at least one of ``paths``."""
    paths = set(paths)
    return tuple(p for p in PART_ORDER if files_read(p, file_of) & paths)


def parts_in_full(checks: Iterable[str]) -> set[str]:
    """The parts a grading of only ``checks`` grades in full: every part the checks' parts depend on."""
    full: set[str] = set()
    todo = [number.split(".")[0] for number in checks]
    while todo:
        for part in DEPENDS.get(todo.pop(), ()):
            if part not in full:
                full.add(part)
                todo.append(part)
    return full


def in_scope(number: str, parts: Iterable[str] | None = None, checks: Iterable[str] | None = None) -> bool:
    """Whether a grading limited to ``parts`` and ``checks`` (None: no limit, as on Gradescope) runs check
    ``number`` ("3.1"; its hidden twin "3.1h" goes with it)."""
    check = number[:-1] if number.endswith("h") else number
    part = check.split(".")[0]
    if parts is not None and part not in parts:
        return False
    return checks is None or check in checks or part in parts_in_full(checks)
