"""Self-test of the hidden autograder: grade broken and hostile submissions, check score and message.

Start with ``run.py`` (the runner, also imported by ``autograder/tests/test_selftest.py``); the cases are
in ``cases.py`` (the attacks in ``attacks/``), their types in ``kinds.py``.
"""
