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
    # BEGIN SOLUTION
    groups: dict[tuple, list[torch.Tensor]] = {}
    for tensor in tensors:
        groups.setdefault((tensor.dtype, tensor.device), []).append(tensor)
    for group in groups.values():
        flat = _flatten_dense_tensors([t.detach() for t in group])
        dist.broadcast(flat, src=dist.get_global_rank(process_group, src) if process_group else src,
                       group=process_group)
        with torch.no_grad():
            torch._foreach_copy_(group, _unflatten_dense_tensors(flat, group))  # one call, not one per tensor
    # END SOLUTION


def find_used_parameters(outputs: Any) -> set[int]:
    """ids of the parameters that ``outputs`` depend on, found by walking the autograd graph back."""
    # BEGIN SOLUTION  hint: Bonus A (handout §4.4)
    stack = [t.grad_fn for t in _tensors_in(outputs) if t.grad_fn is not None]
    used = {id(t) for t in _tensors_in(outputs) if t.grad_fn is None and t.requires_grad}
    seen: set = set()
    while stack:
        node = stack.pop()
        if node in seen:
            continue
        seen.add(node)
        variable = getattr(node, "variable", None)  # AccumulateGrad nodes hold their leaf tensor
        if variable is not None:
            used.add(id(variable))
        stack.extend(next_node for next_node, _ in node.next_functions if next_node is not None)
    return used
    # END SOLUTION


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
        # BEGIN SOLUTION
        self.sync_buffers_next_forward = True  # whether the next forward broadcasts buffers (handout §4.3, W4)
        self.module_buffers = list(module.buffers())  # listed once: walking the module every forward is slow
        # broadcast_buffers=False: every rank keeps its own buffers, from construction on (as torch's DDP does)
        broadcast_tensors(list(module.parameters()) + (self.module_buffers if broadcast_buffers else []),
                          process_group)
        self.params = [p for p in module.parameters() if p.requires_grad]  # frozen ones need no sync
        bucket_indices = compute_bucket_assignment(self.params, self.bucket_size_limits)
        self.reducer = Reducer(self.params, bucket_indices, process_group)
        # END SOLUTION
        self.rebuild_pending = rebuild_buckets
        self.ready_order: list[int] = []
        if find_unused_parameters:
            self.reducer.enable_usage_tracking()
        if rebuild_buckets:
            self._record_ready_order()

    def forward(self, *inputs: Any, **kwargs: Any) -> Any:
        # BEGIN SOLUTION
        if torch.is_grad_enabled() and self.rebuild_pending and self.ready_order:
            self._rebuild_buckets()  # as torch: under no_sync() too, before the buffers' broadcast
        if self.broadcast_buffers and self.sync_buffers_next_forward and self.module_buffers:
            broadcast_tensors(self.module_buffers, self.process_group)
        sync = torch.is_grad_enabled() and self.require_backward_grad_sync
        outputs = self.module(*inputs, **kwargs)
        if sync:
            self.reducer.prepare_for_backward(self._unused_parameters(outputs))
        self.sync_buffers_next_forward = sync
        return outputs
        # END SOLUTION

    @contextlib.contextmanager
    def no_sync(self) -> Iterator[None]:
        """Forwards run inside this context produce gradients that only accumulate locally."""
        # BEGIN SOLUTION
        previous = self.require_backward_grad_sync
        self.require_backward_grad_sync = False
        try:
            yield
        finally:
            self.require_backward_grad_sync = previous
        # END SOLUTION

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
        # BEGIN SOLUTION  hint: Bonus B (handout §4.5)
        from .reducer import weak_hook  # a hook holding the wrapper would keep it alive (reducer.weak_hook)
        self._order_hooks = [p.register_post_accumulate_grad_hook(weak_hook(self._note_ready, i))
                             for i, p in enumerate(self.params)]
        # END SOLUTION

    # BEGIN SOLUTION  design: Bonus B (handout §4.5), your helpers for noting and rebuilding, if you want some.
    def _note_ready(self, index: int, _param: torch.nn.Parameter) -> None:
        """A gradient is ready: note it if this is the first synchronised backward (the order to rebuild by)."""
        if self.sync_buffers_next_forward and index not in self.ready_order:  # (set by a synchronised forward)
            self.ready_order.append(index)
    # END SOLUTION

    def _rebuild_buckets(self) -> None:
        """Rebucket by the observed ready order (every rank must end with the same assignment)."""
        # BEGIN SOLUTION  hint: Bonus B (handout §4.5)
        for handle in self._order_hooks:
            handle.remove()
        order = self.ready_order + [i for i in range(len(self.params)) if i not in self.ready_order]
        order_tensor = torch.tensor(order, dtype=torch.int64, device=self.params[0].device)  # nccl: on GPU
        src = dist.get_global_rank(self.process_group, 0) if self.process_group else 0  # the group's rank 0
        dist.broadcast(order_tensor, src=src, group=self.process_group)
        self.reducer.build_buckets(compute_bucket_assignment(self.params, self.bucket_size_limits,
                                                             order_tensor.tolist()))
        self.rebuild_pending = False
        # END SOLUTION
