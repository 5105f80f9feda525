"""Attacks on the autograder, as a hostile student would write them: each a self-test case (see cases.py)
that asserts the HONEST outcome (the score the real work earns, a message naming what was refused)."""

from __future__ import annotations

ATTACKS: list = []
