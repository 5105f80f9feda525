# GENERATED from solutions/minddp/ddp.py by tools/assign.py (staff: edit that file, then `make assignment`).
# Part 4, The DDP wrapper (handout §4): this is your copy; edit the stubs (each `raise NotImplementedError`).
"""Part 4 — the DistributedDataParallel wrapper (handout §4).

``DistributedDataParallel(model)`` is all a training script adds (non-intrusive): the wrapper

* broadcasts rank 0's parameters and buffers at construction, so every replica starts identical (handout §4.1);
* buckets the trainable parameters and builds a ``Reducer`` whose hooks average gradients during
  ``backward()`` (handout §3.1);
* broadcasts rank 0's buffers (e.g. BatchNorm running statistics) at the START of each forward (handout §4.2);
* offers ``no_sync()`` for gradient accumulation (handout §4.2);
* optionally finds parameters the forward did not use (``find_unused_parameters``, handout §4.4, bonus) and
  rebuilds buckets in the gradient-ready order observed in the first iteration (bonus).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from typing import Any

import torch
import torch.distributed as dist
from torch import nn
from torch._utils import _flatten_dense_tensors, _unflatten_dense_tensors

from .bucketing import bucket_size_limits, compute_bucket_assignment
from .reducer import CommHook, Reducer


def broadcast_tensors(tensors: Sequence[torch.Tensor], process_group: dist.ProcessGroup | None = None,
                      src: int = 0) -> None:
    """Overwrite ``tensors`` on every rank with rank ``src``'s values, with the broadcasts torch sends (handout §4.1)."""
    # YOUR CODE HERE: replace this raise.
    raise NotImplementedError("Part 4: broadcast_tensors — see handout §4")


def find_used_parameters(outputs: Any) -> set[int]:
    """ids of the parameters that ``outputs`` depend on, found by walking the autograd graph back."""
    # YOUR CODE HERE: replace this raise.
    # Hint: Bonus A (handout §4.4)
    raise NotImplementedError("Part 4: find_used_parameters — see handout §4.4 (optional: bonus)")


def _tensors_in(obj: Any) -> Iterator[torch.Tensor]:
    if isinstance(obj, torch.Tensor):
        yield obj
    elif isinstance(obj, dict):
        for value in obj.values():
            yield from _tensors_in(value)
    elif isinstance(obj, (list, tuple)):
        for value in obj:
            yield from _tensors_in(value)


class DistributedDataParallel(nn.Module):
    """Data parallelism for ``module``; arguments mean what they mean for torch's DDP.

    bucket_cap_mb / bucket_cap_mb_list: bucket byte limits, see ``bucketing.bucket_size_limits``.
    broadcast_buffers: broadcast rank 0's buffers at the start of every forward.
    find_unused_parameters: (bonus) tolerate parameters that get no gradient in an iteration.
    rebuild_buckets: (bonus) after the first iteration, rebucket in the observed gradient-ready order.
    """

    def __init__(self, module: nn.Module, process_group: dist.ProcessGroup | None = None,
                 bucket_cap_mb: float | None = None, bucket_cap_mb_list: Sequence[float] | None = None,
                 broadcast_buffers: bool = True, find_unused_parameters: bool = False,
                 rebuild_buckets: bool = False):
        super().__init__()
        self.module = module
        self.process_group = process_group
        self.broadcast_buffers = broadcast_buffers
        self.find_unused_parameters = find_unused_parameters
        self.bucket_size_limits = bucket_size_limits(bucket_cap_mb, bucket_cap_mb_list)
        self.require_backward_grad_sync = True  # the no_sync() switch
        # YOUR CODE HERE: replace this raise; the provided code below it then runs.
        raise NotImplementedError("Part 4: DistributedDataParallel.__init__ — see handout §4")
        self.rebuild_pending = rebuild_buckets
        self.ready_order: list[int] = []
        if find_unused_parameters:
            self.reducer.enable_usage_tracking()
        if rebuild_buckets:
            self._record_ready_order()

    def forward(self, *inputs: Any, **kwargs: Any) -> Any:
        # YOUR CODE HERE: replace this raise.
        raise NotImplementedError("Part 4: DistributedDataParallel.forward — see handout §4")

    @contextlib.contextmanager
    def no_sync(self) -> Iterator[None]:
        """Forwards run inside this context produce gradients that only accumulate locally."""
        # YOUR CODE HERE: replace this raise.
        raise NotImplementedError("Part 4: DistributedDataParallel.no_sync — see handout §4")

    def register_comm_hook(self, state: Any, hook: CommHook) -> None:
        """See ``Reducer.register_comm_hook``."""
        self.reducer.register_comm_hook(state, hook)

    # -- bonus: unused parameters and bucket rebuild ---------------------------------------------------

    def _unused_parameters(self, outputs: Any) -> list[int]:
        if not self.find_unused_parameters:
            return []
        used = find_used_parameters(outputs)
        return [i for i, param in enumerate(self.params) if id(param) not in used]

    def _record_ready_order(self) -> None:
        """Note the order gradients become ready in the first synchronised backward."""
        # YOUR CODE HERE: replace this raise.
        # Hint: Bonus B (handout §4.5)
        raise NotImplementedError("Part 4: DistributedDataParallel._record_ready_order — see handout §4.5 (optional: bonus)")

    # YOUR DESIGN (handout §4): Bonus B (handout §4.5), your helpers for noting and rebuilding, if you want some.

    def _rebuild_buckets(self) -> None:
        """Rebucket by the observed ready order (every rank must end with the same assignment)."""
        # YOUR CODE HERE: replace this raise.
        # Hint: Bonus B (handout §4.5)
        raise NotImplementedError("Part 4: DistributedDataParallel._rebuild_buckets — see handout §4.5 (optional: bonus)")
