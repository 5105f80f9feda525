"""What the attack modules share: the student release's and the reference's files, the expectations beyond
zero/full (each returns a list of problems), and the pieces of hostile code several attacks paste in (the
running scenario's arguments, the worker's channel to the trusted side, the pids a process can see)."""

from __future__ import annotations

import os
from collections.abc import Callable

TIMELINE = "minddp/timeline.py"
ANSWERS = "answers.py"
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
EVERY_PART = ("1", "2", "3", "4", "5", "6", "A", "B")


def _text(root: str, path: str) -> str:
    with open(os.path.join(REPO, root, path), encoding="utf-8") as f:
        return f.read()


def stub(path: str) -> str:
    """The student release's file (its stubs raise NotImplementedError)."""
    return _text("assignment", path)


def solution(path: str) -> str:
    return _text("solutions", path)


# -- expectations beyond zero/full: each returns a list of problems ------------------------------------------

def _outputs(results: dict) -> list[tuple[str, str]]:
    return [("top", results.get("output", ""))] + [(t.get("number", "?"), t.get("output", ""))
                                                   for t in results.get("tests", [])]


def absent(*markers: str, why: str = "") -> Callable:
    """No output may contain any of ``markers`` (a marker the attack prints only when it worked)."""
    def check(results: dict, isolated: bool) -> list:
        problems = []
        for marker in markers:
            for where, text in _outputs(results):
                if marker in text:
                    at = text.find(marker)
                    excerpt = text[max(0, at - 80):at + 400].replace("\n", " | ")
                    problems.append(f"{why or 'the attack worked'}: test {where} shows {excerpt!r}")
                    break
        return problems
    return check


def tests_fail(*numbers: str) -> Callable:
    """Each listed test exists and scored 0 (the parts' other tests are covered by ``full``/``zero``)."""
    def check(results: dict, isolated: bool) -> list:
        by_number = {t.get("number"): t for t in results.get("tests", [])}
        problems = []
        for number in numbers:
            test = by_number.get(number)
            if test is None:
                problems.append(f"test {number} is missing")
            elif test.get("score") or test.get("status") == "passed":
                problems.append(f"test {number} must score 0 (honest outcome), but it {test.get('status')} with "
                                f"{test.get('score')}: {test.get('output', '')[:200]!r}")
        return problems
    return check


def tests_pass(*numbers: str) -> Callable:
    def check(results: dict, isolated: bool) -> list:
        by_number = {t.get("number"): t for t in results.get("tests", [])}
        return [f"test {n} must pass (it does its real work), but: "
                f"{by_number.get(n, {}).get('output', 'missing')[:200]!r}"
                for n in numbers if by_number.get(n, {}).get("status") != "passed"]
    return check


def output_of(number: str, must_contain: str, why: str) -> Callable:
    def check(results: dict, isolated: bool) -> list:
        test = next((t for t in results.get("tests", []) if t.get("number") == number), None)
        if test is None:
            return [f"test {number} is missing"]
        text = test.get("output", "")
        return [] if must_contain in text else [f"test {number}: {why}; its output reads {text[:400]!r}"]
    return check


def hidden_entries_show_nothing_of_the_student(marker: str) -> Callable:
    """No hidden entry ("N.Mh") shows text the student's code produced (``marker`` is in all of it), and each
    failed hidden entry says what kind of failure it was, in the grader's own words."""
    def check(results: dict, isolated: bool) -> list:
        problems = []
        for test in results.get("tests", []):
            number, text = str(test.get("number", "")), test.get("output", "")
            if not number.endswith("h"):
                continue
            if marker in text:
                problems.append(f"hidden entry {number} shows what the student's code said: {text[:300]!r}")
            elif test.get("status") == "failed" and "hidden inputs" not in text and "Not run" not in text:
                problems.append(f"hidden entry {number} does not say what failed: {text[:300]!r}")
        return problems
    return check


def all_of(*checks: Callable) -> Callable:
    def check(results: dict, isolated: bool) -> list:
        return [p for c in checks for p in c(results, isolated)]
    return check


# Text that reaches results.json (output-injection, upload-crafted-names): no escapes, no bidi overrides.
CONTROL_CHARS = ("\x1b", "\x00", "\r", "\x07", "\x08", "\x7f")
BIDI_CONTROLS = ("\u202a", "\u202b", "\u202c", "\u202d", "\u202e", "\u2066", "\u2067", "\u2068", "\u2069")


def _no_control_characters(results: dict, isolated: bool) -> list:
    problems = []
    for where, text in _outputs(results):
        bad = [repr(c) for c in CONTROL_CHARS + BIDI_CONTROLS if c in text]
        if bad:
            problems.append(f"test {where}: output holds control characters {bad} (terminal escapes or bidi "
                            "overrides that reorder what staff and students read)")
    if results.get("output_format", "text") != "text" or any(t.get("output_format", "text") != "text"
                                                          for t in results.get("tests", [])):
        problems.append("an output is not declared as plain text")
    return problems


# ============================================================================================================
# Shared pieces of hostile code
# ============================================================================================================

# The arguments of the training scenario that is running right now, read from its frame.
SCENARIO_ARGS = r'''

def _scenario_args():
    import sys
    frame = sys._getframe()
    while frame is not None and frame.f_code.co_name != "_train":
        frame = frame.f_back
    if frame is None:
        return None
    code = frame.f_code
    return {name: frame.f_locals[name] for name in code.co_varnames[:code.co_argcount]}
'''

# The worker's own channel to the trusted side (a socket in the worker loop's frame): student code runs in
# the worker, so it can always write on it. Whatever arrives there is data to validate, never trusted.
CHANNEL = r'''

def _channel():
    import sys
    frame = sys._getframe()
    while frame is not None and frame.f_code.co_name not in ("worker_main", "launch_main"):
        frame = frame.f_back
    return None if frame is None else frame.f_locals.get("sock")


def _send_raw(payload):
    """One message as the worker loop frames them (an 8-byte length, then the bytes)."""
    _channel().sendall(len(payload).to_bytes(8, "big") + payload)
'''

# The pids a process can see: none where /proc is not there at all (a chroot jail: Gradescope's container).
PIDS = r'''

def _pids():
    import os
    try:
        return [p for p in os.listdir("/proc") if p.isdigit()]
    except OSError:
        return []
'''
