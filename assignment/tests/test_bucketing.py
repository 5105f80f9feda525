# GENERATED from solutions/tests/test_bucketing.py by tools/assign.py (staff: edit that file, then `make assignment`).
# Public tests: do not edit them by hand; the grader runs its own copy (and more tests).
"""Part 2 — gradient bucketing (handout §2): the checks of checks/part2.py on their public inputs.

Gradescope runs the same checks, on these and on hidden inputs, and shows the same messages.
"""

from checks.local import check_tests

test_check = check_tests("2")
