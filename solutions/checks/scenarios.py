"""Provided — what the workers run for each check (see ``checks.pool``): build, train, observe, report.

A scenario runs on every rank at once and returns plain data (digests, sums, the collectives it saw);
the comparison with the reference happens in the caller (``checks.compare``), never here. Training
scenarios take ``impl``:

* ``"torch"``: torch's own DistributedDataParallel, the reference;
* ``"minddp"``: your ``minddp.ddp.DistributedDataParallel`` (Part 4 and the bonus);
* ``"reducer"``: ``ReducerDriver``, the smallest wrapper that drives your Reducer (Part 3 is graded
  through it, so it does not depend on your Part 4).

Collectives are seen by torch's flight recorder, which records every collective whatever API issued it.
Nothing from ``minddp`` is imported at module level: the code under test is whatever ``minddp`` the
worker's ``sys.path`` finds when a scenario runs.
"""

from __future__ import annotations

import contextlib
import datetime
import functools
import hashlib
import os
import pickle
import secrets
import signal
import traceback
from collections.abc import Callable
from typing import Any

import torch
import torch.distributed as dist

from checks import late_backend
from checks.error_text import steady

MiB = 2**20


def warm_up() -> None:
    """What the fork server runs once, so every worker it forks starts warm: the first optimizer imports
    torch._dynamo (1.5 s), the first backward initialises autograd (no threads: OMP_NUM_THREADS=1)."""
    module = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
    optimizer = torch.optim.SGD(module.parameters(), lr=0.1)
    module(torch.randn(4, 8)).pow(2).mean().backward()
    optimizer.step()


# -- observing collectives ---------------------------------------------------------------------------------

WATCHED: list = []  # the process group a training run's DDP is given, if not the default one (``_train``)


def collective_mark() -> int:
    """How many collectives this rank has launched on the default group so far."""
    return dist.distributed_c10d._get_default_group()._get_sequence_number_for_group()


def marks() -> dict[str, int]:
    """{group name: collectives launched so far} for the default group and the group being watched: what
    ``collectives_since`` and ``launched_since`` count from."""
    groups = [dist.distributed_c10d._get_default_group(), *WATCHED]
    return {group.group_name: group._get_sequence_number_for_group() for group in groups}


def launched_since(mark: dict[str, int]) -> int:
    """How many collectives this rank launched since ``mark`` (on the groups it counts)."""
    return sum(marks().get(name, seq) - seq for name, seq in mark.items())


def collectives_since(mark: dict[str, int]) -> list[dict]:
    """Collectives this rank launched after ``mark`` on the groups it counts (the default group's and the
    watched group's, whichever is the default: gloo's or the late group), oldest first: op, input sizes,
    input dtypes."""
    trace = pickle.loads(torch._C._distributed_c10d._dump_fr_trace(includeStackTraces=False))
    return [{"op": e["profiling_name"].split(":")[-1], "sizes": e["input_sizes"], "dtypes": e["input_dtypes"]}
            for e in trace["entries"] if e["process_group"][0] in mark
            and e["collective_seq_id"] > mark[e["process_group"][0]] and not e.get("is_p2p")]


def digest(tensors: dict[str, torch.Tensor]) -> str:
    """A short hash of the exact bits of named tensors: equal digests are equal values."""
    h = hashlib.sha256()
    for name, t in tensors.items():
        h.update(name.encode())
        h.update(t.detach().contiguous().view(-1).view(torch.uint8).numpy().tobytes())
    return h.hexdigest()[:16]


# -- building the wrapped model ----------------------------------------------------------------------------

def bucket_limits(bucket_cap_mb: float | None = None, bucket_cap_mb_list: list | None = None) -> list[int]:
    """torch DDP's meaning of its arguments: [first bucket, later buckets] in bytes (defaults 1 and 25 MiB)."""
    mbs = bucket_cap_mb_list or ([bucket_cap_mb] if bucket_cap_mb is not None else [1, 25])
    return [int(mb * MiB) for mb in mbs]


def torch_buckets(module: torch.nn.Module, ddp_kwargs: dict) -> list[list[int]]:
    """torch's own assignment of the trainable parameters, in reverse order, with torch DDP's limits: what the
    driver hands your Reducer. Computed in torch's run (the reference), which passes it to yours."""
    params = [p for p in module.parameters() if p.requires_grad]
    order = list(range(len(params) - 1, -1, -1))
    limits = bucket_limits(ddp_kwargs.get("bucket_cap_mb"), ddp_kwargs.get("bucket_cap_mb_list"))
    return dist._compute_bucket_assignment_by_size([params[i] for i in order], limits, [], order)[0]


SCALAR_TYPE = {torch.float32: "Float", torch.float64: "Double", torch.float16: "Half", torch.bfloat16: "BFloat16"}


def planned_allreduces(module: torch.nn.Module, buckets: list[list[int]], hook: str | None) -> list[str]:
    """'elements dtype' of the all-reduces a first backward launches with ``buckets`` (the handout's buckets; torch's
    own DDP uses one bucket in its first iteration, then rebuilds): one per bucket, in index order, of its dtype
    (float16 under the fp16 compression hook)."""
    params = [p for p in module.parameters() if p.requires_grad]
    return [f"{sum(params[i].numel() for i in bucket)} {'Half' if hook == 'fp16' else SCALAR_TYPE[params[bucket[0]].dtype]}"
            for bucket in buckets]


class ReducerDriver(torch.nn.Module):
    """Drives your Reducer the way a DDP wrapper does, and nothing more: the trainable parameters, in the
    buckets torch assigns them (``bucket_indices``, from torch's run of the same scenario), go to
    ``Reducer(params, bucket_indices)``; every forward with gradients enabled ends with
    ``prepare_for_backward()``. Every rank builds the same model from the same seed, so no broadcast is
    needed."""

    def __init__(self, module: torch.nn.Module, bucket_indices: list[list[int]], process_group: Any = None,
                 **_limits: Any):
        super().__init__()
        from minddp.reducer import Reducer
        self.module = module
        self.reducer = Reducer([p for p in module.parameters() if p.requires_grad], bucket_indices, process_group)

    def forward(self, *inputs: Any, **kwargs: Any) -> Any:
        outputs = self.module(*inputs, **kwargs)
        if torch.is_grad_enabled():
            self.reducer.prepare_for_backward()
        return outputs

    def register_comm_hook(self, state: Any, hook: Callable) -> None:
        self.reducer.register_comm_hook(state, hook)


def wrap(impl: str, module: torch.nn.Module, ddp_kwargs: dict, bucket_indices: list | None,
         process_group: Any = None) -> torch.nn.Module:
    if impl == "torch":
        kwargs = {k: v for k, v in ddp_kwargs.items() if k != "rebuild_buckets"}
        return torch.nn.parallel.DistributedDataParallel(module, process_group=process_group, **kwargs)
    if impl == "minddp":
        from minddp.ddp import DistributedDataParallel
        return DistributedDataParallel(module, process_group=process_group, **ddp_kwargs)
    if impl == "reducer":
        return ReducerDriver(module, bucket_indices, process_group, **ddp_kwargs)
    raise ValueError(f"unknown impl {impl!r}")


def install_hook(impl: str, ddp: torch.nn.Module, hook: str, names: dict[int, str], log: list, group: Any = None) -> None:
    """Register a comm hook: "record" logs (bucket index, parameter names, what the bucket holds) then averages
    over ``group`` (the DDP's process group); "fp16" compresses."""
    if hook == "fp16":
        if impl == "torch":
            from torch.distributed.algorithms.ddp_comm_hooks.default_hooks import fp16_compress_hook
        else:
            from minddp.reducer import fp16_compress_hook
        ddp.register_comm_hook(None, fp16_compress_hook)
        return

    registered = {"hook": "record"}  # the state the hook must be called with: this very object

    def record(state, bucket):  # no annotations: torch insists they be exactly dist.GradBucket
        buffer = bucket.buffer()  # what the hook receives: raw (not yet averaged) gradients, in torch's layout
        log.append([bucket.index(), [names[id(p)] for p in bucket.parameters()],
                    {"is_last": bucket.is_last(), "dtype": str(buffer.dtype).removeprefix("torch."),
                     "elements": buffer.numel(), "values": digest({"buffer": buffer}), "state": state is registered,
                     "slots": slot_contents(buffer, bucket.parameters())}])
        averaged = bucket.buffer().div(dist.get_world_size(group))  # a new tensor: the DDP must use the hook's result
        return dist.all_reduce(averaged, group=group, async_op=True).get_future().then(lambda fut: fut.value()[0])

    ddp.register_comm_hook(registered, record)


def slot_contents(buffer: torch.Tensor, params: list[torch.Tensor]) -> list[str]:
    """What each parameter's slot of a bucket's flat buffer holds (the parameters in buffer order), compared with
    its .grad, the raw gradient, at launch: "grad" laid out as the parameter lies in memory (as torch's slot
    is), "grad, row-major" (the same for a contiguous parameter), "no .grad" or "other"."""
    kinds, offset = [], 0
    for p in params:
        n, g = p.numel(), p.grad
        start = buffer.storage_offset() + offset
        reach = sum((size - 1) * stride for size, stride in zip(p.shape, p.stride(), strict=True)) if n else 0
        if g is None:
            kinds.append("no .grad")
        elif g.dtype != buffer.dtype or offset + n > buffer.numel() or not buffer.is_contiguous():
            kinds.append("other")
        elif n == 0 or (0 <= reach < n and torch.equal(buffer.as_strided(p.shape, p.stride(), start), g)):
            kinds.append("grad")
        elif torch.equal(buffer[offset:offset + n].view(p.shape), g):
            kinds.append("grad, row-major")
        else:
            kinds.append("other")
        offset += n
    return kinds


# -- the training scenario -----------------------------------------------------------------------------------

def train(catch: bool = False, backend: str = "in order", **kwargs: Any) -> dict:
    """``_train(**kwargs)``; with ``catch``, for checks that expect an error, an exception is the result:
    {"error": type, "message": text, "step": where, "phase": "construct" | "forward" | "backward" | "step",
    "steps": the steps recorded before it}. ``backend``: the default group is ``late_backend``'s, whose works
    complete only when waited on: "in order" (as gloo's, but the same on every run) or "late" (out of order);
    or "gloo", the workers' own."""
    late = backend != "gloo"
    with late_backend.as_default_group(in_order=backend != "late") if late else contextlib.nullcontext():
        return _train_catching(catch, **kwargs)


# Where an error of phase "construct" was raised, by impl (Part 3's checks build no DDP: the driver builds the Reducer).
CONSTRUCTION = {"reducer": "the construction of your Reducer by the provided driver (ReducerDriver)"}


def _train_catching(catch: bool, **kwargs: Any) -> dict:
    progress: dict[str, Any] = {"step": 0, "phase": "construct", "steps": []}
    try:
        return _train(progress=progress, **kwargs)
    except NotImplementedError:
        raise  # a stub is not the error a check expects
    except BaseException as error:  # any class a student's code raises is its error (a BaseException's too)
        if not catch:  # the message says where training was: a bare error from inside torch says nothing of it
            during = CONSTRUCTION.get(kwargs.get("impl"), "the DDP's construction") \
                if progress["phase"] == "construct" else f"step {progress['step']}'s {progress['phase']}"
            with contextlib.suppress(AttributeError, TypeError):
                error.raised_during = during  # (pool._error_report adds it to the message)
            raise
        return {"error": type(error).__name__, "message": steady(str(error))[:2000], "step": progress["step"],
                "phase": progress["phase"], "steps": progress["steps"]}
    finally:
        WATCHED.clear()  # (_train watches its run's process group until it ends)


def _train(impl: str, model: str, steps: int = 3, seed_per_rank: bool = False, ddp_kwargs: dict | None = None,
           hook: str | None = None, accumulate: int = 1, no_sync: str = "forward", use_b: str = "all",
           lr: float = 0.05, tensors: bool = False, hold_back: bool = False, hold_timeout_s: float = 10.0,
           bucket_indices: list | None = None, progress: dict | None = None, subgroups: list | None = None,
           buffers_per_rank: bool = False, no_grad_forward: bool = False, seed: int = 0, set_to_none: bool = False,
           eval_mode: bool = False, dropped_forward: bool = False) -> dict:
    """Train ``steps`` SGD steps and record what the DDP did.

    accumulate: micro-batches per step; all but the last run under ``no_sync`` as chosen by ``no_sync``:
      "forward" wraps forward and backward (the right way), "backward" wraps only backward (still syncs),
      "never" does not use no_sync at all, "nested": as "forward", but an inner no_sync() is entered and left
      first (the forward then runs in the outer one), and before the last micro-batch a no_sync() block is left
      by an exception (the last forward is outside again).
    use_b: for the "branchy" and "edges" models, which ranks use branch b: "all", "none" or "rank0"; or
      "no_sync": every rank uses it in the micro-batches under no_sync() only, not in the synchronised one.
    tensors: also return the final parameters (for comparisons within a tolerance, world size 3).
    hold_back: in the second step, rank 1 holds back its first all-reduce until rank 0's backward has
      computed every gradient (see ``ReadyProbe``), for at most ``hold_timeout_s`` (the runner derives it
      from torch's run): ``backward_blocked`` says whether rank 0 got there.
    bucket_indices: the buckets the driver hands your Reducer (impl "reducer"); torch's run records them
      as ``driver_buckets``, and the runner passes them on.
    subgroups: the world's ranks split into process groups (e.g. [[0], [1, 2]]); each rank's DDP runs on its
      own group, whose collectives are recorded with the default group's. ``world_collectives`` counts what a
      step launched on the default (world) group alone.
    buffers_per_rank: every rank's buffers differ before the DDP is built (rank r adds r to them).
    no_grad_forward: each micro-batch starts with a forward under torch.no_grad() (an evaluation).
    seed: the model's weights and the data are drawn from it (the hidden inputs use seeds no one knows in advance).
    set_to_none: zero the gradients as optimizer.zero_grad() does by default, setting every .grad to None before
      each step (otherwise .grad is set to None before step 1 only, then zeroed in place: the same tensors).
    eval_mode: even-numbered steps train after ddp.eval() (BatchNorm then uses its running statistics), the
      others after ddp.train(): DDP synchronises in either mode.
    dropped_forward: each step starts with a synchronised forward whose output gets no backward (say, a loss
      only logged), before its micro-batches.
    """
    from minddp import models
    rank = dist.get_rank()
    group = own_group(subgroups)
    WATCHED[:] = [group] if group is not None else []  # (until _train_catching's end)
    module = _build_model(model, rank, seed + (1000 + rank if seed_per_rank else 0), buffers_per_rank)
    names = {id(p): n for n, p in module.named_parameters()}
    progress = {} if progress is None else progress
    left = GradsLeft(module)  # before the DDP: its hooks run before any of the DDP's
    ddp, record = _construct(impl, module, ddp_kwargs or {}, bucket_indices, group, hook,
                             progress.setdefault("steps", []))
    bucket_log: list = []
    if hook:
        install_hook(impl, ddp, hook, names, bucket_log, group)
    optimizer = torch.optim.SGD(module.parameters(), lr=lr)
    forward_kwargs = {}
    if model in ("branchy", "edges"):
        forward_kwargs["use_b"] = use_b in ("all", "no_sync") or (use_b == "rank0" and rank == 0)
    probe = ReadyProbe(module, hold_back, hold_timeout_s)
    batch = lambda index: models.batch(model, rank, index, seed=seed)  # this rank's inputs of micro-batch ``index``
    kept: dict[str, torch.Tensor] = {}  # with set_to_none: the .grad tensors of the step before, as a user keeps them
    for step in range(steps):
        progress["step"] = step + 1
        optimizer.zero_grad(set_to_none=set_to_none or step == 0)
        if eval_mode:
            ddp.train(step % 2 == 0)  # steps 2, 4, ... in eval mode
        grads_before = {n: (p.grad, p.grad.data_ptr()) for n, p in module.named_parameters() if p.grad is not None}
        entry: dict[str, Any] = {"forward": [], "backward": [], "buffers": [], "buffers_moved": [], "eval_forward": [],
                                 "micro_local_sums": []}
        step_mark = collective_mark()
        left.clear()
        if dropped_forward:
            progress["phase"] = "forward"
            mark = marks()
            ddp(batch(20_000 + step), **forward_kwargs)
            entry["dropped_forward"] = collectives_since(mark)
        for micro in range(accumulate):
            last = micro == accumulate - 1
            if use_b == "no_sync":
                forward_kwargs["use_b"] = not last
            _micro_batch(ddp, module, batch, step * accumulate + micro, forward_kwargs, entry, progress, probe,
                         last=last, accumulate=accumulate, no_sync=no_sync, no_grad_forward=no_grad_forward,
                         hold=hold_back and step == 1 and last)
        entry["world_collectives"] = collective_mark() - step_mark
        _record_gradients(entry, module, probe, grads_before, left.left)
        if set_to_none:
            entry["kept_grads_changed"] = changed_since(kept, record["steps"][-1]) if step else []
            kept = {n: p.grad for n, p in module.named_parameters() if p.grad is not None}
        progress["phase"] = "step"
        optimizer.step()
        entry["params"] = digest(dict(module.named_parameters()))
        entry["buckets"], bucket_log[:] = list(bucket_log), []
        record["steps"].append(entry)
    record["param_sums"] = {n: p.detach().double().sum().item() for n, p in module.named_parameters()}
    record["grad_is_none"] = {n: p.grad is None for n, p in module.named_parameters()}
    if tensors:
        record["params"] = {n: p.detach().clone() for n, p in module.named_parameters()}
    probe.remove()
    left.remove()
    return record


def changed_since(kept: dict[str, torch.Tensor], before: dict) -> list[str]:
    """The names of the kept .grad tensors (the step before's, ``before`` its record) whose values changed since."""
    if not kept or digest(kept) == before["grads"]:
        return []
    return [n for n, t in kept.items() if t.double().sum().item() != before["grad_sums"].get(n)] or sorted(kept)


class GradsLeft:
    """The tensor autograd leaves in each ``.grad``: a hook registered before the DDP's, so it runs before any of
    them, notes it (a DDP writes the average into that tensor, as torch's does)."""

    def __init__(self, module: torch.nn.Module):
        self.left: dict[str, torch.Tensor] = {}
        self.handles = [p.register_post_accumulate_grad_hook(functools.partial(self._note, n))
                        for n, p in module.named_parameters() if p.requires_grad]

    def _note(self, name: str, param: torch.Tensor) -> None:
        self.left[name] = param.grad

    def clear(self) -> None:
        self.left = {}

    def remove(self) -> None:
        for handle in self.handles:
            handle.remove()


def _build_model(model: str, rank: int, seed: int, buffers_per_rank: bool) -> torch.nn.Module:
    """``model`` built from ``seed``. ``buffers_per_rank``: rank r adds r to its floating-point buffers (and
    sets the others to r). In "twobranch", even ranks run branch b first."""
    from minddp import models
    module = models.build(model, seed=seed)
    if buffers_per_rank:
        with torch.no_grad():
            for buffer in module.buffers():
                if buffer.is_floating_point():
                    buffer.add_(rank)
                else:
                    buffer.fill_(rank)
    if model == "twobranch":
        module.branch_first = "b" if rank % 2 == 0 else "a"  # rank 0 differs from reverse order
    return module


def _construct(impl: str, module: torch.nn.Module, ddp_kwargs: dict, bucket_indices: list | None, group: Any,
               hook: str | None, steps: list) -> tuple[torch.nn.Module, dict]:
    """Phase "construct": ``module`` wrapped by ``impl``, and the record of the run, begun (its steps go to
    ``steps``): what the construction launched, the parameters and buffers it left; in torch's run, the
    buckets the driver hands your Reducer and the all-reduces they plan."""
    mark, world_mark, before = marks(), collective_mark(), storage(module)
    ddp = wrap(impl, module, ddp_kwargs, bucket_indices, group)
    record: dict[str, Any] = {"construct": collectives_since(mark), "steps": steps,
                              "construct_world_collectives": collective_mark() - world_mark,
                              "params_at_start": digest(dict(module.named_parameters())),
                              "buffers_at_start": digest(dict(module.named_buffers())),
                              "moved_by_construction": moved(before, storage(module)),
                              "trainable": [n for n, p in module.named_parameters() if p.requires_grad],
                              "numels": {n: p.numel() for n, p in module.named_parameters()},
                              "dtypes": {n: str(p.dtype).removeprefix("torch.") for n, p in module.named_parameters()},
                              "shared": shared_parameters(module)}
    if impl == "torch":
        record["driver_buckets"] = torch_buckets(module, ddp_kwargs)
        record["planned_allreduces"] = planned_allreduces(module, record["driver_buckets"], hook)
    return ddp, record


def shared_parameters(module: torch.nn.Module) -> dict[str, list[str]]:
    """{name: its other names} of each parameter that several modules hold (named_parameters lists it once)."""
    names: dict[int, list[str]] = {}
    for name, p in module.named_parameters(remove_duplicate=False):
        names.setdefault(id(p), []).append(name)
    return {found[0]: found[1:] for found in names.values() if len(found) > 1}


def storage(module: torch.nn.Module, buffers_only: bool = False) -> dict[str, tuple]:
    """Where each parameter and buffer lives: (address, strides). A tensor overwritten in place keeps both."""
    tensors = ({} if buffers_only else dict(module.named_parameters())) | dict(module.named_buffers())
    return {n: (t.data_ptr(), t.stride()) for n, t in tensors.items()}


def moved(before: dict[str, tuple], after: dict[str, tuple]) -> list[str]:
    """The tensors whose storage or strides changed: replaced (``.data = ...``), not overwritten in place."""
    return [n for n, where in before.items() if after.get(n) != where]


def _micro_batch(ddp: torch.nn.Module, module: torch.nn.Module, batch: Callable[[int], Any], index: int,
                 forward_kwargs: dict, entry: dict, progress: dict, probe: ReadyProbe, *, last: bool,
                 accumulate: int, no_sync: str, no_grad_forward: bool, hold: bool) -> None:
    """One micro-batch (``index``): phase "forward", then "backward", under no_sync() or not as ``no_sync``
    says (see ``_train``; ``last``: the step's last micro-batch, the one that synchronises). What each phase
    launched, and the buffers after forward, go to ``entry``; ``hold``: the probe holds back this backward."""
    from minddp import models
    skip_sync = not last and no_sync != "never"
    ctx_f = ddp.no_sync() if skip_sync and no_sync in ("forward", "nested") else contextlib.nullcontext()
    ctx_b = ddp.no_sync() if skip_sync and no_sync == "backward" else contextlib.nullcontext()
    if no_grad_forward:
        mark = marks()
        with torch.no_grad():
            ddp(batch(10_000 + index), **forward_kwargs)
        entry["eval_forward"].append(collectives_since(mark))
    if last and no_sync == "nested" and accumulate > 1:
        with contextlib.suppress(_LeftByException):
            with ddp.no_sync():
                raise _LeftByException
    mark, buffers = marks(), storage(module, buffers_only=True)
    with ctx_f:
        if skip_sync and no_sync == "nested":
            with ddp.no_sync():
                pass
        progress["phase"] = "forward"
        output = ddp(batch(index), **forward_kwargs)
        entry["forward"].append(collectives_since(mark))
        entry["buffers"].append(digest(dict(module.named_buffers())))
        entry["buffers_moved"].append(moved(buffers, storage(module, buffers_only=True)))
        mark = marks()
        probe.arm(hold=hold)
        progress["phase"] = "backward"
        with ctx_b:
            models.loss_fn(output).backward()
    entry["backward"].append(collectives_since(mark))
    entry["micro_local_sums"].append({n: g.double().sum().item() for n, g in probe.last.items()})


def _record_gradients(entry: dict, module: torch.nn.Module, probe: ReadyProbe, grads_before: dict,
                      left: dict[str, torch.Tensor]) -> None:
    """After a step's backward(s), before the optimizer's step: the gradients (where they landed, their digest
    and sums) and what the probe saw, in ``entry``. ``grads_before``: each .grad (and its storage) before;
    ``left``: the tensor autograd left in each .grad (``GradsLeft``)."""
    # Where the averaged gradient landed: in the .grad tensor that was there before backward (same object,
    # same storage), as torch's DDP writes it, or in a new one; in the tensor autograd left there, or another.
    now = dict(module.named_parameters())
    entry["grads_in_place"] = {n: now[n].grad is before and now[n].grad.data_ptr() == ptr
                               for n, (before, ptr) in grads_before.items()}
    entry["grads_from_autograd"] = {n: now[n].grad is tensor for n, tensor in left.items()}
    entry["allreduces_before_last_grad"] = probe.count_at_last_grad
    entry["grad_events"], entry["launched_at_end"] = probe.events, probe.at_end
    entry["grads"] = digest({n: p.grad for n, p in module.named_parameters() if p.grad is not None})
    # Sums of |gradient|: what lets feedback tell "summed, not averaged" from "averaged twice" etc.
    entry["grad_abs_sums"] = {n: p.grad.double().abs().sum().item()
                              for n, p in module.named_parameters() if p.grad is not None}
    # ... and plain sums, which add up over steps: what tells "accumulated across iterations".
    entry["grad_sums"] = {n: p.grad.double().sum().item() for n, p in module.named_parameters() if p.grad is not None}
    entry["local_abs_sums"] = probe.local_abs_sums()
    entry["backward_blocked"] = probe.blocked
    entry["hold_value"] = probe.hold_value


class _LeftByException(Exception):
    """What leaves a no_sync() block early in the "nested" scenario."""


class ReadyProbe:
    """Watches each gradient as autograd computes it (tensor hooks run before the gradient is accumulated,
    so before any hook on accumulation; a Reducer built on tensor hooks of its own registers them first, and
    this probe then sees what those return).

    * ``count_at_last_grad``: collectives already launched when the LAST gradient of a backward is
      computed; >= 1 proves communication started while backward was still running (overlap, by order).
    * ``events``: [parameter name, collectives already launched] as each gradient of a backward is computed, in
      that order, and ``at_end``: collectives launched when every hook of the backward has run, before the
      callbacks queued after the probe's first (a Reducer's finalize): when each bucket was launched, by order.
    * ``local``: this rank's own gradients of the step (summed over micro-batches), before any averaging;
      ``last``: those of its last backward alone (each micro-batch's sums go to ``micro_local_sums``).
    * ``hold_back`` (2 ranks): in the armed backward, rank 1 holds back its first gradient, and with it
      its first all-reduce, until rank 0 has computed ALL its gradients. Rank 0 gets there only if its
      all-reduces do not block backward; if they do, ``blocked`` is set when the wait times out (then rank
      1 goes on, so nothing hangs). No timing is involved: the outcome depends only on the order of events.
      The key rank 1 waits for is new in every run (a nonce rank 0 draws), and rank 0 writes a random value
      there that rank 1 reports back (``hold_value``): a key set by anything else does not pass.
    """

    def __init__(self, module: torch.nn.Module, hold_back: bool = False, hold_timeout_s: float = 10.0):
        self.mark, self.count_at_last_grad, self.seen = {}, -1, 0
        self.events: list[list] = []
        self.at_end = -1
        self.last: dict[str, torch.Tensor] = {}  # this rank's own gradients of the last backward
        self.hold_timeout_s = hold_timeout_s
        self.local: dict[str, torch.Tensor] = {}
        self.trainable = [(n, p) for n, p in module.named_parameters() if p.requires_grad]
        self.hold_key: str | None = None
        self.hold_value = ""  # what rank 0 wrote at its last gradient, and what rank 1 read there
        self.blocked = False
        if hold_back:
            self.store = dist.distributed_c10d._get_default_store()
            self.hold_seq = (self.store.add("minddp-probe/hold", 1) + 1) // 2  # both ranks add: same number
        self.handles = [p.register_hook(functools.partial(self._on_grad, n)) for n, p in self.trainable]

    def arm(self, hold: bool = False) -> None:
        self.mark, self.count_at_last_grad, self.seen = marks(), -1, 0
        self.events, self.at_end, self.last = [], -1, {}
        self.hold_key, self.hold_value = None, ""
        if hold:
            nonce_key = f"minddp-probe/nonce-{self.hold_seq}"
            if dist.get_rank() == 0:
                self.store.set(nonce_key, secrets.token_hex(8))
            self.hold_key = f"minddp-probe/last-grad-{self.store.get(nonce_key).decode()}"

    def _on_grad(self, name: str, grad: torch.Tensor) -> None:
        self.seen += 1
        if self.seen == 1:  # queued before any hook of a DDP's runs, so it runs before their callbacks
            torch.autograd.Variable._execution_engine.queue_callback(self._at_end)
        if self.hold_key and self.seen == 1 and dist.get_rank() == 1:
            try:
                self.store.wait([self.hold_key], datetime.timedelta(seconds=self.hold_timeout_s))
                self.hold_value = self.store.get(self.hold_key).decode()
            except Exception:  # rank 0 never computed its last gradient while we held back
                self.blocked = True
        self.count_at_last_grad = launched_since(self.mark)
        self.events.append([name, self.count_at_last_grad])
        self.local[name] = self.local[name] + grad.detach() if name in self.local else grad.detach().clone()
        self.last[name] = self.last[name] + grad.detach() if name in self.last else grad.detach()
        if self.hold_key and self.seen == len(self.trainable) and dist.get_rank() == 0:
            self.hold_value = secrets.token_hex(8)
            self.store.set(self.hold_key, self.hold_value)

    def _at_end(self) -> None:
        self.at_end = launched_since(self.mark)

    def local_abs_sums(self) -> dict[str, float]:
        sums = {n: g.double().abs().sum().item() for n, g in self.local.items()}
        self.local = {}
        return sums

    def remove(self) -> None:
        for handle in self.handles:
            handle.remove()


# -- unit scenarios: call one part's functions on many inputs, report each outcome --------------------------

def outcome(call: Callable[[], Any]) -> dict:
    """{"value": ...} or {"error": type, "message": ..., "value_error": bool}: one case never stops the next."""
    try:
        return {"value": call()}
    except NotImplementedError as error:
        return {"error": "NotImplementedError", "message": steady(str(error))}
    except BaseException as error:  # any class (a BaseException's too): one case never ends the run
        return {"error": type(error).__name__, "message": steady(str(error))[:500], "value_error": isinstance(error, ValueError),
                "where": steady(traceback.format_exc(limit=-3))[-1500:]}


def process_group_cases(envs: list[dict] = (), invalid: list[dict] = (), layouts: list[list[int]] = (),
                        torchrun: list[list] = ()) -> dict:
    """read_torchrun_env on each environment (``invalid``: {"env": ..., "variable": ...} cases), the rank
    layout of each (rank, local world size), and torchrun_env of each argument list."""
    from minddp import process_group as pg

    def env_fields(environ: dict) -> dict:
        env = pg.read_torchrun_env(environ)
        return {k: getattr(env, k) for k in ("rank", "world_size", "local_rank", "local_world_size",
                                             "master_addr", "master_port", "node_rank", "num_nodes")}

    def layout(rank: int, lws: int) -> list:
        node, local = pg.node_and_local_rank(rank, lws)
        return [[node, local], pg.global_rank(node, local, lws)]

    return {"envs": [outcome(lambda e=e: env_fields(e)) for e in envs],
            "invalid": [outcome(lambda e=c["env"]: env_fields(e)) for c in invalid],
            "layouts": [outcome(lambda r=r, w=w: layout(r, w)) for r, w in layouts],
            "torchrun": [outcome(lambda a=a: pg.torchrun_env(*a)) for a in torchrun]}


def own_group(subgroups: list | None) -> Any:
    """This rank's process group among ``subgroups`` (None if it is in none, or there are none). Every rank
    creates every group, in the same order, as dist.new_group requires."""
    rank, group = dist.get_rank(), None
    for ranks in subgroups or []:
        created = dist.new_group(ranks)
        group = created if rank in ranks else group
    return group


def broadcast_values(src: int, subgroups: list | None = None) -> dict:
    """Your ``broadcast_tensors(tensors, group, src)`` on tensors of three dtypes (one of them transposed), each
    rank's filled with its global rank + 1: the global ranks whose values this rank holds afterwards (one, the
    group's rank ``src``), and which tensors were not overwritten in place ("moved": their storage or strides
    changed). With ``subgroups``, a rank in none of them does not take part ("from": None)."""
    from minddp.ddp import broadcast_tensors
    rank, group = dist.get_rank(), own_group(subgroups)
    if subgroups and group is None:
        return {"from": None}
    tensors = [torch.full((3,), rank + 1.0), torch.full((2, 2), rank + 1.0, dtype=torch.float64),
               torch.full((4,), rank + 1, dtype=torch.int64), torch.full((5, 2), rank + 1.0).t()]
    names = ["a float32 vector", "a float64 matrix", "an int64 vector", "a transposed float32 matrix"]
    before = [(t.data_ptr(), t.stride()) for t in tensors]
    broadcast_tensors(tensors, group, src=src)
    return {"from": sorted({int(v) - 1 for t in tensors for v in t.flatten().tolist()}),
            "moved": [name for name, t, where in zip(names, tensors, before, strict=True)
                      if (t.data_ptr(), t.stride()) != where]}


def used_parameters() -> dict:
    """Your ``find_used_parameters`` on outputs of each shape of ``USED_CASES``, from a small model: the names of
    the parameters each found."""
    from minddp.ddp import find_used_parameters
    torch.manual_seed(0)
    model = torch.nn.ModuleDict({"a": torch.nn.Linear(4, 4), "b": torch.nn.Linear(4, 4), "c": torch.nn.Linear(4, 2)})
    model.prior = torch.nn.Parameter(torch.zeros(3))
    model.frozen = torch.nn.Parameter(torch.ones(4), requires_grad=False)
    names = {id(p): n for n, p in model.named_parameters()}
    x = torch.randn(2, 4)

    def found(case: str) -> list[str]:
        outputs = USED_CASES[case](model, x)
        return sorted(names[i] for i in find_used_parameters(outputs) if i in names)
    return {case: outcome(lambda c=case: found(c)) for case in USED_CASES}


USED_CASES: dict[str, Callable[[Any, torch.Tensor], Any]] = {
    "a dict holding an output and a parameter itself": lambda m, x: {"out": m.a(x), "prior": m.prior},
    "a parameter itself": lambda m, x: m.prior,
    "nested lists, tuples and dicts": lambda m, x: [m.a(x), (m.b(x), {"deep": [m.c(m.a(x))]})],
    "a tuple of a tensor that needs no gradient and an output": lambda m, x: (x * 2, m.b(x)),
    "a detached output": lambda m, x: m.a(x).detach(),
    "an output of a frozen parameter": lambda m, x: x * m.frozen,
}


def nccl_device(environ: dict[str, str]) -> dict:
    """Your ``init_process_group()`` (no arguments) under the torchrun environment ``environ``, as on a node
    with GPUs: ``torch.cuda.is_available``, ``torch.cuda.set_device`` and ``torch.distributed``'s
    ``init_process_group`` and ``is_initialized`` are stand-ins for the call (nothing is initialised), which
    record the backend asked for and the devices made current (their indices)."""
    from minddp import process_group as pg
    seen: dict[str, Any] = {"devices": [], "backend": None, "device_id": None}

    def index(device: Any) -> int | None:
        return device if isinstance(device, int) or device is None else torch.device(device).index

    def init(backend: str | None = None, *_args: Any, **kwargs: Any) -> None:
        seen["backend"], seen["device_id"] = backend, index(kwargs.get("device_id"))

    stand_ins = [(torch.cuda, "is_available", lambda: True), (torch.cuda, "device_count", lambda: 8),
                 (torch.cuda, "set_device", lambda device: seen["devices"].append(index(device))),
                 (dist, "init_process_group", init), (dist.distributed_c10d, "init_process_group", init),
                 (dist, "is_initialized", lambda: False)]
    saved, environment = [(obj, name, getattr(obj, name)) for obj, name, _ in stand_ins], dict(os.environ)
    try:
        for obj, name, stand_in in stand_ins:
            setattr(obj, name, stand_in)
        os.environ.update(environ)
        result = outcome(pg.init_process_group)
    finally:
        for obj, name, original in saved:
            setattr(obj, name, original)
        os.environ.clear()
        os.environ.update(environment)
    return {**seen, "error": result.get("error"), "message": result.get("message")}


def reverse_orders(counts: list[int]) -> list[dict]:
    """bucketing.reverse_order(n) for each n (a value that is not a list is shown as its repr)."""
    from minddp import bucketing

    def call(n: int):
        value = bucketing.reverse_order(n)
        return value if isinstance(value, list) else repr(value)[:200]

    return [outcome(lambda n=n: call(n)) for n in counts]


def case_tensors(case: dict) -> list[torch.Tensor]:
    """A Part 2 case's tensors: ``sizes`` elements of ``dtypes``, on the "meta" device (no memory) unless
    ``devices`` says otherwise."""
    devices = case.get("devices") or ["meta"] * len(case["sizes"])
    return [torch.empty(n, dtype=getattr(torch, d), device=v)
            for n, d, v in zip(case["sizes"], case["dtypes"], devices, strict=True)]


def bucket_cases(cases: list[dict], reference: bool = False) -> list[dict]:
    """Each case: sizes (elements), dtypes, limits (bytes), optional order and devices ("meta" unless given: no
    memory; "cpu" beside it makes a second device). ``reference``: torch's answer."""
    from minddp import bucketing

    outcomes = []
    for case in cases:
        tensors = case_tensors(case)
        order = case.get("order") or list(range(len(tensors) - 1, -1, -1))
        if reference:
            outcomes.append(outcome(lambda t=tensors, o=order, c=case: dist._compute_bucket_assignment_by_size(
                [t[i] for i in o], c["limits"], [], o)[0]))
        elif case.get("order"):
            outcomes.append(outcome(lambda t=tensors, o=order, c=case:
                                    bucketing.compute_bucket_assignment(t, c["limits"], o)))
        else:
            outcomes.append(outcome(lambda t=tensors, c=case: bucketing.compute_bucket_assignment(t, c["limits"])))
    return outcomes


def overlap_cases(cases: list[dict]) -> list[dict]:
    """Each case: sizes (elements), dtypes, buckets and the ready order; ``bucketing.overlap_bytes`` on meta
    tensors of those sizes and dtypes."""
    from minddp import bucketing

    def call(case: dict):
        value = bucketing.overlap_bytes(case_tensors(case), [list(b) for b in case["buckets"]], list(case["ready_order"]))
        return list(value) if isinstance(value, (list, tuple)) else repr(value)[:200]

    return [outcome(lambda c=c: call(c)) for c in cases]


def timeline_cases(cases: list[dict]) -> list[dict]:
    """Each case names a function of ``minddp.timeline`` and its arguments; results become plain numbers."""
    from minddp import timeline

    def call(case: dict):
        kwargs = dict(case.get("kwargs", {}))
        if "dtype" in kwargs:
            kwargs["dtype"] = getattr(torch, kwargs["dtype"])
        if isinstance(kwargs.get("model"), dict):  # an experiment's model (checks/part5.py: made_up_model)
            m = kwargs["model"]
            kwargs["model"] = timeline.ModelSpec(m["name"], [(name, tuple(shape)) for name, shape in m["shapes"]],
                                                 m["backward_time"], m.get("compute_costs"))
        value = getattr(timeline, case["fn"])(*case["args"], **kwargs)
        if hasattr(value, "step_time"):  # a StepTimeline
            return {"step_time": value.step_time, "comm_start": list(value.comm_start),
                    "comm_end": list(value.comm_end), "bucket_ready": list(value.bucket_ready),
                    "backward_end": value.backward_end, "buckets": [list(b) for b in value.buckets]}
        return value

    return [outcome(lambda c=c: call(c)) for c in cases]


def usage_counts(steps: int = 3) -> dict:
    """Bonus A: the "branchy" model in your DDP with find_unused_parameters=True, where at step s the ranks
    r <= s use branch b; records what your ``Reducer.all_reduce_usage`` returned in each backward."""
    from minddp import models
    from minddp.ddp import DistributedDataParallel
    rank = dist.get_rank()
    module = models.build("branchy")
    ddp = DistributedDataParallel(module, bucket_cap_mb=0, find_unused_parameters=True)
    returned: list = []
    kept: list = []  # whether each call left self.local_used as it was
    all_reduce_usage = ddp.reducer.all_reduce_usage

    def recording():
        before = ddp.reducer.local_used.clone()
        counts = all_reduce_usage()
        kept.append(bool(torch.equal(before, ddp.reducer.local_used)))
        returned.append([int(c) for c in (counts.tolist() if isinstance(counts, torch.Tensor) else counts)])
        return counts

    ddp.reducer.all_reduce_usage = recording
    for step in range(steps):
        models.loss_fn(ddp(models.batch("branchy", rank, step), use_b=rank <= step)).backward()
    names = {id(p): n for n, p in module.named_parameters()}
    return {"names": [names[id(p)] for p in ddp.reducer.params], "counts": returned, "local_used_kept": kept}


def answers(names: list[str], from_code: bool = False) -> dict:
    """What each function of ``answers.py`` returns (the written questions, Part 6); with ``from_code``, also what
    your own ``minddp`` gives for the questions it can compute (``checks.written.FROM_CODE``), under
    "<name> from your code"."""
    try:
        import answers as module
    except Exception as error:
        results = {name: {"error": type(error).__name__, "message": steady(str(error))[:300]} for name in names}
    else:
        results = {name: outcome(getattr(module, name)) if hasattr(module, name) else
                   {"error": "AttributeError", "message": f"answers.py has no function {name}"} for name in names}
    if from_code:  # after your answers: nothing your other files do at import can change those
        from checks.written import FROM_CODE
        with time_limit(FROM_CODE_S, "computing the answers with your own code"):
            results.update({f"{name} from your code": outcome(compute) for name, compute in FROM_CODE.items()})
    return results


FROM_CODE_S = 20.0  # what `answers(from_code=True)` may spend on your own code: a few tenths of a second normally


@contextlib.contextmanager
def time_limit(seconds: float, doing: str):
    """Raise TimeoutError in this (main) thread after ``seconds``: what is computed only to advise, on a file
    that may loop forever at import, ends as an error on its own, not as the whole run's timeout."""
    def expire(_signum, _frame):
        raise TimeoutError(f"stopped after {seconds:g} s of {doing}")
    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


# -- scenarios that exercise the pool itself (tests/test_provided.py) ---------------------------------------

def echo(value: Any) -> Any:
    return {"rank": dist.get_rank(), "value": value}


def deadlock() -> None:
    """Rank 0 waits in an all-reduce that rank 1 never joins."""
    if dist.get_rank() == 0:
        dist.all_reduce(torch.ones(1))


def fail_on_rank(rank: int) -> int:
    if dist.get_rank() == rank:
        raise ValueError(f"deliberate failure on rank {rank}")
    return dist.get_rank()


def exit_abruptly() -> None:
    import os
    os._exit(3)


def late_order(in_order: bool) -> dict:
    """What the late backend does (tests/test_provided.py): a work completes when waited on (in order: with
    every earlier one), or at the end of the backward that launched it; its values are gloo's, bit for bit."""
    rank, seen = dist.get_rank(), {}
    values = [torch.randn(1000, generator=torch.Generator().manual_seed(rank * 10 + i)) for i in range(3)]
    on_gloo = [v.clone() for v in values]
    for v in on_gloo:
        dist.all_reduce(v)
    with late_backend.as_default_group(in_order):
        a, b, c = (v.clone() for v in values)
        work_a, work_b = dist.all_reduce(a, async_op=True), dist.all_reduce(b, async_op=True)
        chained = dist.all_reduce(c, async_op=True).get_future().then(lambda fut: fut.value()[0] * 2)
        work_b.wait()
        seen["after waiting b"] = {"a": "reduced" if torch.equal(a, on_gloo[0]) else "as launched" if
                                   torch.equal(a, values[0]) else "other", "b": torch.equal(b, on_gloo[1]),
                                   "c": torch.equal(c, values[2]), "chained done": chained.done()}
        work_a.wait()
        seen["a"], seen["chained"] = torch.equal(a, on_gloo[0]), torch.equal(chained.wait(), on_gloo[2] * 2)
        weight, order = torch.nn.Parameter(torch.ones(3)), []

        def launch(param: torch.Tensor) -> None:  # three all-reduces launched in backward, never waited on
            for i in range(3):
                dist.all_reduce(param.grad.clone(), async_op=True).get_future().add_done_callback(
                    lambda _, i=i: order.append(i))
        weight.register_post_accumulate_grad_hook(launch)
        (weight * (rank + 1)).sum().backward()
        seen["completed at the end of backward, in this order"] = order
    return seen
