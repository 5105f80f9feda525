"""The hidden Gradescope autograder for the minddp homework; start reading at run.py."""
