"""Part 4 — the DDP wrapper (handout §4): the checks of checks/part4.py on their public inputs.

Gradescope runs the same checks, on these and on hidden inputs, and shows the same messages.
"""

from checks.local import check_tests

test_check = check_tests("4")
