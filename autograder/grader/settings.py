"""The course's settings for the autograder: edit here (one place), then `make autograder`."""

# How Gradescope shows the results of the hidden inputs ("... (hidden inputs)" tests) to students:
# "visible" (at once, like the public ones), "after_due_date", "after_published" or "hidden".
HIDDEN_VISIBILITY = "visible"
