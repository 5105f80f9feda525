"""Attacks on the way from a hidden run to what the student sees: the name of an exception (chosen freely, a
newline in it too), and whatever a hidden run leaves behind for a later public run to read (the pid counter,
the clock). A red team leaked the hidden inputs through the first, and decoded them from the second; a hidden
entry now speaks the grader's fixed words (grader/hidden_words.py), and every public run comes before any
hidden one (run.py: student_pass)."""

from __future__ import annotations

import re
from collections.abc import Callable

from autograder.selftest.attacks.shared import all_of, hidden_entries_show_nothing_of_the_student, output_of, tests_fail
from autograder.selftest.kinds import AT_END, BUCKETING, REDUCER, REDUCER_INIT_BODY, Case

PART2 = ("2.1", "2.2", "2.3", "2.4")  # public entries graded one after the other, each with a hidden twin

# -- the name of an exception ------------------------------------------------------------------------------------

# The Reducer's constructor raises a BaseException (past every `except Exception`) whose class is named after
# what it was given: the parameters' sizes, hidden ones included. Public entries may show it; no hidden one.
NAMED_BY_INPUTS = ('        raise type("LEAK_" + "_".join(str(p.numel()) for p in params), (BaseException,), {})()\n'
                   + REDUCER_INIT_BODY)

# Every bucketing call raises an exception whose class name forges a line of the score table.
FORGED_LINE = "Total (bonus is extra)        110.0 / 100.0"
NEWLINE_NAME = f'''


def compute_bucket_assignment(tensors, bucket_size_limits, order=None):  # replaces the solution above
    raise type("Oops\\n{FORGED_LINE}\\n", (BaseException,), {{}})()
'''


def one_score_line(results: dict, isolated: bool) -> list:
    """The top-level table has one total line, the grader's."""
    count = results.get("output", "").count("Total (bonus is extra)")
    return [] if count == 1 else [f"the top-level output has {count} total lines"]


# -- what a hidden run leaves behind -----------------------------------------------------------------------------

# Whether a bucketing call is one of the public inputs (checks/part2.py is the student's too): the attacks
# below act on the hidden inputs only, and speak on the public ones.
PUBLIC_OR_HIDDEN = r'''

_SOLVED = compute_bucket_assignment  # the solution above
_PUBLIC = None


def _public(tensors, limits, order):
    global _PUBLIC
    if _PUBLIC is None:
        from checks import part2
        _PUBLIC = {repr((c["sizes"], c["dtypes"], list(c["limits"]), c.get("order")))
                   for check in part2.CHECKS for run in check.runs if run.fn == "bucket_cases"
                   for c in run.kwargs["cases"]}
    return repr(([t.numel() for t in tensors], [str(t.dtype).replace("torch.", "") for t in tensors], list(limits),
                 None if order is None else list(order))) in _PUBLIC
'''

# A hidden run uses up PID_BURST pids (threads, started and joined one by one); a public run says its pid.
# Were a public run graded after a hidden one, the gap between two public pids would tell (the red team read
# the first hidden sizes off it).
PID_BURST = 8000
PID_COUNTER = PUBLIC_OR_HIDDEN + f'''
_BURST = []


def compute_bucket_assignment(tensors, bucket_size_limits, order=None):  # replaces the solution above
    import os
    import threading
    if _public(tensors, bucket_size_limits, order):
        raise ValueError(f"PID-MARK {{os.getpid()}} PID-END")
    if not _BURST:
        _BURST.append(True)
        for _ in range({PID_BURST}):
            thread = threading.Thread(target=int)
            thread.start()
            thread.join()
    return _SOLVED(tensors, bucket_size_limits, order)
'''


def _numbers(text: str, marker: str) -> list[int]:
    return [int(n) for n in re.findall(rf"{marker} (\d+)", text)]


def pid_gaps_small(numbers: tuple[str, ...], burst: int) -> Callable:
    """The pids the public entries ``numbers`` show, in grading order, each less than ``burst / 2`` after the one
    before (modulo the machine's pid_max): no hidden run's burst came between them."""
    def check(results: dict, isolated: bool) -> list:
        with open("/proc/sys/kernel/pid_max") as f:
            pid_max = int(f.read())
        by_number = {t.get("number"): t.get("output", "") for t in results.get("tests", [])}
        pids = [(_numbers(by_number.get(n, ""), "PID-MARK") or [None])[0] for n in numbers]
        if None in pids:
            return [f"public entries {numbers} must each show a PID-MARK, but read {pids}"]
        gaps = [(b - a) % pid_max for a, b in zip(pids, pids[1:], strict=False)]
        return [] if max(gaps) < burst // 2 else [f"public entries' pids {pids} jump by {gaps}: a hidden run's "
                                                  f"{burst} threads came between two public runs"]
    return check


# A hidden run sleeps, then says when it ended (in its message, which staff alone see); a public run says when
# it ran. Every public run must have ended before the first hidden one.
CLOCK = PUBLIC_OR_HIDDEN + r'''


_SLEPT = []


def compute_bucket_assignment(tensors, bucket_size_limits, order=None):  # replaces the solution above
    import time
    if _public(tensors, bucket_size_limits, order):
        raise ValueError(f"PUBLIC-AT {time.monotonic_ns()} END")
    if not _SLEPT:  # once per hidden run: its length is what a later public run would read
        _SLEPT.append(True)
        time.sleep(1.0)
    raise ValueError(f"HIDDEN-AT {time.monotonic_ns()} END")
'''


def public_before_hidden(numbers: tuple[str, ...]) -> Callable:
    """Each public entry of ``numbers`` shows when it ran, the staff-only entry when each hidden twin did: the
    last public run is earlier than the first hidden one."""
    def check(results: dict, isolated: bool) -> list:
        by_number = {t.get("number"): t.get("output", "") for t in results.get("tests", [])}
        public = [t for n in numbers for t in _numbers(by_number.get(n, ""), "PUBLIC-AT")[:1]]
        hidden = _numbers(by_number.get("0.1", ""), "HIDDEN-AT")
        if len(public) != len(numbers) or len(hidden) < len(numbers):
            return [f"expected a time from each of {numbers} and their hidden twins (staff-only entry), got "
                    f"{len(public)} and {len(hidden)}"]
        return [] if max(public) < min(hidden) else ["a public run was graded after a hidden one (its time is later)"]
    return check


ATTACKS: list = [
    Case("hidden-class-name", "the Reducer's constructor raises a BaseException whose class is named after the "
         "parameters' sizes: the public entries show the name, a hidden entry says only 'raised an exception'",
         edits={REDUCER: [(REDUCER_INIT_BODY, NAMED_BY_INPUTS)]}, checks=("3.3",), zero=("3",), full=(),
         check=all_of(tests_fail("3.3", "3.3h"), hidden_entries_show_nothing_of_the_student("LEAK_"),
                      output_of("3.3h", "raised an exception", "a hidden entry says the kind of failure"))),
    Case("hidden-newline-name", "every bucketing call raises a BaseException whose class name holds a newline "
         "and a forged total line: no hidden entry shows it, the score table has one total",
         edits={BUCKETING: [(AT_END, NEWLINE_NAME)]}, checks=("2.2",), zero=("2",), full=(),
         check=all_of(hidden_entries_show_nothing_of_the_student("Total (bonus"), one_score_line)),
    Case("hidden-pid-counter", f"bucketing uses up {PID_BURST} pids on hidden inputs and shows its pid on public "
         "ones (the red team decoded hidden sizes from the gaps): the public entries come first, so their pids "
         "are close together",
         edits={BUCKETING: [(AT_END, PID_COUNTER)]}, checks=PART2, zero=(), full=(),
         check=pid_gaps_small(PART2, PID_BURST)),
    Case("hidden-clock", "bucketing sleeps on hidden inputs and shows the clock on public ones: every public "
         "entry's time is earlier than every hidden run's (which only staff see)",
         edits={BUCKETING: [(AT_END, CLOCK)]}, checks=PART2, zero=("2",), full=(),
         check=public_before_hidden(PART2)),
]
