# GENERATED from solutions/tests/scenarios.py by tools/assign.py (staff: edit that file, then `make assignment`).
# Public tests: do not edit them by hand; the grader runs its own copy (and more tests).
"""Scenarios that run inside the gloo workers (see minddp.workers); the tests compare what they return.

Every scenario takes ``impl`` = "torch" (torch's own DistributedDataParallel, the reference) or "minddp"
and records the same observations for both, so a test is always "minddp's record == torch's record".
Collectives are observed with torch's flight recorder, which sees every collective whatever API issued it.
"""

from __future__ import annotations

import contextlib
import datetime
import functools
import hashlib
import pickle
from typing import Any

import torch
import torch.distributed as dist

from minddp import models


# -- observing collectives ---------------------------------------------------------------------------------

def collectives_since(mark: int) -> list[dict]:
    """Collectives this rank launched after sequence number ``mark``, oldest first."""
    entries = pickle.loads(torch._C._distributed_c10d._dump_fr_trace())["entries"]
    return [{"op": e["profiling_name"].split(":")[-1], "sizes": e["input_sizes"], "dtypes": e["input_dtypes"]}
            for e in entries if e["collective_seq_id"] > mark and not e.get("is_p2p")]


def collective_mark() -> int:
    entries = pickle.loads(torch._C._distributed_c10d._dump_fr_trace())["entries"]
    return max((e["collective_seq_id"] for e in entries), default=0)


def digest(tensors: dict[str, torch.Tensor]) -> str:
    h = hashlib.sha256()
    for name, t in tensors.items():
        h.update(name.encode())
        h.update(t.detach().contiguous().view(-1).view(torch.uint8).numpy().tobytes())
    return h.hexdigest()[:16]


# -- building the wrapped model ----------------------------------------------------------------------------

def wrap(impl: str, module: torch.nn.Module, ddp_kwargs: dict) -> torch.nn.Module:
    if impl == "torch":
        kwargs = {k: v for k, v in ddp_kwargs.items() if k != "rebuild_buckets"}
        return torch.nn.parallel.DistributedDataParallel(module, **kwargs)
    if impl == "minddp":
        from minddp.ddp import DistributedDataParallel
        return DistributedDataParallel(module, **ddp_kwargs)
    raise ValueError(f"unknown impl {impl!r}")


def install_hook(impl: str, ddp: torch.nn.Module, hook: str, names: dict[int, str], log: list) -> None:
    """Register a comm hook: "record" logs (bucket index, parameter names) then averages; "fp16" compresses."""
    if hook == "fp16":
        if impl == "torch":
            from torch.distributed.algorithms.ddp_comm_hooks.default_hooks import fp16_compress_hook
        else:
            from minddp.reducer import fp16_compress_hook
        ddp.register_comm_hook(None, fp16_compress_hook)
        return

    def record(state, bucket):  # no annotations: torch insists they be exactly dist.GradBucket
        log.append([bucket.index(), [names[id(p)] for p in bucket.parameters()]])
        averaged = bucket.buffer().div(dist.get_world_size())  # a new tensor: the DDP must use the hook's result
        return dist.all_reduce(averaged, async_op=True).get_future().then(lambda fut: fut.value()[0])

    ddp.register_comm_hook(None, record)


# -- the main scenario ------------------------------------------------------------------------------------

def train(impl: str, model: str, steps: int = 5, seed_per_rank: bool = False, ddp_kwargs: dict | None = None,
          hook: str | None = None, accumulate: int = 1, no_sync: str = "forward", use_b: str = "all",
          lr: float = 0.05, tensors: bool = True, hold_back: bool = False) -> dict:
    """Train ``steps`` SGD steps and record what DDP did.

    accumulate: micro-batches per step; all but the last run under ``no_sync`` as chosen by ``no_sync``:
      "forward" wraps forward and backward (the right way), "backward" wraps only backward (still syncs),
      "never" does not use no_sync at all.
    use_b: for the "branchy" model, which ranks use branch b: "all", "none" or "rank0".
    tensors: also return the final parameters, gradients and buffers (megabytes for the MLP); without
      them a record holds digests, per-parameter sums and which gradients are None.
    hold_back: in the second step, rank 1 holds back its first all-reduce until rank 0's backward has
      computed every gradient (see ``ReadyProbe``): ``backward_blocked`` says whether rank 0 got there.
    """
    rank = dist.get_rank()
    module = models.build(model, seed=1000 + rank if seed_per_rank else 0)
    if model == "twobranch":
        module.branch_first = "b" if rank % 2 == 0 else "a"  # rank 0 differs from reverse order
    names = {id(p): n for n, p in module.named_parameters()}
    mark = collective_mark()
    ddp = wrap(impl, module, ddp_kwargs or {})
    record: dict[str, Any] = {"construct": collectives_since(mark), "steps": [],
                              "params_at_start": digest(dict(module.named_parameters())),
                              "buffers_at_start": digest(dict(module.named_buffers()))}
    bucket_log: list = []
    if hook:
        install_hook(impl, ddp, hook, names, bucket_log)
    optimizer = torch.optim.SGD(module.parameters(), lr=lr)
    forward_kwargs = {}
    if model == "branchy":
        forward_kwargs["use_b"] = use_b == "all" or (use_b == "rank0" and rank == 0)
    probe = ReadyProbe(module, hold_back)
    for step in range(steps):
        optimizer.zero_grad(set_to_none=False if step else True)
        entry: dict[str, Any] = {"forward": [], "backward": [], "buffers": []}
        for micro in range(accumulate):
            last = micro == accumulate - 1
            skip_sync = not last and no_sync != "never"
            ctx_f = ddp.no_sync() if skip_sync and no_sync == "forward" else contextlib.nullcontext()
            ctx_b = ddp.no_sync() if skip_sync and no_sync == "backward" else contextlib.nullcontext()
            mark = collective_mark()
            with ctx_f:
                output = ddp(models.batch(model, rank, step * accumulate + micro), **forward_kwargs)
                entry["forward"].append(collectives_since(mark))
                entry["buffers"].append(digest(dict(module.named_buffers())))
                mark = collective_mark()
                probe.arm(mark, hold=hold_back and step == 1 and last)
                with ctx_b:
                    models.loss_fn(output).backward()
            entry["backward"].append(collectives_since(mark))
        entry["allreduces_before_last_grad"] = probe.count_at_last_grad
        entry["grads"] = digest({n: p.grad for n, p in module.named_parameters() if p.grad is not None})
        # Sums of |gradient|: what lets feedback tell "summed, not averaged" from "averaged twice" etc.
        entry["grad_abs_sums"] = {n: p.grad.double().abs().sum().item()
                                  for n, p in module.named_parameters() if p.grad is not None}
        entry["local_abs_sums"] = probe.local_abs_sums()
        entry["backward_blocked"] = probe.blocked
        optimizer.step()
        entry["params"] = digest(dict(module.named_parameters()))
        entry["buckets"], bucket_log[:] = list(bucket_log), []
        record["steps"].append(entry)
    record["param_sums"] = {n: p.detach().double().sum().item() for n, p in module.named_parameters()}
    record["grad_is_none"] = {n: p.grad is None for n, p in module.named_parameters()}
    if tensors:
        record["params"] = {n: p.detach().clone() for n, p in module.named_parameters()}
        record["grads"] = {n: None if p.grad is None else p.grad.clone() for n, p in module.named_parameters()}
        record["buffers"] = {n: b.clone() for n, b in module.named_buffers()}
    probe.remove()
    return record


class ReadyProbe:
    """Watches each gradient as autograd computes it (tensor hooks fire before any DDP hook sees it).

    * ``count_at_last_grad``: all-reduces already launched when the LAST gradient of a backward is
      computed; >= 1 proves communication started while backward was still running (overlap, by order).
    * ``local``: this rank's own gradients of the step (summed over micro-batches), before any averaging.
    * ``hold_back`` (2 ranks): in the armed backward, rank 1 holds back its first gradient, and with it
      its first all-reduce, until rank 0 has computed ALL its gradients. Rank 0 gets there only if its
      all-reduces do not block backward; if they do, ``blocked`` is set when the wait times out (then rank
      1 goes on, so nothing hangs). No timing is involved: the outcome depends only on the order of events.
    """

    HOLD_TIMEOUT_S = 4.0

    def __init__(self, module: torch.nn.Module, hold_back: bool = False):
        self.mark = 0
        self.count_at_last_grad = -1
        self.local: dict[str, torch.Tensor] = {}
        self.trainable = [(n, p) for n, p in module.named_parameters() if p.requires_grad]
        self.seen = 0
        self.hold_key: str | None = None
        self.blocked = False
        if hold_back:
            store = dist.distributed_c10d._get_default_store()
            self.store = store
            self.hold_seq = (store.add("minddp-probe/hold", 1) + 1) // 2  # both ranks add: same number
        self.handles = [p.register_hook(functools.partial(self._on_grad, n)) for n, p in self.trainable]

    def arm(self, mark: int, hold: bool = False) -> None:
        self.mark, self.count_at_last_grad, self.seen = mark, -1, 0
        self.hold_key = f"minddp-probe/last-grad-{self.hold_seq}" if hold else None

    def _on_grad(self, name: str, grad: torch.Tensor) -> None:
        self.seen += 1
        if self.hold_key and self.seen == 1 and dist.get_rank() == 1:
            try:
                self.store.wait([self.hold_key], datetime.timedelta(seconds=self.HOLD_TIMEOUT_S))
            except Exception:  # rank 0 never computed its last gradient while we held back
                self.blocked = True
        self.count_at_last_grad = sum(c["op"] == "all_reduce" for c in collectives_since(self.mark))
        self.local[name] = self.local[name] + grad.detach() if name in self.local else grad.detach().clone()
        if self.hold_key and self.seen == len(self.trainable) and dist.get_rank() == 0:
            self.store.set(self.hold_key, "1")

    def local_abs_sums(self) -> dict[str, float]:
        sums = {n: g.double().abs().sum().item() for n, g in self.local.items()}
        self.local = {}
        return sums

    def remove(self) -> None:
        for handle in self.handles:
            handle.remove()


# -- scenarios that exercise the worker pool itself --------------------------------------------------------

def echo(value: Any) -> Any:
    """Send ``value`` back with this rank's number (tests the JSON channel)."""
    return {"rank": dist.get_rank(), "value": value}


def deadlock() -> None:
    """Rank 0 waits in an all-reduce that rank 1 never joins."""
    if dist.get_rank() == 0:
        dist.all_reduce(torch.ones(1))


def fail_on_rank(rank: int) -> int:
    if dist.get_rank() == rank:
        raise ValueError(f"deliberate failure on rank {rank}")
    return dist.get_rank()


def kill_fork_server() -> int:
    """Rank 0 kills its parent, the pool's fork server (as hostile code could), then both ranks report."""
    import os
    import signal
    if dist.get_rank() == 0:
        os.kill(os.getppid(), signal.SIGKILL)
    return dist.get_rank()


def exit_abruptly() -> None:
    import os
    os._exit(3)
