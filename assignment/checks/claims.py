# GENERATED from solutions/checks/claims.py by tools/assign.py (staff: edit that file, then `make assignment`).
# Provided code: do not edit it by hand; the grader uses its own copy.
"""Provided — what a failure message may claim about your run, each claim with the record that must show it.

The comparisons (compare.py, part*.py) explain a failure with claims about what your code did ("your backward
launched no all-reduce", "steps 1 to 2 matched torch DDP's"). Each kind of claim is listed here once, with a
test of the recorded run written apart from the code that decided to make it. ``judge`` audits every message:
a sentence whose claim the record does not show is withdrawn (and the message says so), so no message states
something false about your code, whichever comparison wrote it. The self-test grades every mutant and
hostile submission and fails if any message had a claim withdrawn.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

WITHDRAWN = "[a hint was withdrawn: the record of your run does not show"  # the self-test looks for this


@dataclass(frozen=True)
class Claim:
    name: str
    pattern: str  # finds the claim in a message (case-insensitive); its groups go to ``shown``
    shown: Callable  # (outcome, rank, step, match) -> bool: the record shows the claim (rank/step: None if unsaid)


def _steps(o: object, side: str, rank: int) -> list:
    return (o.got if side == "got" else o.ref)[rank]["steps"]


def _ops(collectives: list, op: str | None = None) -> list:
    return [c for c in collectives if op is None or c["op"] == op]


def _elements(c: dict) -> int:
    return c["sizes"][0][0] if c["sizes"] and c["sizes"][0] else 0


def _per_dtype(collectives: list) -> dict:
    counts: dict = {}
    for c in _ops(collectives, "all_reduce"):
        if c["dtypes"]:
            counts[c["dtypes"][0]] = counts.get(c["dtypes"][0], 0) + _elements(c)
    return counts


def _close(a: dict | None, b: dict | None) -> bool:
    return bool(a) and bool(b) and a.keys() == b.keys() and \
        all(abs(a[k] - b[k]) <= 1e-6 * max(abs(a[k]), abs(b[k]), 1e-30) for k in a)


def _same_step(o: object, rank: int, step: int) -> bool:
    mine, theirs = _steps(o, "got", rank)[step], _steps(o, "ref", rank)[step]
    return all(mine[k] == theirs[k] for k in ("buffers", "grads", "params"))


def _last_backward(o: object, rank: int, step: int) -> list:
    return _steps(o, "got", rank)[step]["backward"][-1]


def _sizes(collectives: list) -> list:
    return [(_elements(c), tuple(c["dtypes"])) for c in _ops(collectives, "all_reduce")]


def _dtype_text_shown(text: str, counts: dict) -> bool:
    """'1,234 float32 elements, 8 float16 elements' (or 'nothing') is what ``counts`` says."""
    found = dict((dtype, int(n.replace(",", ""))) for n, dtype in re.findall(r"([\d,]+) (\S+) elements", text))
    return found == counts


def _more_in_forward(o: object, rank: int) -> bool:
    """Some forward of yours (under torch.no_grad() or not) launched more collectives than the same forward of
    torch's last iteration."""
    last = _steps(o, "ref", rank)[-1]
    return any(len(collectives) > len(last[kind][micro]) for entry in _steps(o, "got", rank)
               for kind in ("forward", "eval_forward") for micro, collectives in enumerate(entry.get(kind) or []))


def _construction(record: dict, torch_ddp: bool) -> list:
    found = [(c["op"], _elements(c), tuple(c["dtypes"])) for c in record["construct"]]
    return found[2:] if torch_ddp and found[:1] and found[0][0] == "all_gather" else found


def _world_collectives(record: dict) -> int:
    return record["construct_world_collectives"] + sum(s["world_collectives"] for s in record["steps"])


def _sum_over_steps(o: object, rank: int, last: int) -> bool:
    mine = _steps(o, "got", rank)[last - 1]["grad_sums"]
    ref = _steps(o, "ref", rank)[:last]
    return bool(mine) and all(
        abs(v - sum(s["grad_sums"][n] for s in ref)) <= 1e-5 * sum(s["grad_abs_sums"][n] for s in ref) + 1e-12
        for n, v in mine.items())


def _event_count(o: object, rank: int, step: int, name: str | None) -> int | None:
    """How many all-reduces your record says were launched when ``name``'s gradient was computed (None: at the
    end of the backward's hooks)."""
    entry = _steps(o, "got", rank)[step]
    if name is None:
        return entry["launched_at_end"]
    return next((count for event, count in entry["grad_events"] if event == name), None)


def _slot(o: object, rank: int, step: int, name: str) -> list:
    """What your hook's record says each bucket's slot of ``name`` held, that iteration."""
    return [kind for _, params, seen in _steps(o, "got", rank)[step]["buckets"]
            for param, kind in zip(params, seen.get("slots") or [], strict=False) if param == name]


def _last_micros_average(o: object, rank: int, step: int, kept: int) -> bool:
    """Your gradients (plain sums) are the mean over the group's ranks of their last ``kept`` micro-batches'
    local sums."""
    groups = [g for g in o.run.kwargs.get("subgroups") or [] if rank in g] or [range(len(o.got))]
    lasts = [s for r in groups[0] for s in _steps(o, "got", r)[step]["micro_local_sums"][-kept:]]
    mine = _steps(o, "got", rank)[step]["grad_sums"]
    return bool(mine) and all(abs(v - sum(last[n] for last in lasts) / len(groups[0])) <= 1e-5 * abs(v) + 1e-9
                              for n, v in mine.items())


def _forward_ops(o: object, side: str, rank: int, step: int, micro: int) -> list:
    forwards = _steps(o, side, rank)[step]["forward"]
    return [c["op"] for c in forwards[micro]] if micro < len(forwards) else []


def _micro(m: re.Match) -> int:
    return int(m.group(1)) - 1 if m.group(1) else 0


CLAIMS = (
    Claim("the backward launched no all-reduce", r"backward launched no all-reduce, where torch DDP's launched (\d+)",
          lambda o, rank, step, m: not _ops(_last_backward(o, rank, step), "all_reduce")
          and len(_ops(_steps(o, "ref", rank)[step]["backward"][-1], "all_reduce")) == int(m.group(1)) > 0),
    Claim("all-reduces launched when a gradient was computed",
          r"when ([\w.]+)'s gradient was computed, (\d+) all-reduce\(s\) had been launched",
          lambda o, rank, step, m: _event_count(o, rank, step, m.group(1)) == int(m.group(2))),
    Claim("all-reduces launched by a later event",
          r"only (\d+) all-reduce\(s\) had been launched when (?:([\w.]+)'s gradient was computed|every hook "
          r"of the backward had run)",
          lambda o, rank, step, m: _event_count(o, rank, step, m.group(2)) == int(m.group(1))),
    Claim(".grad is not autograd's tensor", r"([\w.]+)\.grad is not the tensor autograd left",
          lambda o, rank, step, m: _steps(o, "got", rank)[step]["grads_from_autograd"].get(m.group(1)) is False),
    Claim("a kept .grad changed", r"([\w.]+)\.grad of step \d+, which the user kept",
          lambda o, rank, step, m: m.group(1) in _steps(o, "got", rank)[step]["kept_grads_changed"]),
    Claim("is_last() in a bucket", r"is_last\(\) (True|False) in bucket (\d+)",
          lambda o, rank, step, m: any(str(seen.get("is_last")) == m.group(1) and index == int(m.group(2))
                                       for index, _, seen in _steps(o, "got", rank)[step]["buckets"])),
    Claim("a slot in row-major order", r"([\w.]+)'s gradient in row-major order",
          lambda o, rank, step, m: "grad, row-major" in _slot(o, rank, step, m.group(1))),
    Claim("a slot without the raw gradient", r"slot of ([\w.]+) does not hold",
          lambda o, rank, step, m: any(kind != "grad" for kind in _slot(o, rank, step, m.group(1)))),
    Claim("replaced by the constructor", r"after construction, ([\w.]+) is not in the storage",
          lambda o, rank, step, m: m.group(1) in o.got[rank]["moved_by_construction"]),
    Claim("a buffer replaced in forward", r"your forward replaced the buffer ([\w.]+)",
          lambda o, rank, step, m: any(m.group(1) in moved for moved in _steps(o, "got", rank)[step]["buffers_moved"])),
    Claim("a tensor replaced by broadcast_tensors", r"on rank (\d+), (.+?) was replaced",
          lambda o, rank, step, m: m.group(2) in o.got[int(m.group(1))]["moved"]),
    Claim("the last micro-batches' average alone", r"each gradient was the average of the last (\d+) micro-batch",
          lambda o, rank, step, m: _last_micros_average(o, rank, step, int(m.group(1)))),
    Claim("a forward launched no broadcast",
          r"your (?:forward (\d+) of step \d+|step \d+'s forward) launched no broadcast where torch DDP's broadcast",
          lambda o, rank, step, m: "broadcast" not in _forward_ops(o, "got", rank, step, _micro(m))
          and "broadcast" in _forward_ops(o, "ref", rank, step, _micro(m))),
    Claim("a forward broadcast where torch's did not",
          r"your (?:forward (\d+) of step \d+|step \d+'s forward) broadcast the buffers where torch DDP's did not",
          lambda o, rank, step, m: "broadcast" in _forward_ops(o, "got", rank, step, _micro(m))
          and "broadcast" not in _forward_ops(o, "ref", rank, step, _micro(m))),
    Claim("torch's broadcasts in every forward", r"your forwards launched torch's broadcasts",
          lambda o, rank, step, m: [[c["op"] for c in f] for f in _steps(o, "got", rank)[step]["forward"]]
          == [[c["op"] for c in f] for f in _steps(o, "ref", rank)[step]["forward"]]),
    Claim("more elements all-reduced", r"your backward all-reduced ([\d,]+) more elements than torch DDP's",
          lambda o, rank, step, m: sum(_per_dtype(_last_backward(o, rank, step)).values())
          - sum(_per_dtype(_steps(o, "ref", rank)[step]["backward"][-1]).values()) == int(m.group(1).replace(",", ""))),
    Claim("the device made current", r"made device (\d+|none) current",
          lambda o, rank, step, m: str(([d for d in o.got[0]["devices"] + [o.got[0]["device_id"]] if d is not None]
                                        or ["none"])[-1]) == m.group(1)),
    Claim("iteration 1 reduced, a later one did not",
          r"iteration 1 launched all-reduces but iteration (\d+) launched none",
          lambda o, rank, step, m: any(_ops(b, "all_reduce") for b in _steps(o, "got", rank)[0]["backward"])
          and not any(_ops(b, "all_reduce") for b in _steps(o, "got", rank)[int(m.group(1)) - 1]["backward"])),
    Claim("a backward under no_sync() launched collectives",
          r"a backward whose forward ran inside no_sync\(\) launched",
          lambda o, rank, step, m: any(_steps(o, "got", rank)[step]["backward"][:-1])),
    Claim("torch's all-reduce sizes in another order", r"your all-reduces have torch's sizes but not its order",
          lambda o, rank, step, m: sorted(_sizes(_last_backward(o, rank, step)))
          == sorted(_sizes(_steps(o, "ref", rank)[step]["backward"][-1]))
          and _sizes(_last_backward(o, rank, step)) != _sizes(_steps(o, "ref", rank)[step]["backward"][-1])),
    Claim("the elements all-reduced per dtype", r"your backward all-reduced (.+?); torch DDP's (.+?): each",
          lambda o, rank, step, m: _dtype_text_shown(m.group(1), _per_dtype(_last_backward(o, rank, step)))
          and _dtype_text_shown(m.group(2), _per_dtype(_steps(o, "ref", rank)[step]["backward"][-1]))
          and m.group(1) != m.group(2)),
    Claim(".grad kept the local gradients", r"\.grad still held this rank's local gradients",
          lambda o, rank, step, m: _close(_steps(o, "got", rank)[step]["grad_abs_sums"],
                                          _steps(o, "got", rank)[step]["local_abs_sums"])),
    Claim(".grad held the local gradients over the world size",
          r"\.grad held this rank's own gradients divided by the world size",
          lambda o, rank, step, m: _close(_steps(o, "got", rank)[step]["grad_abs_sums"],
                                          {k: v / len(o.ref) for k, v in
                                           _steps(o, "got", rank)[step]["local_abs_sums"].items()})),
    Claim("rank 0 matched at this step", r"rank 0's values match torch DDP's at this step",
          lambda o, rank, step, m: _same_step(o, 0, step)),
    Claim("the earlier steps matched", r"steps? (?:1 to )?(\d+) matched torch DDP's bit for bit",
          lambda o, rank, step, m: all(_same_step(o, r, s) for r in range(len(o.got))
                                       for s in range(int(m.group(1))))),
    Claim("each gradient is the sum over steps",
          r"each of your gradients is the sum of torch's averaged gradients of steps 1 to (\d+)",
          lambda o, rank, step, m: _sum_over_steps(o, rank, int(m.group(1)))),
    Claim("what a forward launched", r"your forward launched (no broadcast|\[[^\]]*\])",
          lambda o, rank, step, m: ("no broadcast" if not _steps(o, "got", rank)[step]["forward"][0] else
                                    str([c["op"] for c in _steps(o, "got", rank)[step]["forward"][0]]))
          == m.group(1)),
    Claim("all-reduces launched in forward", r"your forward launched (\d+) all-reduce\(s\)",
          lambda o, rank, step, m: len(_ops(_steps(o, "got", rank)[step]["forward"][-1], "all_reduce"))
          == int(m.group(1)) and not _ops(_steps(o, "ref", rank)[step]["forward"][-1], "all_reduce")),
    Claim("no extra collective in any forward", r"yours launched no collective beyond torch's in any forward",
          lambda o, rank, step, m: not _more_in_forward(o, rank)),
    Claim("extra collectives in a forward", r"yours launched more collectives than torch's in",
          lambda o, rank, step, m: _more_in_forward(o, rank)),
    Claim("the constructor's collectives differ", r"your constructor launched other collectives than torch DDP's",
          lambda o, rank, step, m: _construction(o.got[rank], False) != _construction(o.ref[rank], True)),
    Claim("collectives on the world group", r"yours launched (\d+)\. Every collective must go",
          lambda o, rank, step, m: _world_collectives(o.got[rank]) == int(m.group(1))
          != _world_collectives(o.ref[rank])),
    Claim("gradients where torch's forward had none",
          r"([\w.]+(?:, [\w.]+)*) got a non-zero gradient in your run but none in torch's",
          lambda o, rank, step, m: all(_steps(o, "got", rank)[0]["grad_abs_sums"].get(name)
                                       and name not in _steps(o, "ref", rank)[0]["grad_abs_sums"]
                                       for name in m.group(1).split(", "))),
    Claim("training went on", r"training went on although", lambda o, rank, step, m: "error" not in o.got[rank]),
    Claim("no all-reduce before the last gradient", r"no all-reduce was launched before the last gradient",
          lambda o, rank, step, m: _steps(o, "got", rank)[1]["allreduces_before_last_grad"] < 1),
    Claim("the all-reduce blocked backward", r"your all-reduce blocks backward",
          lambda o, rank, step, m: bool(_steps(o, "got", 1)[1]["backward_blocked"])),
)

_WHERE = re.compile(r"\brank (\d+)(?:, (?:step|iteration) (\d+))?[:,]")  # a message's "rank 1, step 2:"
_SENTENCE_END = re.compile(r"(?<=[.?!])\s+(?=[A-Z(])")


def _where(text: str, before: int) -> tuple:
    """The rank and step (0-based) the message speaks of: the last 'rank R, step S' before the claim."""
    found = list(_WHERE.finditer(text, 0, before))
    if not found:
        return None, None
    rank, step = found[-1].groups()
    return int(rank), int(step) - 1 if step else None


def unshown(text: str, outcome: object) -> list[tuple[str, re.Match]]:
    """The claims of ``text`` that the recorded run does not show (a claim it cannot test counts as unshown)."""
    wrong = []
    for claim in CLAIMS:
        for match in re.finditer(claim.pattern, text, re.IGNORECASE):
            rank, step = _where(text, match.start())
            try:
                shown = claim.shown(outcome, rank if rank is not None else 0, step if step is not None else 0, match)
            except (KeyError, IndexError, TypeError, ValueError, AttributeError):
                shown = False
            if not shown:
                wrong.append((claim.name, match))
    return wrong


def audited(text: str, outcome: object) -> str:
    """``text`` without the sentences whose claims the record does not show, saying which were withdrawn."""
    wrong = unshown(text, outcome)
    if not wrong:
        return text
    cut = sorted({_sentence(text, match.start()) for _, match in wrong}, reverse=True)
    for start, end in cut:
        text = text[:start] + text[end:]
    names = "; ".join(sorted({name for name, _ in wrong}))
    return f"{text.rstrip()} {WITHDRAWN}: {names}; please tell the course staff]"


def _sentence(text: str, at: int) -> tuple[int, int]:
    """The span of the sentence around position ``at`` (with the space that follows it)."""
    start = max([m.end() for m in _SENTENCE_END.finditer(text, 0, at + 1) if m.end() <= at] + [0])
    following = _SENTENCE_END.search(text, at)
    return start, following.end() if following else len(text)
