"""How a hidden check is declared: gradescope-utils decorators plus one ``@scenario``.

    @weight(5)
    @number("3.1")
    @scenario(part=3, fn="train", model="mlp", steps=4, ddp_kwargs={"bucket_cap_mb": 1})
    def check_mlp_bitwise(ref, got):
        '''Reducer: 6 x Linear(512, 512), one bucket per layer, bit for bit equal to torch DDP'''
        same_training(ref, got)

The grader runs the scenario twice: on the reference (``ref``: torch's DDP for training scenarios, the
reference code otherwise) and on the student's code (``got``), one result per rank, then calls the
check, which raises ``AssertionError`` with a message that names the mistake and the handout section.
The docstring's first line is the test's name on Gradescope.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Callable

BONUS = 0  # the "part" of extra-credit checks
LAUNCH = "torchrun"  # a scenario run by a real torchrun launch (world_size 0: no worker pool, no reference run)


@dataclass(frozen=True)
class Scenario:
    part: int
    fn: str
    kwargs: dict
    world_size: int = 2
    ref_kwargs: dict = field(default_factory=dict)  # overrides for the reference run
    bonus: str = ""  # "A" or "B" for extra credit, graded with all of the student's files
    deadline_s: float = 60.0

    def student_key(self) -> str:
        return json.dumps([self.fn, self.world_size, self.kwargs], sort_keys=True)

    def reference_key(self) -> str:
        return json.dumps([self.fn, self.world_size, {**self.kwargs, **self.ref_kwargs}], sort_keys=True)


def scenario(part: int, fn: str, world_size: int = 2, ref: dict | None = None, bonus: str = "",
             deadline_s: float = 60.0, **kwargs: Any) -> Callable:
    def attach(check: Callable) -> Callable:
        check.__scenario__ = Scenario(part, fn, kwargs, world_size, ref or {}, bonus, deadline_s)
        return check
    return attach


def hint(text: str) -> Callable:
    """What a failure of this check usually means: added to every failing output of it (also a crash or
    a hang, where the check itself never runs)."""
    def attach(check: Callable) -> Callable:
        check.__hint__ = text
        return check
    return attach


def train(part: int, world_size: int = 2, **kwargs: Any) -> Callable:
    """A training scenario: torch's DDP is the reference, the student's minddp the candidate."""
    kwargs.setdefault("tensors", False)  # digests and sums are enough; tensors cost memory on Gradescope
    return scenario(part, "train", world_size, ref={"impl": "torch"}, impl="minddp", **kwargs)


@dataclass
class CheckInfo:
    function: Callable
    scenario: Scenario
    name: str
    number: str
    weight: float
    visibility: str
    tags: list[str]
    hint: str = ""


def describe(function: Callable) -> CheckInfo:
    doc = (function.__doc__ or function.__name__).strip().splitlines()[0]
    return CheckInfo(function, function.__scenario__, doc, getattr(function, "__number__", ""),
                     float(getattr(function, "__weight__", 0)), getattr(function, "__visibility__", "visible"),
                     list(getattr(function, "__tags__", [])), getattr(function, "__hint__", ""))
