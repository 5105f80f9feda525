"""Part 6 — the written questions (handout §6): the format of your answers only: the checks of grading/part6.py on their public inputs.

Gradescope runs the same checks, on these and on hidden inputs, and shows the same messages.
"""

from grading.local import check_tests

test_check = check_tests("6")
