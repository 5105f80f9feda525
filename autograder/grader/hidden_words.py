"""What a hidden entry ("N.Mh") may say: the grader's own words, chosen from a fixed list (SECURITY.md).

A worker is given the hidden inputs of its own calls, so anything its code produces or influences during a
hidden run could carry them: an exception's class name or message, printed output, a count, a time, a path.
A hidden entry therefore says only, in words written here:

* the kind of failure (``FAILURES``: "raised an exception", never which one);
* which random configuration failed (its label: hidden.py's words naming features, never values);
* whether the public twin fails (then its entry shows the details);
* why it was not run (``NOT_RUN``), and the stand-in it ran with (``substitution_note``).

``texts(check, file_of)`` lists every text a hidden entry of ``check`` can have: the self-test checks every
hidden entry of every grading against it, and log2 of its length bounds what one entry can tell.
"""

from __future__ import annotations

import itertools
import math
import re

from checks.check import Check
from grader.hidden import HIDDEN, RANDOM_LABEL
from grader.parts import DEPENDS
from grader.standins import STANDINS

# A failed run, by kind: the only words a hidden entry says of what the student's code did.
FAILURES = {
    "memory": "used too much memory",
    "output": "printed too much",
    "exited": "ended a process early",
    "garbled": "sent something that is not a result",
    "timeout": "did not finish in time",
    "raised": "raised an exception",
    "failed": "failed",
    "launch": "failed in the launch",
    "stopped": "was stopped when the grading's time ran out",
    "crashed": "could not be run to the end",
    "differ": "gave results that differ from the expected ones",
}

# Why a hidden entry was not run. (Its public twin, run earlier, says more where there is more to say.)
NOT_RUN = {
    "broken": "Not run, for the reason the public entry of this check gives.",
    "public-timeout": "Not run: the public inputs of this check did not finish in time (see above).",
    "import-hang": ("Not run: importing one of your files never finished in an earlier check of this part (its "
                    "public entries show where), so the rest of this part is not attempted."),
    "timeouts": ("Not run: earlier checks of this part did not finish in time (see their output), so the rest of "
                 "it is not attempted."),
    "budget": ("Not run (time budget): the earlier checks of this part used up its time, so the rest of it is not "
               "attempted."),
    "time-up": ("Not run (time budget): the grading's time is up (it must end before Gradescope's limit), so the "
                "rest of it is not attempted."),
}


def substitution_note(standins: list[str]) -> str:
    """Said by every entry of a check graded with stand-ins for ``standins`` (student files' paths)."""
    if not standins:
        return ""
    return (f"\n\n(Graded with a stand-in built from torch's own code in place of your {', '.join(standins)}, "
            "which did not pass its part: a mistake there is not charged twice.)")


def hidden_message(check: Check, kind: str, label: str, public_failed: bool) -> str:
    """A failed hidden entry's message: what went wrong (``kind``, on the random configuration ``label`` if
    any), and where the public inputs show it; never the inputs, the student's own messages or output (which
    could hold them), or the answers on them (handout: grading)."""
    text = f"Your code fails this check on its hidden inputs: it {FAILURES[kind]}" + (f" on {label}" if label else "")
    if public_failed:
        text += (f". Its public inputs fail too: check {check.number} above shows how, and `make test` (test "
                 f"{check.slug}) reproduces it on your machine.")
    else:
        text += (f". Its public inputs pass, so the difference is in what only the hidden ones exercise: read your "
                 f"code against handout §{check.section} for this check ({check.name}).")
    return text + " (Hidden inputs and the results expected on them are never shown.)"


def random_labels(number: str) -> list[str]:
    """The labels of check ``number``'s hidden random configurations: a failing one's is shown."""
    return [run.label for run in HIDDEN.get(number, ()) if run.label.startswith(RANDOM_LABEL)]


def standin_choices(part: str, file_of: dict[str, str]) -> list[list[str]]:
    """Every set of stand-ins a check of ``part`` can run with (``file_of``: part -> its student file)."""
    files = sorted(file_of[p] for p in DEPENDS.get(part, ()) if file_of.get(p) in STANDINS)
    return [sorted(c) for n in range(len(files) + 1) for c in itertools.combinations(files, n)]


def texts(check: Check, file_of: dict[str, str], labels: list[str] | None = None) -> set[str]:
    """Every text a hidden entry of ``check`` can have (``labels``: its random configurations', by default
    those this grader's secret draws)."""
    labels = random_labels(check.number) if labels is None else labels
    found = set(NOT_RUN.values())
    for standins in standin_choices(check.part, file_of):
        note = substitution_note(standins)
        found.add(note.strip())  # passed
        for kind, label, public_failed in itertools.product(FAILURES, ["", *labels], (False, True)):
            found.add(hidden_message(check, kind, label, public_failed) + note)
    return found


ANY_LABEL = "\0label\0"  # in ``texts``, for ``matches``: any random configuration's label


def matches(check: Check, text: str, file_of: dict[str, str]) -> bool:
    """Whether ``text`` is one of ``texts(check)``, whatever secret the grading drew its random configurations
    from (a label there is hidden.py's "random configuration N: features", on one line): the self-test holds
    every hidden entry of every grading to this."""
    if check.number not in _PATTERNS:
        label = re.escape(RANDOM_LABEL) + r" \d+: [^\n]+?"
        _PATTERNS[check.number] = re.compile("|".join(
            re.escape(t).replace(re.escape(ANY_LABEL), label) for t in sorted(texts(check, file_of, [ANY_LABEL]))))
    return _PATTERNS[check.number].fullmatch(text) is not None


_PATTERNS: dict[str, re.Pattern] = {}


def bits(checks: list[Check], file_of: dict[str, str]) -> tuple[int, float, float]:
    """(hidden entries, bits they can tell in all, the most one can): log2 of each one's number of texts, an upper
    bound on what a grading's hidden entries can say of the hidden inputs (SECURITY.md: residual risks)."""
    per_entry = [math.log2(len(texts(check, file_of))) for check in checks if HIDDEN.get(check.number)]
    return len(per_entry), sum(per_entry), max(per_entry, default=0.0)
