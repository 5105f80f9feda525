# GENERATED from solutions/grading/part6.py by tools/assign.py (staff: edit that file, then `make assignment`).
# Provided code: do not edit it by hand; the grader uses its own copy.
"""Part 6 — the written questions (handout §6): the format of each answer here, its value on Gradescope.

Your copy checks only the FORMAT (types, lengths, names): the values are graded by the autograder,
against the reference answers, integers and names exactly, floats within a relative tolerance of 1e-3.
"""

from __future__ import annotations

import math
import numbers

from grading.checks import NONE, Check, Outcome, Run, fail

ANSWER_RTOL = 1e-3
INT, REAL, BUCKETS = "an int", "a number", "buckets"
# (function of answers.py, what it answers, points as the handout's heading gives them, the format)
QUESTIONS = [
    ("q1_rank_layout", "Q1: rank layout", 1.0, (INT, INT, INT, INT)),
    ("q2_buckets", "Q2: the buckets of eight parameters", 2.0, BUCKETS),
    ("q3_overlap_ms", "Q3: an overlapped timeline", 1.5, (REAL, REAL, REAL)),
    ("q4_cap_zero_ms", "Q4: why not one bucket per tensor", 1.5, (REAL, REAL, REAL)),
    ("q5_skip_sync", "Q5: syncing every few steps", 1.0, (REAL, REAL, REAL)),
    ("q6_weak_scaling", "Q6: weak scaling", 1.0, (REAL, REAL)),
    ("q7_collective_counts", "Q7: collectives with no_sync", 2.0, (INT, INT, INT, INT)),
]
NAMES = [q[0] for q in QUESTIONS]
Q2_PARAMETERS = {f"p{i}" for i in range(8)}


def is_a(value, kind: str) -> bool:
    if isinstance(value, bool):
        return False
    return isinstance(value, numbers.Integral) if kind == INT else isinstance(value, numbers.Real)


def format_problem(name: str, value, kind) -> str | None:
    if kind == BUCKETS:
        if not (isinstance(value, list) and value and all(isinstance(b, list) and b for b in value)):
            return f"{name}() must return a list of non-empty lists of names, got {value!r}"
        names = [n for bucket in value for n in bucket]
        if not all(isinstance(n, str) for n in names) or sorted(names) != sorted(Q2_PARAMETERS):
            return f"{name}() must name each of {sorted(Q2_PARAMETERS)} exactly once, got {names}"
        return None
    if not (isinstance(value, (tuple, list)) and len(value) == len(kind)):
        return f"{name}() must return a tuple of {len(kind)} values, got {value!r}"
    for position, (item, k) in enumerate(zip(value, kind, strict=True)):
        if not is_a(item, k):
            return f"{name}()[{position}] must be {k}, got {item!r}"
    return None


def matches(mine, theirs) -> bool:
    if isinstance(theirs, (list, tuple)):
        return isinstance(mine, (list, tuple)) and len(mine) == len(theirs) and all(
            matches(a, b) for a, b in zip(mine, theirs, strict=True))
    if isinstance(theirs, float) or (isinstance(theirs, int) and isinstance(mine, float)):
        return is_a(mine, REAL) and math.isclose(mine, theirs, rel_tol=ANSWER_RTOL, abs_tol=1e-12)
    return type(mine) is type(theirs) and mine == theirs


def answer_check(index: int, name: str, title: str, points: float, kind) -> Check:
    def compare(o: Outcome) -> None:
        mine = o.got[0][name]
        if "error" in mine:
            fail(f"{name}() raised {mine['error']}: {mine['message']} (handout §6)")
        problem = format_problem(name, mine["value"], kind)
        if problem:
            fail(problem + " (handout §6)")
        if o.ref is not None and not matches(mine["value"], o.ref[0][name]["value"]):
            fail(f"{name}() returned {mine['value']!r}: not the expected answer (numbers within a relative "
                 f"tolerance of {ANSWER_RTOL:g}; lists and tuples in the order the docstring gives; handout §6).")

    return Check(f"6.{index}", title, weight=points, section="6", public_share=0.0, compare=compare,
                 runs=(Run("answers", {"names": NAMES}, ref=NONE, label="your answers.py (format only)"),))


CHECKS = [answer_check(i, *q) for i, q in enumerate(QUESTIONS, start=1)]
