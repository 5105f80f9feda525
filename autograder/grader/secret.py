"""The grader's secret: the hidden inputs are drawn from it, so that no one can compute them in advance.

setup.sh makes it when Gradescope builds the image (``python -m grader --make-secret``): every grading of that
image uses the same hidden inputs (a student's score does not change between re-runs), and a new upload of
the autograder draws new ones. It lives in the source folder, root's alone (0600 in a 0700 folder), beside
the hidden inputs' code; no student process can read it (SECURITY.md). Where no secret was made (a staff
member's checkout, the self-test's build), the first import makes one (`make grade` keeps one in dist/).
"""

from __future__ import annotations

import hashlib
import os
import random
import secrets

NAME = "hidden-secret"
SOURCE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # the folder holding the grader package


def make(path: str) -> None:
    """A new secret at ``path`` (root's, 0600), replacing one that is there."""
    fd = os.open(path + ".new", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(secrets.token_hex(32) + "\n")
    os.replace(path + ".new", path)


def load(path: str = os.path.join(SOURCE, NAME)) -> str:
    if not os.path.exists(path):
        make(path)
    with open(path, encoding="utf-8") as f:
        return f.read().strip()


def rng(name: str, secret: str | None = None) -> random.Random:
    """A random generator of its own for ``name`` (a check's number), drawn from the secret."""
    digest = hashlib.sha256(f"{secret or load()}/{name}".encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


def seed(name: str, secret: str | None = None) -> int:
    """A seed of 256 bits for ``name``, drawn from the secret: what a hidden entry can tell (a few bits each,
    SECURITY.md) never adds up to it, so the inputs drawn from it cannot be recomputed offline from a few
    leaked values (a seed of 31 bits once could be: search every one)."""
    return int.from_bytes(hashlib.sha256(f"{secret or load()}/{name}".encode()).digest(), "big")
