# GENERATED from solutions/probe.py by tools/assign.py (staff: edit that file, then `make assignment`).
# Provided code: do not edit it by hand; the grader uses its own copy.
"""Observe torch's own DDP (``make probe``) and torch's own bucketing (``make probe-buckets``): an instrument.

    python probe.py ddp "F B nosync(F B) F B" [--model convbn] [--impl torch|minddp|both] [--kwargs "..."] [--ranks 2]
    python probe.py buckets "10MiB 2MiB 8MiB 20MiB 4MiB" [--limits "12MiB"] [--order reverse]

**DDP mode** starts 2 (or 3, 4) gloo processes (the worker pool of ``checks/pool.py``: no fixed port, every
collective with a timeout, every process reaped), builds one of the test models of ``minddp/models.py`` on each,
wraps it in torch's ``DistributedDataParallel`` (``--impl minddp``: yours; ``both``: both, side by side) and
runs the operations you write, one by one:

    F        a forward with gradients (each rank its own batch: models.batch), keeping its loss (models.loss_fn)
    F-b      (models branchy, edges) a forward that leaves branch b out;  F-b@1: on rank 1 only (@0,2: ranks 0, 2)
    B        backward of the last forward's loss
    nosync( ... )   the operations inside run in ``with ddp.no_sync():``     (blocks nest)
    nograd( ... )   the operations inside run in ``with torch.no_grad():``
    eval  train     ddp.eval(), ddp.train()
    zero  step      optimizer.zero_grad(), optimizer.step() (SGD)

For each operation it prints the collectives every rank launched, as torch's flight recorder saw them (op,
elements, dtype: the words the checks' messages use; in a backward, also at which parameter's gradient each
all-reduce went, or after every hook ran), and what the ranks hold afterwards: whether the
parameters, the buffers the module ran with, the gradients agree across ranks (and whether a gradient is the
average over the ranks, or each rank's own), and torch's buckets whenever they change. Before wrapping, every
rank's parameters and buffers differ, so what the construction's broadcasts change shows. The first error
stops the rank that raised it; its message is printed. ``--kwargs`` takes the DDP's constructor arguments
(``bucket_cap_mb=0.001 find_unused_parameters=True``), and ``process_group=[[0], [1, 2]]``: the ranks split
into groups, each rank's DDP on its own group.

**Bucket mode** prints what ``torch.distributed._compute_bucket_assignment_by_size`` (torch's bucketing)
makes of tensors you describe: ``SIZE[:dtype][@cpu][/t][*N]``, SIZE an element count (``1000``) or bytes
(``10MiB``, ``4KiB``, ``1.5MB``, ``100B``); meta tensors (no memory) unless ``@cpu`` (a second device); ``/t``
makes the tensor a transposed 2-D view, whose memory order is not its shape's (as a channels-last weight's).

This file is provided: nothing in it is graded, and your files may not call torch's DDP machinery, which it
uses. It needs none of your code, except with ``--impl minddp`` or ``both``.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import difflib
import inspect
import math
import os
import pickle
import re
import sys
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.distributed as dist

from checks.compare import collective_text
from checks.part4 import construction_collectives
from checks.scenarios import SCALAR_TYPE, _build_model, bucket_limits, digest, own_group, wrap
from minddp import models

ROOT = os.path.dirname(os.path.abspath(__file__))
WORLD_SIZES = range(1, 5)
COLLECTIVE_TIMEOUT_S = 10.0  # a collective no other rank joins fails after this (a hang, shown as an error)
DEADLINE_S = 120.0  # a whole run (a few seconds when nothing hangs); then every worker is killed
MAX_OPS = 200
SEED = 1000  # rank r's model is drawn from seed SEED + r (as the checks' seed_per_rank)
LR = 0.05
DDP_KWARGS = ("bucket_cap_mb", "bucket_cap_mb_list", "broadcast_buffers", "find_unused_parameters",
              "rebuild_buckets", "process_group")
IMPLS = {"torch": "torch DDP", "minddp": "minddp (yours)"}
WIDTH = 100
MAX_ROWS = 24  # of the parameter table; a longer one is cut in the middle
MiB = 2**20


class ProbeError(ValueError):
    """Bad input: the message says what to fix."""


# -- the language of operations ------------------------------------------------------------------------------

TOKEN = re.compile(r"\(|\)|[^\s()]+")
BLOCKS = {"nosync": "nosync", "no_sync": "nosync", "nograd": "nograd", "no_grad": "nograd"}
WORDS = {"b": "B", "eval": "eval", "train": "train", "zero": "zero", "zero_grad": "zero", "step": "step"}
FORWARD = re.compile(r"^[Ff](?:-b(?:@(\d+(?:,\d+)*))?)?$")
GRAMMAR = ("F (forward), F-b / F-b@1 (without branch b: on every rank / on rank 1), B (backward), "
           "nosync( ... ), nograd( ... ), eval, train, zero, step")


@dataclass(frozen=True)
class Op:
    """One operation. ``kind``: F, B, eval, train, zero, step, or enter/exit of a block (``arg``: its name);
    for F, ``arg`` lists the ranks that skip branch b. ``inside``: the enclosing blocks, outermost first."""

    kind: str
    arg: Any = None
    inside: tuple[str, ...] = ()
    text: str = ""

    @property
    def label(self) -> str:
        return "".join(f"{b}(" for b in self.inside) + self.text


def bad_token(text: str, column: int, length: int, why: str) -> ProbeError:
    """An error naming the token at ``column`` of ``text``, with a caret under it."""
    token = text[column:column + length]
    return ProbeError(f"OPS: {why} (at {token!r}, column {column + 1})\n    {text}\n    {' ' * column}{'^' * max(length, 1)}"
                      f"\nOperations: {GRAMMAR}.")


def parse_ops(text: str, model: str = "convbn", world_size: int = 2) -> list[Op]:
    """The operations ``text`` writes, blocks as enter/exit pairs; ProbeError (naming the token) if malformed."""
    tokens = [(m.group(), m.start()) for m in TOKEN.finditer(text)]
    if not tokens:
        raise ProbeError(f"OPS is empty: write the operations to run, e.g. OPS=\"F B nosync(F B) F B\".\nOperations: {GRAMMAR}.")
    ops: list[Op] = []
    opened: list[tuple[str, int, int]] = []  # (block, column, length) of each block still open
    forwards = 0
    i = 0
    while i < len(tokens):
        token, column = tokens[i]
        inside = tuple(block for block, _, _ in opened)
        word = token.lower()
        if token == "(":
            raise bad_token(text, column, 1, "'(' must follow nosync or nograd, as in nosync(F B)")
        if token == ")":
            if not opened:
                raise bad_token(text, column, 1, "this ')' closes no block")
            opened.pop()
            ops.append(Op("exit", inside[-1], inside[:-1], ")"))
        elif word in BLOCKS:
            if i + 1 == len(tokens) or tokens[i + 1][0] != "(":
                raise bad_token(text, column, len(token), f"{token} must be followed by '(': {BLOCKS[word]}(F B)")
            opened.append((BLOCKS[word], column, len(token) + 1))
            ops.append(Op("enter", BLOCKS[word], inside, BLOCKS[word] + "("))
            i += 1
        elif FORWARD.match(token):
            ops.append(Op("F", _skipping_b(text, column, token, model, world_size), inside, "F" + token[1:]))
            forwards += 1
        elif word in WORDS:
            if WORDS[word] == "B" and not forwards:
                raise bad_token(text, column, len(token), "B needs a forward before it (write F first)")
            ops.append(Op(WORDS[word], None, inside, WORDS[word]))
        else:
            known = ["F", "B", "nosync(", "nograd(", *WORDS]
            close = difflib.get_close_matches(token, known, n=1, cutoff=0.5)
            raise bad_token(text, column, len(token), "unknown operation" + (f": did you mean {close[0]}?" if close else ""))
        i += 1
    if opened:
        block, column, length = opened[-1]
        raise bad_token(text, column, length, f"this {block}( is never closed: add ')'")
    if len(ops) > MAX_OPS:
        raise ProbeError(f"OPS: {len(ops)} operations; at most {MAX_OPS}")
    return ops


def _skipping_b(text: str, column: int, token: str, model: str, world_size: int) -> list[int]:
    """The ranks on which forward ``token`` (F, F-b, F-b@1,2) leaves branch b out."""
    if "-b" not in token:
        return []
    if not has_branch_b(model):
        raise bad_token(text, column, len(token), f"model {model} has no branch b: F-b needs MODEL=branchy or edges")
    listed = FORWARD.match(token).group(1)
    ranks = [int(r) for r in listed.split(",")] if listed else list(range(world_size))
    if any(r >= world_size for r in ranks):
        raise bad_token(text, column, len(token), f"there are only ranks 0-{world_size - 1}")
    return sorted(set(ranks))


def has_branch_b(model: str) -> bool:
    forward = getattr(models.MODELS[model], "forward", None)
    return forward is not None and "use_b" in inspect.signature(forward).parameters


def parse_kwargs(text: str, world_size: int) -> dict[str, Any]:
    """``key=value`` pairs (values are Python literals; true/false/none in any case) of the DDP's arguments."""
    kwargs: dict[str, Any] = {}
    for match in re.finditer(r"(\w+)\s*=\s*(\[[^=]*\]|[^\s,]+)", text):
        key, raw = match.groups()
        if key not in DDP_KWARGS:
            raise ProbeError(f"KWARGS: unknown argument {key!r}; the DDP's arguments here: {', '.join(DDP_KWARGS)}")
        raw = {"true": "True", "false": "False", "none": "None"}.get(raw.lower(), raw)
        try:
            kwargs[key] = ast.literal_eval(raw)
        except (ValueError, SyntaxError):
            raise ProbeError(f"KWARGS: {key}={raw} is not a Python value (a number, True, False, None or a list)") from None
    leftover = re.sub(r"(\w+)\s*=\s*(\[[^=]*\]|[^\s,]+)", "", text).replace(",", " ").strip()
    if leftover:
        raise ProbeError(f"KWARGS: cannot read {leftover.split()[0]!r}: write key=value pairs, e.g. "
                         "KWARGS=\"bucket_cap_mb=0.001 find_unused_parameters=True\"")
    if "process_group" in kwargs:
        kwargs["process_group"] = _split(kwargs["process_group"], world_size)
    return kwargs


def _split(groups: Any, world_size: int) -> list[list[int]]:
    ranks = sorted(r for g in groups for r in g) if isinstance(groups, list) and all(
        isinstance(g, list) and all(isinstance(r, int) for r in g) for g in groups) else None
    if ranks != list(range(world_size)):
        raise ProbeError(f"KWARGS: process_group must split the ranks 0-{world_size - 1} into groups, each rank in "
                         f"one, e.g. process_group=[[0], [1, 2]] with RANKS=3 (got {groups!r})")
    return groups


# -- in each worker: run the operations, record what happened ------------------------------------------------

def run(impl: str, model: str, ops: list[dict], ddp_kwargs: dict, groups: list | None = None) -> dict:
    """A worker's part of a probe (``checks.pool`` runs it on every rank): the record of every operation."""
    session = Session(impl, model, groups)
    try:
        if session.construct(ddp_kwargs):
            for op in ops:
                if not session.do(Op(op["kind"], op["arg"], tuple(op["inside"]), op["text"])):
                    break
    finally:
        session.blocks.close()
    return {"model": session.describe(), "ops": session.records}


class Session:
    """One rank's model, its DDP, and the record of each operation (plain data: the caller compares ranks)."""

    def __init__(self, impl: str, model: str, groups: list | None):
        self.impl, self.model, self.rank = impl, model, dist.get_rank()
        self.group = own_group(groups)
        world = list(range(dist.get_world_size()))
        # The groups this rank's collectives can go to, by their flight-recorder names: the world, its own.
        self.watched = {dist.distributed_c10d._get_process_group_name(dist.group.WORLD): (dist.group.WORLD, world)}
        if self.group is not None:
            self.watched[dist.distributed_c10d._get_process_group_name(self.group)] = \
                (self.group, next(g for g in groups if self.rank in g))
        self.module = _build_model(model, self.rank, SEED + self.rank, buffers_per_rank=True)
        self.trainable = [(n, p) for n, p in self.module.named_parameters() if p.requires_grad]
        self.fresh: dict[str, torch.Tensor] = {}  # this backward's gradients, as autograd computed them
        self.op_marks: dict[str, int] = {}
        self.ready: list[list] = []  # [parameter, collectives launched when autograd computed its gradient]
        self.at_end = -1  # collectives launched when every hook of the backward had run
        for name, param in self.trainable:  # registered before the DDP's own hooks: they see the raw gradient
            param.register_hook(lambda grad, name=name: self._note_gradient(name, grad))
        self.seen_buffers: str | None = None
        self.module.register_forward_pre_hook(lambda *_: self._note_buffers())
        self.optimizer = torch.optim.SGD(self.module.parameters(), lr=LR)
        self.blocks = contextlib.ExitStack()
        self.open: list[contextlib.ExitStack] = []
        self.loss: torch.Tensor | None = None
        self.forwards = 0
        self.records: list[dict] = []

    def _note_gradient(self, name: str, grad: torch.Tensor) -> None:
        if not self.ready:  # queued before any hook of a DDP's runs, so it runs before their callbacks
            torch.autograd.Variable._execution_engine.queue_callback(self._note_end)
        # Before the DDP's own hook for this gradient: what it launches counts as launched at this gradient.
        self.ready.append([name, self.launched_count()])
        self.fresh[name] = self.fresh[name] + grad if name in self.fresh else grad.detach().clone()

    def _note_end(self) -> None:
        self.at_end = self.launched_count()

    def _note_buffers(self) -> None:
        self.seen_buffers = digest(dict(self.module.named_buffers()))

    def describe(self) -> dict:
        params = [[n, list(p.shape), collective_dtype(p.dtype), p.requires_grad] for n, p in self.module.named_parameters()]
        return {"params": params, "buffers": [[n, list(b.shape), collective_dtype(b.dtype)]
                                              for n, b in self.module.named_buffers()]}

    # -- the flight recorder, per process group --------------------------------------------------------------

    def marks(self) -> dict[str, int]:
        """How many collectives each watched group has launched so far."""
        return {name: group._get_sequence_number_for_group() for name, (group, _) in self.watched.items()}

    def launched_count(self) -> int:
        """How many collectives the watched groups launched in this operation so far (cheap: no trace)."""
        return sum(count - self.op_marks.get(name, count) for name, count in self.marks().items())

    def launched_since(self, marks: dict[str, int]) -> list[dict]:
        """The collectives launched on the watched groups after ``marks``, oldest first, with their group's ranks
        (``checks.scenarios.collectives_since`` watches the default group only; a DDP may run on another)."""
        trace = pickle.loads(torch._C._distributed_c10d._dump_fr_trace(includeStackTraces=False))
        return [{"op": e["profiling_name"].split(":")[-1], "sizes": e["input_sizes"], "dtypes": e["input_dtypes"],
                 "group": self.watched[e["process_group"][0]][1]}
                for e in trace["entries"] if not e.get("is_p2p") and e["process_group"][0] in marks
                and e["collective_seq_id"] > marks[e["process_group"][0]]]

    # -- the operations --------------------------------------------------------------------------------------

    def construct(self, ddp_kwargs: dict) -> bool:
        """Wrap the model and record it; False if that raised (this rank stops there)."""
        before = self.state()
        marks = self.marks()
        kwargs = {k: v for k, v in ddp_kwargs.items() if k != "process_group"}
        record: dict[str, Any] = {"op": "construct", "before": before}
        try:
            self.ddp = wrap(self.impl, self.module, kwargs, None, self.group)
        except Exception as error:
            record["error"] = error_record(error)
        record.update(collectives=self.launched_since(marks), after=self.state(), buckets=self.buckets())
        self.records.append(record)
        return "error" not in record

    def do(self, op: Op) -> bool:
        """Run ``op`` and record it; False once it raised (this rank stops there)."""
        record: dict[str, Any] = {"op": op.kind}
        before = self.state()
        grads_before = {n: None if p.grad is None else p.grad.detach().clone() for n, p in self.trainable}
        self.seen_buffers, self.fresh, self.ready, self.at_end = None, {}, [], -1
        marks = self.op_marks = self.marks()
        try:
            getattr(self, f"op_{op.kind}")(op)
        except Exception as error:
            record["error"] = error_record(error)
        record["collectives"] = self.launched_since(marks)
        record.update(before=before, after=self.state(), seen_buffers=self.seen_buffers)
        if op.kind == "B":
            record["grads"] = self.gradients(grads_before)
            record.update(ready=self.ready, at_end=self.at_end)
        record["buckets"] = self.buckets()
        self.records.append(record)
        return "error" not in record

    def op_enter(self, op: Op) -> None:
        stack = contextlib.ExitStack()
        stack.enter_context(self.ddp.no_sync() if op.arg == "nosync" else torch.no_grad())
        self.open.append(self.blocks.enter_context(stack))

    def op_exit(self, op: Op) -> None:
        self.open.pop().close()

    def op_F(self, op: Op) -> None:
        self.loss = None
        kwargs = {"use_b": self.rank not in op.arg} if has_branch_b(self.model) else {}
        inputs = models.batch(self.model, self.rank, self.forwards)
        self.forwards += 1
        self.loss = models.loss_fn(self.ddp(inputs, **kwargs))

    def op_B(self, op: Op) -> None:
        if self.loss is None:
            raise RuntimeError("no loss to backward: the last forward raised")
        self.loss.backward()

    def op_eval(self, op: Op) -> None:
        self.ddp.eval()

    def op_train(self, op: Op) -> None:
        self.ddp.train()

    def op_zero(self, op: Op) -> None:
        self.optimizer.zero_grad()

    def op_step(self, op: Op) -> None:
        self.optimizer.step()

    # -- what the ranks hold ----------------------------------------------------------------------------------

    def state(self) -> dict:
        return {"params": digest(dict(self.module.named_parameters())),
                "buffers": digest(dict(self.module.named_buffers()))}

    def gradients(self, before: dict[str, torch.Tensor | None]) -> dict[str, dict]:
        """Per trainable parameter: its .grad now, and what it would be had nothing synchronised (the .grad
        before this backward plus this backward's own gradient), as exact digests and double sums."""
        found = {}
        for name, param in self.trainable:
            local = _plus(before[name], self.fresh.get(name))
            grad = param.grad
            found[name] = {"none": grad is None, "digest": digest({name: grad}) if grad is not None else "",
                           "sum": _sum(grad), "local_sum": _sum(local), "scale": _sum(local, absolute=True),
                           "own": (grad is None and local is None) or (grad is not None and local is not None
                                                                        and torch.equal(grad, local)),
                           "unchanged": _same(grad, before[name])}
        return found

    def buckets(self) -> list[list[int]] | None:
        """torch's buckets now (trainable parameter indices); None for your DDP (its buckets are your design)."""
        reducer = getattr(getattr(self, "ddp", None), "reducer", None)
        if self.impl != "torch" or reducer is None:
            return None
        index = {id(p): i for i, (_, p) in enumerate(self.trainable)}
        return [[index[id(p)] for p in bucket.parameters()] for bucket in reducer._get_zeros_like_grad_buckets()]


def _plus(grad: torch.Tensor | None, fresh: torch.Tensor | None) -> torch.Tensor | None:
    if grad is None or fresh is None:
        return fresh if grad is None else grad
    return grad + fresh


def _sum(tensor: torch.Tensor | None, absolute: bool = False) -> float:
    if tensor is None:
        return 0.0
    tensor = tensor.detach().double()
    return (tensor.abs() if absolute else tensor).sum().item()


def _same(a: torch.Tensor | None, b: torch.Tensor | None) -> bool:
    return (a is None and b is None) or (a is not None and b is not None and torch.equal(a, b))


def error_record(error: Exception) -> dict:
    return {"type": type(error).__name__, "message": str(error)}


def collective_dtype(dtype: torch.dtype) -> str:
    """A dtype as the flight recorder (and so the checks' messages) names it: Float, Double, Long, ..."""
    names = {**SCALAR_TYPE, torch.int64: "Long", torch.int32: "Int", torch.bool: "Bool"}
    return names.get(dtype, str(dtype).removeprefix("torch."))


# -- in the caller: start the ranks, run, compare the ranks, print -------------------------------------------

def probe_ddp(ops_text: str, model: str = "convbn", impl: str = "torch", kwargs_text: str = "", ranks: int = 2,
              pool: Any = None) -> Report:
    """One probe: its report (``.text()``), holding each rank's record (``.runs``). ``pool``: a
    ``checks.pool.WorkerPool`` of ``ranks`` workers to run it on (else one of its own, stopped after)."""
    if model not in models.MODELS:
        raise ProbeError(f"MODEL={model}: no such model; the models: {', '.join(models.MODELS)}")
    if impl not in (*IMPLS, "both"):
        raise ProbeError(f"IMPL={impl}: choose torch, minddp or both")
    if ranks not in WORLD_SIZES:
        raise ProbeError(f"RANKS={ranks}: choose {WORLD_SIZES[0]} to {WORLD_SIZES[-1]}")
    ops = parse_ops(ops_text, model, ranks)
    ddp_kwargs = parse_kwargs(kwargs_text, ranks)
    impls = list(IMPLS) if impl == "both" else [impl]
    with _pool(pool, ranks) as workers:
        runs = {name: _run_on(workers, name, model, ops, ddp_kwargs, fresh=len(impls) > 1) for name in impls}
    return Report(model, ranks, ddp_kwargs, ops, runs)


@contextlib.contextmanager
def _pool(pool: Any, ranks: int) -> Iterator[Any]:
    if pool is not None:
        yield pool
        return
    from checks.check import WARM_UP
    from checks.pool import ForkServer, WorkerPool
    server = ForkServer(paths=[ROOT], warm_up=WARM_UP)
    try:
        with WorkerPool(server, ranks, paths=[ROOT], collective_timeout_s=COLLECTIVE_TIMEOUT_S) as workers:
            yield workers
    finally:
        server.stop()


def _run_on(pool: Any, impl: str, model: str, ops: list[Op], ddp_kwargs: dict, fresh: bool) -> list[dict] | str:
    """Each rank's record of the run, or why it could not finish (the pool's words)."""
    from checks.feedback import scenario_failure
    from checks.pool import ScenarioError
    try:
        return pool.run("probe:run", deadline_s=DEADLINE_S, impl=impl, model=model, ddp_kwargs=ddp_kwargs,
                        ops=[{"kind": o.kind, "arg": o.arg, "inside": list(o.inside), "text": o.text} for o in ops],
                        groups=ddp_kwargs.get("process_group"))
    except ScenarioError as error:
        return scenario_failure(error)
    finally:
        if fresh:
            pool.close()  # the next implementation starts from fresh processes


class Report:
    """What a probe prints: per operation, each implementation's collectives and what the ranks hold."""

    def __init__(self, model: str, ranks: int, ddp_kwargs: dict, ops: list[Op], runs: dict[str, list[dict] | str]):
        self.model, self.ranks, self.ddp_kwargs, self.ops, self.runs = model, ranks, ddp_kwargs, ops, runs
        self.groups = ddp_kwargs.get("process_group") or [list(range(ranks))]
        first = next((r for r in runs.values() if not isinstance(r, str)), None)
        self.described = first[0]["model"] if first else None

    def text(self) -> str:
        lines = self.header()
        failed = {impl: run for impl, run in self.runs.items() if isinstance(run, str)}
        if len(self.runs) == 1 and failed:
            return "\n".join(lines + ["", f"The run could not finish:\n{next(iter(failed.values()))}"])
        impls = list(self.runs)
        rows = [f"{'#':>3}  {'operation':<16}{IMPLS[impls[0]]}" + (f" (* yours: where {IMPLS[impls[1]]} differs)"
                                                                   if len(impls) > 1 else "")]
        differing, uncompared = [], []
        for index, (number, label) in enumerate(self.numbered()):
            cells = {impl: self.cell(impl, index) for impl in impls}
            if all(cell is None for cell in cells.values()):
                continue
            rows_of_op, sections = self.merge(cells)
            if sections:
                why = self.not_compared(index) if sections == {"collectives"} else ""
                (uncompared if why else differing).append(f"#{number} {label}" + (f" ({why})" if why else ""))
            rows += [f"{number if i == 0 else '':>3}  {label if i == 0 else '':<16}{row}".rstrip()
                     for i, row in enumerate(rows_of_op)]
        return "\n".join(lines + [""] + rows + self.footer(failed, differing, uncompared))

    def numbered(self) -> list[tuple[str, str]]:
        """(number, label) of the construction and of each operation; a block's entry and exit get no number."""
        found, count = [("0", "construct")], 0
        for op in self.ops:
            count += op.kind not in ("enter", "exit")
            found.append((str(count) if op.kind not in ("enter", "exit") else "", op.label))
        return found

    def header(self) -> list[str]:
        args = "".join(f", {k}={v!r}" for k, v in self.ddp_kwargs.items())
        names = " and ".join(IMPLS[i] for i in self.runs)
        lines = [f"{names} on {self.ranks} gloo ranks: DistributedDataParallel(models.build({self.model!r}){args})",
                 f"Before wrapping, rank r's model is drawn from seed {SEED}+r (and r is added to its buffers); each "
                 "F feeds each rank its own batch."]
        if self.described:
            trainable = [p for p in self.described["params"] if p[3]]
            lines.append(f"Trainable parameters (p0..p{len(trainable) - 1}, registration order):")
            rows = _table([[f"p{i}", n, str(s), d, str(math.prod(s))] for i, (n, s, d, _) in enumerate(trainable)])
            lines += rows if len(rows) <= MAX_ROWS else rows[:MAX_ROWS - 4] + [f"  ... ({len(rows) - MAX_ROWS + 1} more)"] + rows[-3:]
            frozen = [p for p in self.described["params"] if not p[3]]
            if frozen:
                lines.append("Frozen (requires_grad=False): " + ", ".join(f"{n} {s} {d}" for n, s, d, _ in frozen))
            buffers = self.described["buffers"]
            lines.append("Buffers:" if buffers else "Buffers: none")
            lines += _table([[n, str(s), d, str(math.prod(s))] for n, s, d in buffers])
        return lines

    def not_compared(self, index: int) -> str:
        """Why the collectives of operation ``index`` are not compared by the checks, if they are not: torch's
        first synchronised backward (one bucket), or the forward in which torch rebuilt its buckets."""
        torch_run = self.runs.get("torch")
        if isinstance(torch_run, str) or torch_run is None or index == 0 or index >= len(torch_run[0]["ops"]):
            return ""
        kind = torch_run[0]["ops"][index]["op"]

        def reducing_backward(i: int) -> bool:
            return torch_run[0]["ops"][i]["op"] == "B" and any(i < len(r["ops"]) and r["ops"][i]["collectives"]
                                                                 for r in torch_run)
        if reducing_backward(index) and not any(map(reducing_backward, range(index))):
            return "torch's first synchronised backward"
        if kind == "F" and self.bucket_lines(torch_run, index):
            return "torch's bucket rebuild"
        return ""

    def footer(self, failed: dict[str, str], differing: list[str], uncompared: list[str] = ()) -> list[str]:
        lines = [""] + [f"{IMPLS[impl]} could not finish:\n{text}" for impl, text in failed.items()]
        if len(self.runs) > 1 and not failed:
            lines.append(f"{IMPLS['minddp']} differs from {IMPLS['torch']} in: {', '.join(differing)}." if differing
                         else f"{IMPLS['minddp']} did what {IMPLS['torch']} did in every operation the checks compare.")
            if uncompared:
                lines += textwrap.wrap("Also different, where the checks do not compare: " + ", ".join(uncompared) + ".",
                                       WIDTH)
            lines += textwrap.wrap("Shown but not compared by the checks: torch's shape check in the construction (its "
                                   "first all_gather and broadcast; handout W2); the all-reduces of the first "
                                   "synchronised backward (torch's DDP uses one bucket in it; handout §3); how many "
                                   "broadcasts a bucket rebuild sends, and their sizes (Bonus B).", WIDTH)
        return lines

    # -- one implementation's cell of one operation: sections of lines -------------------------------------

    def cell(self, impl: str, index: int) -> dict[str, list[str]] | None:
        """Sections of lines ("check", "collectives", "values", "buckets", "error") or None when nothing happened
        (a block's entry or exit with no collective), or "not run" when no rank got there."""
        run = self.runs[impl]
        if isinstance(run, str):
            return {"error": ["(the run could not finish: see below)"]} if index == 0 else None
        records = {rank: r["ops"][index] for rank, r in enumerate(run) if index < len(r["ops"])}
        if not records:
            return {"values": ["(not run: stopped at an error before)"]}
        kind = next(iter(records.values()))["op"]
        sections = {"values": self.values(kind, records), "buckets": self.bucket_lines(run, index),
                    "error": self.errors(records, len(run))}
        if kind == "construct" and impl == "torch":
            checked, records = shape_check(records)
            sections["check"] = [f"{line}   (shape check)" for line in self.collectives(checked)]
        sections["collectives"] = self.collectives(records)
        if kind in ("enter", "exit") and sections["collectives"] == ["(no collective)"] and not sections["error"]:
            return None
        return sections

    def collectives(self, records: dict[int, dict]) -> list[str]:
        split = len(self.groups) > 1
        per_rank = {rank: [f"{c['op']:<11}{collective_text(c):<15}{self.launched_when(r, i)}".rstrip()
                           + (f"  on ranks {c['group']}" if split else "")
                           for i, c in enumerate(r["collectives"])] or ["(no collective)"]
                    for rank, r in records.items()}
        if len({tuple(lines) for lines in per_rank.values()}) == 1:
            return next(iter(per_rank.values()))
        return [f"rank {rank}: {line}" for rank, lines in per_rank.items() for line in lines]

    def launched_when(self, record: dict, index: int) -> str:
        """When a backward launched its collective ``index``, by the order of events: as autograd computed some
        parameter's gradient (before the next one), or once every hook had run. Not for the usage bitmap's (Int):
        when to send it is yours."""
        if "ready" not in record or record["collectives"][index]["dtypes"] == ["Int"]:
            return ""
        if 0 <= record["at_end"] <= index:
            return " after every hook ran"
        names = [p[0] for p in self.described["params"] if p[3]] if self.described else []
        at = [name for name, count in record["ready"] if count <= index]
        if not at:
            return " before any gradient"
        return f" at p{names.index(at[-1])}'s gradient" if at[-1] in names else f" at {at[-1]}'s gradient"

    def values(self, kind: str, records: dict[int, dict]) -> list[str]:
        """What the ranks hold after the operation, compared across the ranks of each process group."""
        if len(records) < self.ranks:
            return []
        rec = [records[r] for r in range(self.ranks)]
        before, after = ({what: [r[when][what] for r in rec] for what in ("params", "buffers")}
                         for when in ("before", "after"))
        buffers = bool(self.described and self.described["buffers"])
        if kind == "construct":
            return [f"-> parameters: {self.agreement(after['params'], before['params'])}"] + \
                ([f"-> buffers: {self.agreement(after['buffers'], before['buffers'])}"] if buffers else [])
        if kind == "F" and buffers and all(r["seen_buffers"] for r in rec):
            return [f"-> buffers the module ran with: {self.agreement([r['seen_buffers'] for r in rec], before['buffers'])}",
                    f"-> buffers after the forward: {self.agreement(after['buffers'])}"]
        if kind == "B" and all("grads" in r for r in rec):
            return self.gradient_lines([r["grads"] for r in rec])
        if kind == "step":
            return [f"-> parameters: {self.agreement(after['params'])}"]
        return []

    def agreement(self, now: list[str], before: list[str] | None = None) -> str:
        """How the ranks' digests ``now`` relate: equal within each group (its rank 0's from ``before``?) or not."""
        words = []
        for group in self.groups:
            same = len({now[r] for r in group}) == 1
            if len(group) == 1:
                word = "one rank, nothing to compare"
            elif before is not None and len({before[r] for r in group}) == 1 and same:
                word = "equal on every rank, as before"
            elif same:
                word = f"rank {group[0]}'s on every rank" if before is not None and now[group[0]] == before[group[0]] \
                    else "equal on every rank"
            elif before is not None and all(now[r] == before[r] for r in group):
                word = "each rank's own"
            else:
                word = "differ across ranks"
            words.append(word if len(self.groups) == 1 else f"ranks {group}: {word}")
        return "; ".join(words)

    def gradient_lines(self, grads: list[dict[str, dict]]) -> list[str]:
        """Each trainable parameter's .grad after a backward, in words, grouped: averaged over the ranks, each
        rank's own, ..."""
        kinds: dict[str, list[int]] = {}
        for index, name in enumerate(grads[0]):
            kinds_by_group = [_gradient_kind([grads[r][name] for r in group]) for group in self.groups]
            words = kinds_by_group[0] if len(self.groups) == 1 else \
                "; ".join(f"ranks {group}: {kind}" for group, kind in zip(self.groups, kinds_by_group, strict=True))
            kinds.setdefault(words, []).append(index)
        if len(kinds) == 1:
            return [f"-> .grad: {next(iter(kinds))} (all {len(grads[0])} parameters)"]
        return [f"-> .grad: {words}: {_indices(indices)}" for words, indices in kinds.items()]

    def bucket_lines(self, run: list[dict], index: int) -> list[str]:
        """torch's buckets, when this operation changed them (at construction: always)."""
        now = [r["ops"][index]["buckets"] for r in run if index < len(r["ops"])]
        if now[0] is None:
            return []
        before = [r["ops"][index - 1]["buckets"] for r in run] if index else [None] * len(now)
        if now == before:
            return []
        what = "-> torch's buckets" + (" (changed)" if index else "")
        if all(n == now[0] for n in now):
            return [f"{what}: " + " ".join("{" + _indices(b) + "}" for b in now[0])]
        return [f"{what}, rank {rank}: " + " ".join("{" + _indices(b) + "}" for b in n) for rank, n in enumerate(now)]

    def errors(self, records: dict[int, dict], ranks: int) -> list[str]:
        """Each rank's error, the ranks with the same one together; torch's messages may name the rank that
        raised: read as "rank <r>"."""
        texts = {}
        for rank, record in records.items():
            if "error" in record:
                error = record["error"]
                text = f"{error['type']}: " + re.sub(rf"\brank {rank}\b", "rank <r>", error["message"])
                if "Timed out" in text:
                    text += f" [the probe: a collective that no other rank joined within {COLLECTIVE_TIMEOUT_S:.0f} s]"
                texts[rank] = text
        lines = []
        for text in dict.fromkeys(texts.values()):
            on = [rank for rank in texts if texts[rank] == text]
            who = "every rank" if len(on) == ranks else "rank " + ", ".join(map(str, on))
            lines += textwrap.wrap(f"!! {who} raised {text}", WIDTH - 22, subsequent_indent="   ")
        return lines + ["   (a rank stops at its first error)"] if lines else []

    def merge(self, cells: dict[str, dict | None]) -> tuple[list[str], set[str]]:
        """The rows of one operation: the first implementation's sections, each followed, where the second's
        differs, by the second's, marked; and the sections that differ (torch's shape check and buckets are not
        compared)."""
        rows, differs = [], set()
        first, *others = [cell or {} for cell in cells.values()]
        for section in ("check", "collectives", "values", "buckets", "error"):
            rows += first.get(section, [])
            for other in others:
                theirs = other.get(section, [])
                if section in ("check", "buckets") or theirs == first.get(section, []):
                    continue
                differs.add(section)
                rows += [f"{'* yours:' if i == 0 else '*':<9}{line}" for i, line in enumerate(theirs or ["(nothing)"])]
        return rows, differs


def shape_check(records: dict[int, dict]) -> tuple[dict[int, dict], dict[int, dict]]:
    """The construction's records split in two: torch's check that every rank's parameters have the same shapes
    (its first collectives, which the checks leave out: ``checks.part4.construction_collectives``), and the rest."""
    checked, rest = {}, {}
    for rank, record in records.items():
        kept = len(construction_collectives({"construct": record["collectives"]}, torch_ddp=True))
        cut = len(record["collectives"]) - kept
        checked[rank] = {**record, "collectives": record["collectives"][:cut]}
        rest[rank] = {**record, "collectives": record["collectives"][cut:]}
    return checked, rest


def _gradient_kind(per_rank: list[dict]) -> str:
    """What a parameter's .grad is on the ranks of one group, from each rank's digests and double sums."""
    if all(g["none"] for g in per_rank):
        return "None (no gradient)"
    if all(g["unchanged"] for g in per_rank):
        return "unchanged"
    if len(per_rank) == 1:
        return "its own (a group of one rank)" if per_rank[0]["own"] else "not its own gradient"
    if all(g["own"] for g in per_rank) and len({g["digest"] for g in per_rank}) > 1:
        return "each rank's own: accumulated locally, not averaged"
    if len({g["digest"] for g in per_rank}) == 1:
        total, scale = sum(g["local_sum"] for g in per_rank), sum(g["scale"] for g in per_rank) + 1e-30
        if abs(per_rank[0]["sum"] - total / len(per_rank)) <= 1e-5 * scale:
            return "averaged over the ranks"
        if abs(per_rank[0]["sum"] - total) <= 1e-5 * scale:
            return "summed over the ranks, not averaged"
        return "equal on every rank, but not the average"
    return "differ across ranks, not each rank's own"


def _indices(indices: list[int]) -> str:
    """p-indices, a run of 3 or more consecutive ones shortened: p9 p8 p6 p7, p0..p11, p47..p0."""
    runs: list[list[int]] = []
    for i in indices:
        run = runs[-1] if runs else []
        if len(run) == 1 and abs(i - run[0]) == 1 or len(run) > 1 and i - run[-1] == run[1] - run[0]:
            run.append(i)
        else:
            runs.append([i])
    return " ".join(f"p{r[0]}..p{r[-1]}" if len(r) >= 3 else " ".join(f"p{i}" for i in r) for r in runs)


def _table(rows: list[list[str]], indent: str = "  ") -> list[str]:
    widths = [max(len(row[c]) for row in rows) for c in range(len(rows[0]))] if rows else []
    return [indent + "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in rows]


# -- bucket mode ------------------------------------------------------------------------------------------------

DTYPES = {"float32": torch.float32, "float": torch.float32, "float16": torch.float16, "half": torch.float16,
          "bfloat16": torch.bfloat16, "float64": torch.float64, "double": torch.float64}
UNITS = {"B": 1, "KB": 10**3, "MB": 10**6, "GB": 10**9, "KIB": 2**10, "MIB": 2**20, "GIB": 2**30}
SIZE = re.compile(r"^(\d+(?:\.\d+)?)([A-Za-z]*)$")
TENSOR = re.compile(r"^(?P<size>[^:@*/]+)(?::(?P<dtype>\w+))?(?:@(?P<device>\w+))?(?P<layout>/\w+)?(?:\*(?P<count>\d+))?$")
MAX_CPU_BYTES = 2**30


@dataclass
class TensorSpec:
    elements: int
    dtype: torch.dtype
    device: str
    text: str = field(default="", compare=False)
    transposed: bool = False  # a 2-D view of (2, n/2) memory, transposed: not contiguous

    def tensor(self) -> torch.Tensor:
        flat = torch.empty(self.elements, dtype=self.dtype, device=self.device)
        return flat.view(2, self.elements // 2).t() if self.transposed else flat

    @property
    def layout(self) -> str:
        return f"{self.elements // 2}x2 transposed" if self.transposed else "contiguous"

    @property
    def bytes(self) -> int:
        return self.elements * self.dtype.itemsize


def parse_bytes(text: str, what: str) -> int:
    """'12MiB', '1.5MB', '100B' or '4096' (bytes) as a whole number of bytes."""
    match = SIZE.match(text.strip())
    unit = (match.group(2).upper() if match else "") or "B"
    if not match or unit not in UNITS:
        raise ProbeError(f"{what}: cannot read {text!r} as a size: a number of bytes with a unit, e.g. 12MiB, 4KiB, "
                         f"1.5MB, 100B ({', '.join(u.replace('I', 'i') for u in UNITS)})")
    value = float(match.group(1)) * UNITS[unit]
    if value != int(value):
        raise ProbeError(f"{what}: {text} is not a whole number of bytes")
    return int(value)


def parse_tensors(text: str) -> list[TensorSpec]:
    """``SIZE[:dtype][@cpu][/t][*N]`` for each tensor, in registration order; SIZE is elements or bytes with a unit."""
    specs = []
    for token in text.split():
        match = TENSOR.match(token)
        if not match:
            raise ProbeError(f"TENSORS: cannot read {token!r}: write SIZE[:dtype][@cpu][/t][*N], e.g. 1000 (elements), "
                             "10MiB, 8MiB:float16, 4KiB@cpu, 4KiB/t, 1KiB*100")
        dtype = DTYPES.get((match["dtype"] or "float32").lower())
        if dtype is None:
            raise ProbeError(f"TENSORS: {token!r}: unknown dtype {match['dtype']!r}; choose {', '.join(DTYPES)}")
        device = (match["device"] or "meta").lower()
        if device not in ("meta", "cpu"):
            raise ProbeError(f"TENSORS: {token!r}: device {device!r}: meta (the default: no memory) or cpu (a second device)")
        size = match["size"]
        if size.isdigit():
            elements = int(size)
        else:
            nbytes = parse_bytes(size, f"TENSORS: {token!r}")
            if nbytes % dtype.itemsize:
                raise ProbeError(f"TENSORS: {token!r}: {nbytes} bytes is not a whole number of {match['dtype'] or 'float32'} "
                                 f"elements ({dtype.itemsize} bytes each)")
            elements = nbytes // dtype.itemsize
        layout = match["layout"]
        if layout not in (None, "/t"):
            raise ProbeError(f"TENSORS: {token!r}: unknown layout {layout!r}; /t (a transposed 2-D view) or none")
        if layout and (elements < 4 or elements % 2):
            raise ProbeError(f"TENSORS: {token!r}: /t needs an even number of elements, at least 4 (a 2 x n/2 "
                             "tensor, transposed)")
        specs += [TensorSpec(elements, dtype, device, token, bool(layout))] * int(match["count"] or 1)
    if not specs:
        raise ProbeError("TENSORS is empty: describe the tensors in registration order, e.g. "
                         "TENSORS=\"10MiB 2MiB 8MiB 20MiB 4MiB\"")
    if sum(s.bytes for s in specs if s.device == "cpu") > MAX_CPU_BYTES:
        raise ProbeError("TENSORS: more than 1 GiB on cpu: use meta tensors (the default) for large sizes")
    return specs


def parse_order(text: str, count: int) -> tuple[list[int], str]:
    """The order the tensors are bucketed in: reverse (DDP's), registration, or the indices."""
    word = text.strip().lower() or "reverse"
    if word == "reverse":
        return list(range(count - 1, -1, -1)), "reverse registration order, as DDP"
    if word in ("registration", "forward"):
        return list(range(count)), "registration order"
    try:
        order = [int(i) for i in text.replace(",", " ").split()]
    except ValueError:
        raise ProbeError(f"ORDER={text!r}: write reverse, registration, or the indices, e.g. ORDER=\"4 3 2 1 0\"") from None
    if sorted(order) != list(range(count)):
        raise ProbeError(f"ORDER={text!r}: must list each of the {count} tensors' indices 0-{count - 1} once")
    return order, "the order given"


def torch_bucket_assignment(specs: list[TensorSpec], limits: list[int], order: list[int]) -> tuple[list[list[int]], list[int]]:
    """torch's own answer: (buckets of tensor indices, the limit each bucket was filled up to)."""
    tensors = [s.tensor() for s in specs]
    buckets, bucket_limits_used = dist._compute_bucket_assignment_by_size([tensors[i] for i in order], limits, [], order)
    return [list(b) for b in buckets], list(bucket_limits_used)


def probe_buckets(tensors: str, limits: str = "", order: str = "") -> str:
    """The report of bucket mode: ``tensors``, ``limits`` and ``order`` as TENSORS, LIMITS and ORDER write them."""
    specs = parse_tensors(tensors)
    limits_text, limits = limits, [parse_bytes(t, "LIMITS") for t in limits.replace(",", " ").split()] or bucket_limits()
    order, how = parse_order(order, len(specs))
    buckets, _ = torch_bucket_assignment(specs, limits, order)
    lines = [f"torch.distributed._compute_bucket_assignment_by_size: {len(specs)} tensors in {how}, limits "
             f"[{', '.join(human_bytes(b) for b in limits)}]" + ("" if limits_text.strip() else " (DDP's defaults)"),
             "Tensors (registration order): elements, bytes, device, memory layout"]
    lines += _table([[f"t{i}", f"{s.elements} {collective_dtype(s.dtype)}", human_bytes(s.bytes), s.device, s.layout]
                     for i, s in enumerate(specs)])
    lines += ["Order: " + " ".join(f"t{i}" for i in order), "Buckets, in the order torch returns them:"]
    # Not each bucket's limit: which limit a bucket got is one of the facts the probe lets students find out.
    lines += _table([[f"bucket {k}", " ".join(f"t{i}" for i in bucket), human_bytes(sum(specs[i].bytes for i in bucket)),
                      collective_dtype(specs[bucket[0]].dtype), specs[bucket[0]].device] for k, bucket in enumerate(buckets)])
    return "\n".join(lines)


def human_bytes(count: int) -> str:
    """Bytes in the largest unit that holds them exactly: 24 MiB, 20483 KiB, 2000 B."""
    unit = next((u for u in ("GiB", "MiB", "KiB") if count >= UNITS[u.upper()] and count % UNITS[u.upper()] == 0), "B")
    return f"{count // UNITS[unit.upper()]} {unit}"


# -- command line --------------------------------------------------------------------------------------------

def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    modes = parser.add_subparsers(dest="mode", required=True)
    ddp = modes.add_parser("ddp", help="run a DDP on gloo ranks for the operations OPS; print every collective")
    ddp.add_argument("ops", help=GRAMMAR)
    ddp.add_argument("--model", default="convbn", help=f"one of {', '.join(models.MODELS)} (default convbn)")
    ddp.add_argument("--impl", default="torch", help="torch (default), minddp (yours) or both (side by side)")
    ddp.add_argument("--kwargs", default="", help="the DDP's arguments: \"bucket_cap_mb=0.001 find_unused_parameters=True\"")
    ddp.add_argument("--ranks", type=int, default=2, help="how many gloo processes (default 2)")
    buckets = modes.add_parser("buckets", help="torch's bucket assignment of tensors you describe")
    buckets.add_argument("tensors", help="SIZE[:dtype][@cpu][/t][*N] ..., registration order: 10MiB 2MiB 8MiB:float16")
    buckets.add_argument("--limits", default="", help="bucket byte limits, e.g. \"1MiB 12MiB\" (default DDP's: 1 MiB, 25 MiB)")
    buckets.add_argument("--order", default="", help="reverse (default), registration, or indices \"4 3 2 1 0\"")
    args = parser.parse_args(argv)
    try:
        if args.mode == "ddp":
            print(probe_ddp(args.ops, args.model, args.impl, args.kwargs, args.ranks).text())
        else:
            print(probe_buckets(args.tensors, args.limits, args.order))
    except ProbeError as error:
        print(f"probe: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
