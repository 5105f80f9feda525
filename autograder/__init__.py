"""The staff side of the Gradescope autograder: assemble its source folder (assemble.py), run a grading the one
way every front door does (grade.py), simulate Gradescope's room (sim.py, container.py, limits.py), and the
self-test (selftest/). What runs on Gradescope is grader/ (a top-level package there: see pyproject.toml)."""
