"""Part 6 — the written questions (handout §6): the FORMAT of your answers only.

These tests check types and lengths, never values: the values are graded on Gradescope (integers and
names exactly, floats within a relative tolerance of 1e-3).
"""

from __future__ import annotations

import numbers

import pytest

import answers

PARAMETERS = {f"p{i}" for i in range(8)}  # the parameters of Q2

# question -> the type of each element of the returned tuple
TUPLES = {
    "q1_rank_layout": (int, int, int, int),
    "q3_overlap_ms": (float, float, float),
    "q4_cap_zero_ms": (float, float, float),
    "q5_skip_sync": (float, float, float),
    "q6_weak_scaling": (float, float),
    "q7_collective_counts": (int, int, int, int),
}


def is_a(value, kind) -> bool:
    if isinstance(value, bool):
        return False
    if kind is int:
        return isinstance(value, numbers.Integral)
    return isinstance(value, numbers.Real)  # a float answer may be written as an int (130, not 130.0)


@pytest.mark.parametrize("question", TUPLES)
def test_answer_types(question):
    value = getattr(answers, question)()
    kinds = TUPLES[question]
    assert isinstance(value, tuple) and len(value) == len(kinds), (
        f"{question}() must return a tuple of {len(kinds)} values (handout §6), got {value!r}")
    for position, (item, kind) in enumerate(zip(value, kinds)):
        assert is_a(item, kind), (f"{question}()[{position}] must be {'an int' if kind is int else 'a number'} "
                                  f"(handout §6), got {item!r}")


def test_buckets_name_every_parameter_once():
    buckets = answers.q2_buckets()
    assert isinstance(buckets, list) and all(isinstance(b, list) and b for b in buckets), (
        f"q2_buckets() must return a list of non-empty lists of names (handout §6), got {buckets!r}")
    names = [name for bucket in buckets for name in bucket]
    assert all(isinstance(name, str) for name in names), "q2_buckets(): parameter names are strings like 'p3'"
    assert sorted(names) == sorted(PARAMETERS), (
        f"q2_buckets() must name each of {sorted(PARAMETERS)} exactly once, got {names}")
