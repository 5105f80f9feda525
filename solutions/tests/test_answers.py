"""Part 6 — the written questions (handout §6): the format of your answers only: the checks of checks/part6.py on their public inputs.

Gradescope runs the same checks, on these and on hidden inputs, and shows the same messages.
"""

from checks.local import check_tests

test_check = check_tests("6")
