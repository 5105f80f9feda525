"""The table of which student files each part's checks run (grader/parts.py) is what the checks really do.

The grader trusts it twice: a failed part's file is replaced by a stand-in only in the parts that list it,
and mutation.py grades a mutant only on the parts that read a file it edits. So, for each part, its public
checks run on the solutions with every other student file replaced by one that raises when imported: they
must all pass. (A part that secretly imported another file would fail here, and would otherwise be charged
for that file's mistakes twice, or hide a correct variant's failure from `make mutants`.)
"""

from __future__ import annotations

import os
import shutil

import pytest

AUTOGRADER = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REPO = os.path.dirname(AUTOGRADER)

from autograder.selftest.runner import files_by_part  # noqa: E402
from checks.local import CheckFailed, LocalRunner  # noqa: E402
from checks.registry import public_checks  # noqa: E402
from grader.parts import DEPENDS, PART_ORDER, files_read, in_scope, parts_in_full, parts_reading  # noqa: E402

FILE_OF = files_by_part()
POISON = 'raise ImportError("{path} is not one of the files Part {part} reads (grader/parts.py)")\n'


def test_every_part_reads_its_own_file_and_parts_reading_inverts_it():
    for part, path in FILE_OF.items():
        assert path in files_read(part, FILE_OF)
        assert part in parts_reading([path], FILE_OF)
    assert parts_reading(["minddp/reducer.py"], FILE_OF) == ("3", "4", "A", "B")


def test_a_grading_of_some_checks_grades_the_parts_they_depend_on_in_full():
    numbers = [c.number for c in public_checks()]
    reach = parts_reading(["minddp/reducer.py"], FILE_OF)
    graded = [n for n in numbers if in_scope(n, reach, ("4.4",))]
    assert graded == [n for n in numbers if n.split(".")[0] == "3"] + ["4.4"]  # part 4 reads Part 3's verdict
    assert in_scope("4.4h", reach, ("4.4",)) and not in_scope("4.3", reach, ("4.4",))
    assert not in_scope("2.1", reach, ("4.4",))  # Part 2 is a dependency, but outside the parts graded
    assert parts_in_full(["B.1"]) == set(DEPENDS["B"]) and parts_in_full(["3.1"]) == set()
    assert all(in_scope(n) and in_scope(n, PART_ORDER) for n in numbers)  # no limit: Gradescope's grading


@pytest.mark.parametrize("part", PART_ORDER)
def test_a_part_runs_only_the_files_it_lists(part, tmp_path):
    root = str(tmp_path / "release")
    shutil.copytree(os.path.join(REPO, "solutions"), root, ignore=shutil.ignore_patterns("__pycache__"))
    for path in set(FILE_OF.values()) - files_read(part, FILE_OF):
        with open(os.path.join(root, path), "w", encoding="utf-8") as f:
            f.write(POISON.format(path=path, part=part))
    runner = LocalRunner(root)
    failed = []
    try:
        for check in [c for c in public_checks() if c.part == part]:
            try:
                runner.check(check)
            except CheckFailed as failure:
                failed.append(f"{check.number}: {str(failure)[:600]}")
    finally:
        runner.close()
    assert not failed, "\n".join(failed)


def test_every_bonus_check_names_the_student_files_it_is_graded_on():
    from grader.parts import BONUS_WORK, bonus_work
    for check in public_checks():
        if check.bonus:
            assert check.number in BONUS_WORK or check.part in BONUS_WORK, check.number
            assert bonus_work(check.number) and set(bonus_work(check.number)) <= set(bonus_work(check.part))
    assert bonus_work("A.2") == bonus_work("A") == ("3", "4") and bonus_work("B") == ("3", "4", "5")
