# GENERATED from solutions/minddp/reducer.py by tools/assign.py (staff: edit that file, then `make assignment`).
# Part 3, The Reducer (handout §3): this is your copy; edit the stubs (each `raise NotImplementedError`).
"""Part 3 — the Reducer: bucketed, ordered, asynchronous all-reduce inside backward (handout §3).

The checks drive a small interface (handout §3): the constructor (given the trainable parameters and the
buckets of Part 2), ``build_buckets`` (again for Bonus B's rebuild), ``prepare_for_backward`` (every
synchronised forward calls it), the per-parameter ``autograd_hook``, and ``finalize_backward`` at the end
of a backward. What happens between the hook and the end of backward, and the state that makes it happen,
is your design: the handout's contract (C1-C8) says what must be observable, and why.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch
import torch.distributed as dist

UNFINISHED_REDUCTION = (
    "Expected to have finished reduction in the prior iteration before starting a new one. Some "
    "parameters received no gradient in the last backward, so their buckets never became ready. "
    "Construct DistributedDataParallel with find_unused_parameters=True if some parameters are unused.")


class GradBucket:
    """What a communication hook receives (the same methods as ``torch.distributed.GradBucket``)."""

    def __init__(self, index: int, buffer: torch.Tensor, parameters: list[torch.nn.Parameter], is_last: bool):
        self._index, self._buffer, self._parameters, self._is_last = index, buffer, parameters, is_last

    def index(self) -> int:
        return self._index

    def buffer(self) -> torch.Tensor:
        """The flat buffer holding this bucket's raw (not yet averaged) gradients."""
        return self._buffer

    def parameters(self) -> list[torch.nn.Parameter]:
        return self._parameters

    def is_last(self) -> bool:
        return self._is_last


CommHook = Callable[[Any, GradBucket], torch.futures.Future]


def allreduce_hook(process_group: dist.ProcessGroup | None, bucket: GradBucket) -> torch.futures.Future:
    """A comm hook that does what the Reducer does without one: average the bucket across ranks."""
    buffer = bucket.buffer().div_(dist.get_world_size(process_group))
    work = dist.all_reduce(buffer, group=process_group, async_op=True)
    return work.get_future().then(lambda fut: fut.value()[0])


def fp16_compress_hook(process_group: dist.ProcessGroup | None, bucket: GradBucket) -> torch.futures.Future:
    """A comm hook that halves the bytes on the wire: reduce in float16, hand back the original dtype."""
    buffer = bucket.buffer()
    compressed = buffer.to(torch.float16).div_(dist.get_world_size(process_group))
    work = dist.all_reduce(compressed, group=process_group, async_op=True)

    def decompress(fut: torch.futures.Future) -> torch.Tensor:
        return buffer.copy_(fut.value()[0])

    return work.get_future().then(decompress)


def weak_hook(method: Callable, index: int) -> Callable:
    """A parameter hook that calls ``method(index, param)`` through a weak reference to its object.

    A parameter's hooks live where Python's garbage collector cannot see them, so a hook holding the
    Reducer (which holds the parameters) would keep both alive forever, one leaked model per DDP wrapper.
    (A closure, not functools.partial over a WeakMethod: it runs once per gradient, so every call counts.)
    """
    owner, function = weakref.ref(method.__self__), method.__func__

    def hook(param: torch.nn.Parameter) -> None:
        live = owner()
        if live is not None:
            function(live, index, param)
    return hook


# YOUR DESIGN (handout §3): what you keep per bucket (C1), if you want a record of your own.


# YOUR DESIGN (handout §3): Bonus A (handout §4.4), what your usage record needs beyond the Reducer's state.


class Reducer:
    """Synchronises the gradients of ``params`` across the process group, bucket by bucket.

    ``bucket_indices`` (from ``bucketing.compute_bucket_assignment``) lists each bucket's parameter
    indices, in the order they sit in the bucket; bucket 0 is launched first.
    """

    def __init__(self, params: Sequence[torch.nn.Parameter], bucket_indices: Sequence[Sequence[int]],
                 process_group: dist.ProcessGroup | None = None):
        self.params = list(params)
        self.process_group = process_group
        self.world_size = dist.get_world_size(process_group)
        self.comm_hook: CommHook | None = None  # register_comm_hook
        self.comm_hook_state: Any = None
        self.local_used: torch.Tensor | None = None  # Bonus A's usage bitmap (enable_usage_tracking)
        # YOUR DESIGN (handout §3): the state your Reducer keeps between calls (C1-C8).
        self.build_buckets(bucket_indices)
        self.hook_handles = [param.register_post_accumulate_grad_hook(weak_hook(self.autograd_hook, i))
                             for i, param in enumerate(self.params)]

    def build_buckets(self, bucket_indices: Sequence[Sequence[int]]) -> None:
        """(C1) One flat buffer per bucket, in its parameters' dtype and on their device; called again by
        Bonus B's rebuild, it replaces the buckets."""
        # YOUR CODE HERE: replace this raise.
        raise NotImplementedError("Part 3: Reducer.build_buckets — see handout §3")

    def register_comm_hook(self, state: Any, hook: CommHook) -> None:
        """Replace "all-reduce the bucket and average" by ``hook(state, GradBucket) -> Future[Tensor]``.

        With a hook the bucket holds raw gradients; the tensor the future completes with is copied
        back into the gradients.
        """
        if self.comm_hook is not None:
            raise RuntimeError("register_comm_hook may be called only once")
        self.comm_hook, self.comm_hook_state = hook, state

    # -- one iteration -------------------------------------------------------------------------------

    def prepare_for_backward(self, unused: Sequence[int] = ()) -> None:
        """A synchronised forward ran: the next backward reduces (C2, C5), unless the previous one never
        finished its reduction (C8: raise ``RuntimeError(UNFINISHED_REDUCTION)``). Bonus A: the parameters
        in ``unused`` get no gradient in this backward; they count as ready as torch counts them (A1)."""
        self.record_usage(unused)
        # YOUR CODE HERE: replace this raise.
        raise NotImplementedError("Part 3: Reducer.prepare_for_backward — see handout §3")

    def autograd_hook(self, index: int, param: torch.nn.Parameter) -> None:
        """Autograd calls this once per parameter per backward, right after ``param.grad`` holds the
        parameter's gradient (C2, C5); the end of a reducing backward must run ``finalize_backward``."""
        # YOUR CODE HERE: replace this raise.
        raise NotImplementedError("Part 3: Reducer.autograd_hook — see handout §3")

    # YOUR DESIGN (handout §3): your steps from a ready gradient to a launched bucket (C2, C3, C4, C7).

    def finalize_backward(self) -> None:
        """The end of a reducing backward: when it returns, every ``.grad`` holds the average (C3, C4, C6);
        when some bucket never filled, C8 says what must hold. Bonus A: with usage tracking, call
        ``all_reduce_usage()`` once and leave a parameter no rank used as it was."""
        # YOUR CODE HERE: replace this raise.
        raise NotImplementedError("Part 3: Reducer.finalize_backward — see handout §3")

    # -- unused parameters (bonus) ----------------------------------------------------------------------

    def enable_usage_tracking(self) -> None:
        """Track which parameters each rank used; see ``all_reduce_usage``."""
        device = self.params[0].device if self.params else torch.device("cpu")
        self.local_used = torch.ones(len(self.params), dtype=torch.int32, device=device)
        # YOUR DESIGN (handout §3): Bonus A (handout §4.4), what record_usage will need to know.

    def record_usage(self, unused: Sequence[int]) -> None:
        """This rank's usage bitmap for the coming backward: 1 = used here in this iteration, as torch counts
        use (handout A3), 0 = not."""
        if self.local_used is None:
            return
        # YOUR CODE HERE: replace this raise.
        # Hint: Bonus A (handout §4.4)
        raise NotImplementedError("Part 3: Reducer.record_usage — see handout §4.4 (optional: bonus)")

    def all_reduce_usage(self) -> torch.Tensor | None:
        """Sum the usage bitmaps of all ranks: a parameter with count 0 was used by no rank.

        The bitmap is int32, so it cannot ride in a (floating-point) gradient bucket: it costs one extra
        all-reduce per backward, one reason ``find_unused_parameters`` is off by default.
        """
        if self.local_used is None:
            return None
        # YOUR CODE HERE: replace this raise.
        # Hint: Bonus A (handout §4.4)
        raise NotImplementedError("Part 3: Reducer.all_reduce_usage — see handout §4.4 (optional: bonus)")
