# GENERATED from solutions/checks/late_backend.py by tools/assign.py (staff: edit that file, then `make assignment`).
# Provided code: do not edit it by hand; the grader uses its own copy.
"""Provided — "late": a test backend whose collectives complete only when waited on (handout §3).

On gloo a work finishes in a background thread, whenever it finishes: code that reads a bucket before waiting
on it, or waits only on the LAST bucket's work, gets the right values on some runs and not on others. Through
this backend the same code gets the same values every time. It forwards every collective to a gloo group, bit
for bit, but gloo computes into a private copy: YOUR tensors receive the result only when the work
*completes*, and a work completes only on one of these events, never on a timer:

1. its ``wait()`` is called, or ``wait()`` on its ``get_future()`` or on a future chained from it by
   ``.then()`` (also through ``torch.futures.wait_all`` / ``collect_all``);
2. the backward pass it was launched in ends: the engine runs a callback, queued at the backward's first
   launch, that completes what is still pending (after any callback queued before that launch).

Two orders (``as_default_group(in_order=...)``):

* in order (every training run): waiting on a work first completes every work launched before it, and 2.
  completes in launch order: gloo's order, made deterministic;
* out of order (``train(backend="late")``): waiting completes that work alone, and 2. completes the LAST
  launched FIRST: waiting on one work tells you nothing about another.

Until you wait on a work, its tensors hold what they held at launch. torch's DDP waits on every bucket (its
finalize, queued after the last launch, finds them completed by 2.), so it trains through this backend,
either order, exactly as through gloo (tests/test_provided.py).

Use (every rank at once)::

    with late_backend.as_default_group(in_order=False):  # dist.* with group=None, and DDPs, go through it
        ...

Built on torch's support for process groups written in Python: ``dist.Backend.register_backend`` (the
creator returns a ``dist.ProcessGroup`` subclass), ``dist._Work`` subclasses (``wait``, ``get_future``) and
``torch.futures.Future``.
"""

from __future__ import annotations

import contextlib
import datetime
from collections.abc import Callable, Iterator
from typing import Any

import torch
import torch.distributed as dist
from torch._C._distributed_c10d import ProcessGroupGloo

NAME = "late"


class LateFuture(torch.futures.Future):
    """A future of late works: waiting on it (or on a future chained from it) completes them, in order."""

    def __init__(self, works: list[LateWork]):
        super().__init__()
        self.works = works

    def wait(self) -> Any:
        for work in self.works:
            work.complete()
        return super().wait()

    def then(self, callback: Callable) -> LateFuture:
        """``Future.then``, but the chained future is a LateFuture too (waiting on it completes the works)."""
        child = LateFuture(self.works)

        def run(_: Any) -> None:
            try:
                child.set_result(callback(self))
            except BaseException as error:  # as torch's then(): the error goes to the chained future
                child.set_exception(error)
        self.add_done_callback(run)
        return child


def collect_all(futures: list) -> torch.futures.Future:
    """``torch._C._collect_all`` (behind ``torch.futures.wait_all`` and ``collect_all``) while the late group is
    the default: torch's would block in C++, where no late work can be completed, so late futures get one that
    completes them when waited."""
    futures = list(futures)
    works = [work for fut in futures if isinstance(fut, LateFuture) for work in fut.works]
    if not works:
        return _collect_all(futures)
    collected = LateFuture(works)

    def done(all_done: torch.futures.Future) -> None:
        try:
            all_done.wait()
            collected.set_result(futures)
        except BaseException as error:
            collected.set_exception(error)
    _collect_all(futures).add_done_callback(done)
    return collected


_collect_all = torch._C._collect_all


class LateWork(dist._Work):
    """One collective: gloo computes into ``staging``; ``deliver`` copies it into the caller's tensors."""

    def __init__(self, group: LateGroup, inner: dist._Work, deliver: Callable[[], None], result: list):
        super().__init__()
        self.group, self.inner, self.deliver, self.result_ = group, inner, deliver, result
        self.completed = False
        self.future: LateFuture | None = None

    def complete(self) -> None:
        """Complete this work (in order: and every work launched before it). Idempotent."""
        if self.completed:
            return
        if self.group.in_order:
            for earlier in self.group.pending[:self.group.pending.index(self)]:
                earlier.complete_alone()
        self.complete_alone()

    def complete_alone(self) -> None:
        """Wait for gloo (with the group's timeout), then hand the result over (and to the future, if any)."""
        self.completed = True
        self.group.pending.remove(self)
        try:
            self.inner.wait(self.group.timeout)
            self.deliver()
        except BaseException as error:
            if self.future is not None:
                self.future.set_exception(error)
            raise
        if self.future is not None:
            self.future.set_result(self.result_)

    # -- what torch calls (from Python, or from C++ through the Work trampoline) ------------------------------
    def wait(self, timeout: datetime.timedelta | None = None) -> bool:
        self.complete()
        return True

    def is_completed(self) -> bool:
        return self.completed

    def is_success(self) -> bool:
        return self.completed

    def result(self) -> list:
        return self.result_

    def get_future(self) -> LateFuture:
        if self.future is None:
            self.future = LateFuture([self])
            if self.completed:
                self.future.set_result(self.result_)
        return self.future


class LateGroup(dist.ProcessGroup):
    """A process group that runs every collective on ``gloo`` (a ProcessGroupGloo of the same ranks)."""

    def __init__(self, gloo: ProcessGroupGloo, rank: int, size: int, timeout: datetime.timedelta):
        super().__init__(rank, size)
        self.gloo, self.timeout = gloo, timeout
        self.pending: list[LateWork] = []  # launched, not completed, oldest first
        self.launched = 0  # collectives launched so far (what _get_sequence_number_for_group reports)
        self.flushed_backward = -1  # the backward whose end completes what is pending (queued once per backward)
        self.in_order = True

    def getBackendName(self) -> str:
        return NAME

    def setGroupName(self, name: str) -> None:  # dist.new_group names the group; so does gloo's group inside
        self.name_ = name
        self.gloo._set_group_name(name)  # its entries in the flight recorder carry this name

    def getGroupName(self) -> str:
        return self.name_

    def setGroupDesc(self, desc: str) -> None:
        self.desc_ = desc

    def getGroupDesc(self) -> str:
        return self.desc_

    def _get_sequence_number_for_group(self) -> int:
        return self.launched

    # -- the mechanism -----------------------------------------------------------------------------------------
    def launch(self, outputs: list[torch.Tensor], inputs: list[torch.Tensor],
               run: Callable[[list, list], dist._Work], result: list) -> LateWork:
        """Run ``run(staged outputs, staged inputs)`` on gloo; deliver the staged outputs into ``outputs`` later."""
        staged_in = [t.clone() for t in inputs]
        staged_out = [t.clone() for t in outputs]

        def deliver() -> None:
            for mine, staged in zip(outputs, staged_out, strict=True):
                mine.copy_(staged)
        self.launched += 1
        work = LateWork(self, run(staged_out, staged_in), deliver, result)
        self.pending.append(work)
        self.queue_flush()
        return work

    def queue_flush(self) -> None:
        """During backward, make sure the engine completes what is still pending when the backward ends."""
        backward = torch._C._current_graph_task_id()  # -1 outside backward: there only a wait completes a work
        if backward not in (-1, self.flushed_backward):
            torch.autograd.Variable._execution_engine.queue_callback(self.flush)
            self.flushed_backward = backward

    def flush(self) -> None:
        """End of backward: complete every pending work (out of order: the last launched first)."""
        for work in list(self.pending) if self.in_order else reversed(list(self.pending)):
            work.complete_alone()

    # -- the collectives (the argument lists of dist.ProcessGroup's) -------------------------------------------
    def allreduce(self, tensors: list[torch.Tensor], opts: Any = None) -> LateWork:
        opts = opts if opts is not None else dist.AllreduceOptions()
        return self.launch(tensors, [], lambda out, _: self.gloo.allreduce(out, opts), tensors)

    def allreduce_coalesced(self, tensors: list[torch.Tensor], opts: Any = None) -> LateWork:
        opts = opts if opts is not None else dist.AllreduceCoalescedOptions()
        return self.launch(tensors, [], lambda out, _: self.gloo.allreduce_coalesced(out, opts), tensors)

    def broadcast(self, tensors: list[torch.Tensor], opts: Any = None) -> LateWork:
        opts = opts if opts is not None else dist.BroadcastOptions()
        return self.launch(tensors, [], lambda out, _: self.gloo.broadcast(out, opts), tensors)

    def allgather(self, output_lists: list[list[torch.Tensor]], inputs: list[torch.Tensor],
                  opts: Any = None) -> LateWork:
        opts = opts if opts is not None else dist.AllgatherOptions()
        sizes = [len(outputs) for outputs in output_lists]
        flat = [t for outputs in output_lists for t in outputs]

        def run(out: list, staged_in: list) -> dist._Work:
            lists, start = [], 0
            for n in sizes:
                lists.append(out[start:start + n])
                start += n
            return self.gloo.allgather(lists, staged_in, opts)
        return self.launch(flat, inputs, run, output_lists)

    def _allgather_base(self, output: torch.Tensor, input: torch.Tensor, opts: Any = None) -> LateWork:
        opts = opts if opts is not None else dist.AllgatherOptions()
        return self.launch([output], [input], lambda out, inp: self.gloo._allgather_base(out[0], inp[0], opts),
                           [output])

    def barrier(self, opts: Any = None) -> LateWork:
        opts = opts if opts is not None else dist.BarrierOptions()
        return self.launch([], [], lambda out, inp: self.gloo.barrier(opts), [])


# -- creating the group, and making it the default one ----------------------------------------------------------

def create(options: Any, _backend_options: Any = None) -> LateGroup:
    """The creator ``dist.new_group(backend="late")`` calls (``register_backend(..., extended_api=True)``)."""
    store = dist.PrefixStore("late-gloo", options.store)
    backend = ProcessGroupGloo(store, options.group_rank, options.group_size, options.timeout)
    gloo = dist.ProcessGroup(store, options.group_rank, options.group_size)  # what dist.new_group("gloo") builds
    gloo._register_backend(torch.device("cpu"), dist.ProcessGroup.BackendType.GLOO, backend)
    gloo._set_default_backend(dist.ProcessGroup.BackendType.GLOO)
    late = LateGroup(gloo, options.group_rank, options.group_size, options.timeout)
    late.in_order = _in_order
    return late


if NAME.upper() not in dist.Backend._plugins:
    dist.Backend.register_backend(NAME, create, extended_api=True, devices=["cpu"])

_group: LateGroup | None = None
_in_order = True  # of the groups created now


def group() -> LateGroup:
    """This process's late group over all ranks (created on first use, by every rank at once)."""
    global _group
    if _group is None:
        _group = dist.new_group(backend=NAME)
    return _group


@contextlib.contextmanager
def as_default_group(in_order: bool = True) -> Iterator[LateGroup]:
    """Within the block, the default process group (group=None: torch's DDP, yours, dist.*) is the late group,
    completing in order or out of order (groups made inside with dist.new_group too)."""
    global _in_order
    world = dist.distributed_c10d._world
    late, saved = group(), world.default_pg
    late.in_order = _in_order = in_order
    world.default_pg, torch._C._collect_all = late, collect_all
    try:
        yield late
    finally:
        world.default_pg, torch._C._collect_all, _in_order = saved, _collect_all, True
        late.pending.clear()  # what the block never waited on is dropped: the next block starts clean
