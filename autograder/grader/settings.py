"""The course's settings for the autograder: edit here (one place), then `make autograder`."""

# How Gradescope shows the results of the hidden inputs ("... (hidden inputs)" tests) to students:
# "visible" (at once, like the public ones), "after_due_date", "after_published" or "hidden".
HIDDEN_VISIBILITY = "visible"

# Gradescope's autograder timeout for the assignment (Assignment settings; Gradescope's default: 10 minutes).
# The grading plans to end this many seconds before it, whatever the submission does: every part's time budget
# is carved from what is left once the reference pass is done, and what does not fit is "Not run (time budget)".
TIME_LIMIT_S = 600
TIME_MARGIN_S = 60  # the grader's own start and end, and Gradescope's
