"""Provided — hints chosen by what a failure shows: an error whose text, on the input that raised it, points
to one cause. A failure that shows none gets no hint (the comparisons' own messages name what they saw)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

RAISED = "Your code raised "  # how a scenario's error begins (feedback.raised): only errors get these hints


@dataclass(frozen=True)
class ErrorHint:
    says: str  # what the error's text contains
    applies: Callable[[dict], bool]  # on which inputs (the run's kwargs) it points to this cause
    hint: str


FROZEN = ("this model has frozen parameters (requires_grad=False): they get no gradient, so no hook and no place "
          "in a bucket (a bucket holding one never fills). The wrapper gives the bucketing and the Reducer only the "
          "parameters that require a gradient.")

ERROR_HINTS = (
    ErrorHint("cannot register a hook on a tensor that doesn't require gradient",
              lambda kwargs: kwargs.get("model") == "frozen", FROZEN),
    ErrorHint("Expected to have finished reduction", lambda kwargs: kwargs.get("model") == "frozen" and
              not kwargs.get("catch"),
              "a bucket never filled in the backward before, and " + FROZEN),
    ErrorHint("Expected to have finished reduction", lambda kwargs: kwargs.get("model") not in ("frozen", "branchy")
              and not kwargs.get("catch"),
              "every parameter of this model gets a gradient in every backward, so every bucket filled: what does "
              "your Reducer carry from one backward into the next that it should reset?"),
    ErrorHint("is not part of group", lambda kwargs: bool(kwargs.get("subgroups")),
              "here each DDP runs on its own process group: \"rank 0\" is the group's rank 0, and "
              "torch.distributed's src is a GLOBAL rank: dist.get_global_rank(group, 0) translates (rank 0 of "
              "group {1, 2} is global rank 1)."),
    ErrorHint("modified by an inplace operation", lambda kwargs: kwargs.get("model") == "convbn",
              "a tensor the forward saved for backward was overwritten in place after the module had run: "
              "BatchNorm saves its buffers' values, so rank 0's buffers are broadcast at the START of a forward, "
              "before the module runs, never after."),
)


def error_hint(kwargs: dict, text: str) -> str:
    """The hint a scenario's error ``text`` points to on a run with ``kwargs``; "" when it points to none."""
    if not text.startswith(RAISED):
        return ""
    return next((h.hint for h in ERROR_HINTS if h.says in text and h.applies(kwargs)), "")
