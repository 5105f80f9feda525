# GENERATED from solutions/tests/test_bonus.py by tools/assign.py (staff: edit that file, then `make assignment`).
# Public tests: do not edit them by hand; the grader runs its own copy (and more tests).
"""Bonus A (find_unused_parameters) and B (bucket rebuild), handout §4: the checks of checks/bonus.py.

Optional: these fail until you write the bonus functions, which `make submit` does not require.
"""

from checks.local import check_tests

test_bonus_a = check_tests("A")
test_bonus_b = check_tests("B")
