"""Provided — how a check is declared, and how `make test` runs it. Gradescope runs the very same checks.

A check is one record: a number and a name (what Gradescope shows), its points, the handout section it
follows from, the scenario runs it makes (its *public inputs*), and one comparison that turns what your
code did into a verdict and, when it fails, into a message that names the mistake::

    Check("3.1", "one bucket per layer: bit for bit equal to torch DDP", weight=4, section="3",
          runs=[train("reducer", "6 x Linear(512, 512), bucket_cap_mb=1", model="mlp", steps=3,
                      ddp_kwargs={"bucket_cap_mb": 1})],
          compare=compare.same_training)

Each ``Run`` is a call of a function of ``checks.scenarios`` on ``world_size`` workers, once on your code
and once for the reference: torch's own DDP or bucketing, run beside yours (``ref`` = the arguments that
change, e.g. ``{"impl": "torch"}``), or the reference solution's answer (``ref=ANSWER``: read from
``expected.json`` here, computed by the reference itself on Gradescope), or nothing (``ref=NONE``, for
comparisons that check properties). ``mistakes`` name common mistakes by the arguments under which the
reference makes the same mistake; a failing answer that equals one of those is named in the message.

On Gradescope each check also runs on hidden inputs (the same comparison, other arguments), and half of
its points (``public_share``) come from the public inputs, half from the hidden ones.
"""

from __future__ import annotations

import json
import os
import secrets
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from checks.causes import error_hint
from checks.claims import audited

ANSWER, NONE = "answer", "none"
DEADLINE_FLOOR_S = 15.0  # a run may take this long, plus DEADLINE_FACTOR times what the reference took
DEADLINE_FACTOR = 20.0  # ... on the same machine, in the same session: no verdict depends on its speed
HOLD_FLOOR_S, HOLD_FACTOR = 2.0, 10.0  # the overlap probe's wait (check 3.8), likewise from torch's own run
EXPECTED = os.path.join(os.path.dirname(os.path.abspath(__file__)), "expected.json")
SCENARIOS = "checks.scenarios"  # the module of every Run's fn: imported by the workers, never by the caller
WARM_UP = f"{SCENARIOS}:warm_up"  # what a fork server running the checks calls once (pool.ForkServer's warm_up)


class Failure(AssertionError):
    """A check's verdict against your code; the message is what you read (locally and on Gradescope)."""


def fail(message: str) -> None:
    raise Failure(message)


@dataclass(frozen=True)
class Run:
    """One scenario call; ``kwargs`` must be JSON (they are sent to the workers as is)."""

    fn: str  # a function of checks.scenarios, or "launch" (a real torchrun launch of tests/launch_probe.py)
    kwargs: dict
    world_size: int = 1
    ref: dict | str = ANSWER  # overrides for torch's run beside yours, ANSWER or NONE
    mistakes: dict = field(default_factory=dict)  # {what the mistake is: kwargs overrides for the reference}
    label: str = ""  # how messages name this input
    feed: tuple = ()  # kwargs of your run that come from the reference's run (see candidate_kwargs)
    # Advice, not a grade of its own: if this run cannot run to the end (your other files broke it: a crash, a
    # reply that is no result), the check goes on without it; what its comparison finds still counts.
    advisory: bool = False

    @property
    def scenario(self) -> str:
        """What the workers call: "module:function" (``pool.WorkerPool.run``)."""
        return f"{SCENARIOS}:{self.fn}"

    def key(self, overrides: dict | None = None) -> str:
        """What identifies the call (the cache key, and the key of expected.json)."""
        return json.dumps([self.fn, self.world_size, {**self.kwargs, **(overrides or {})}], sort_keys=True)

    def reference_calls(self) -> dict[str, dict]:
        """{"" (the reference's answer) or a mistake: the kwargs of that reference call}."""
        if self.ref == NONE:
            return {}
        base = self.ref if isinstance(self.ref, dict) else {}
        return {"": {**self.kwargs, **base},
                **{text: {**self.kwargs, **base, **over} for text, over in self.mistakes.items()}}


def train(impl: str, label: str, world_size: int = 2, **kwargs: Any) -> Run:
    """A training run (``scenarios.train``): yours (``impl`` "reducer": your Reducer through the provided
    driver; "minddp": your whole DDP) against torch's DDP on the same model, data and arguments."""
    feed = (("bucket_indices",) if impl == "reducer" else ()) + (("hold_timeout_s",) if kwargs.get("hold_back") else ())
    return Run("train", {"impl": impl, **kwargs}, world_size=world_size, ref={"impl": "torch"}, label=label, feed=feed)


def candidate_kwargs(run: Run, ref: list | None, ref_seconds: float | None) -> dict:
    """The kwargs of your run: the Run's own, plus what it takes from the reference's run of it: the buckets
    torch assigns (the driver's), and a wait derived from how long torch took (no fixed number of seconds)."""
    kwargs = dict(run.kwargs)
    if "bucket_indices" in run.feed:
        kwargs["bucket_indices"] = ref[0]["driver_buckets"]
    if "hold_timeout_s" in run.feed:
        kwargs["hold_timeout_s"] = HOLD_FLOOR_S + HOLD_FACTOR * (ref_seconds or 0.0)
    if "values" in run.feed:  # each rank's number for the launch's all-reduce: not known before the run
        kwargs["values"] = [secrets.randbelow(10**6) for _ in range(run.kwargs["nproc"])]
    return kwargs


@dataclass
class Outcome:
    """What a comparison gets: the run, your result (one entry per rank), the reference's (or None), the
    reference's result under each named mistake, and the kwargs your run was given (``candidate_kwargs``)."""

    run: Run
    got: list
    ref: list | None
    mistakes: dict[str, list]
    kwargs: dict = field(default_factory=dict)
    notes: list = field(default_factory=list)  # what a PASSING check wants you to know (``make test`` prints it)


@dataclass(frozen=True)
class Check:
    number: str  # "3.1": handout part, then the check ("A.1": bonus A)
    name: str
    weight: float
    section: str  # the handout section its messages cite
    runs: tuple  # its public inputs
    compare: Callable[[Outcome], None]  # raises Failure
    public_share: float = 0.5  # of the points, earned on the public inputs

    @property
    def part(self) -> str:
        return self.number.split(".")[0]

    @property
    def bonus(self) -> bool:
        return not self.part.isdigit()

    @property
    def slug(self) -> str:
        """The pytest id: "3.1-one-bucket-per-layer-bit-for-bit-equal-to-torch-ddp"."""
        words = "".join(c if c.isalnum() else " " for c in self.name.lower()).split()
        return "-".join([self.number, *words[:8]])


def deadline_s(reference_s: float | None) -> float:
    """How long your code may take for a run the reference did in ``reference_s`` seconds."""
    return DEADLINE_FLOOR_S + DEADLINE_FACTOR * (reference_s or 0.0)


def judge(check: Check, outcome: Outcome) -> str | None:
    """None if ``check`` passes on this run, else the message (with the input)."""
    try:
        check.compare(outcome)
    except Failure as failure:  # (each claim it makes about your run must be shown by the record: claims.py)
        return message(check, outcome.run, audited(str(failure), outcome))
    except Exception as error:  # a comparison crashing on odd output is your failure, shown plainly
        return message(check, outcome.run, f"your code returned something this check cannot read "
                                           f"({type(error).__name__}: {error})")
    return None


MESSAGE_CHARS = 6000  # of what a failure says (an exception's text, a stack, output): whatever produced it


def message(check: Check, run: Run, text: str) -> str:
    """What a failure of ``check`` on ``run`` says: the input, the failure, and a hint if the failure shows its
    cause (``causes.error_hint``: an error whose text, on this input, points to one)."""
    where = f"On {run.label}: " if run.label else ""
    if len(text) > MESSAGE_CHARS:
        text = text[:MESSAGE_CHARS] + f"\n... (cut: the message was {len(text):,} characters)"
    hint = error_hint(run.kwargs, text)
    return where + text + (f"\n\nHint: {hint}" if hint else "")


def load_expected(path: str = EXPECTED) -> dict:
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def reference_solution_results(checks: list[Check], run_call: Callable[[Run, dict], Any]) -> dict:
    """{Run.key(overrides): result} of every reference call that needs the reference solution: what
    expected.json holds for the public inputs (``run_call`` runs one call on the reference solution)."""
    results: dict[str, Any] = {}
    for check in checks:
        for run in check.runs:
            if run.ref != ANSWER:
                continue
            for kwargs in run.reference_calls().values():
                key = Run(run.fn, kwargs, run.world_size).key()
                if key not in results:
                    results[key] = run_call(run, kwargs)
    return results
