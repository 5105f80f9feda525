# GENERATED from solutions/tests/test_process_group.py by tools/assign.py (staff: edit that file, then `make assignment`).
# Public tests: do not edit them by hand; the grader runs its own copy (and more tests).
"""Part 1 — the process group (handout §1): the checks of checks/part1.py on their public inputs.

Gradescope runs the same checks, on these and on hidden inputs, and shows the same messages.
"""

from checks.local import check_tests

test_check = check_tests("1")
