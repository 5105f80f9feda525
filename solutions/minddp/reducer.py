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


# BEGIN SOLUTION  design: what you keep per bucket (C1), if you want a record of your own.
def slots(buffer: torch.Tensor, params: Sequence[torch.Tensor], offsets: Sequence[int]) -> list[torch.Tensor]:
    """Each parameter's slot in ``buffer``, at its offset, with the parameter's own shape and strides (torch's
    layout: a transposed parameter lies in the buffer in its memory order), or row-major where its elements do
    not fill one block of memory."""
    return [buffer.as_strided(p.size(), p.stride(), offset) if dense(p) else
            buffer[offset:offset + p.numel()].view(p.size()) for p, offset in zip(params, offsets, strict=True)]


def dense(t: torch.Tensor) -> bool:
    """Whether ``t``'s elements fill one block of memory, without gaps or overlaps, in some order of its dims."""
    expected = 1
    for size, stride in sorted(((n, s) for n, s in zip(t.shape, t.stride(), strict=True) if n != 1),
                               key=lambda pair: pair[1]):
        if stride != expected:
            return t.numel() == 0
        expected *= size
    return True


@dataclass
class Bucket:
    """One flat buffer of gradients that is all-reduced at once."""

    index: int
    variable_indices: list[int]  # which parameters, in the order they sit in the buffer
    buffer: torch.Tensor
    views: list[torch.Tensor]  # views[k]: parameter variable_indices[k]'s slot, shaped and strided like it
    pending: int = 0  # gradients still missing in this iteration
    work: dist.Work | None = None  # the launched all-reduce (no comm hook)
    future: torch.futures.Future | None = None  # what the comm hook returned

    def wait(self) -> torch.Tensor:
        """Block until this bucket's reduction is done; return the reduced flat tensor."""
        if self.future is not None:
            return self.future.wait()
        self.work.wait()  # all-reduce works in place
        return self.buffer

    def laid_out(self, flat: torch.Tensor) -> list[torch.Tensor]:
        """The slots' views of ``flat``, a flat tensor laid out like the buffer (what a comm hook returns)."""
        base = flat.storage_offset() - self.buffer.storage_offset()
        return [flat.as_strided(v.size(), v.stride(), base + v.storage_offset()) for v in self.views]
# END SOLUTION


# BEGIN SOLUTION  design: Bonus A (handout §4.4), what your usage record needs beyond the Reducer's state.
class UsedUnderNoSync:
    """Bonus A: the parameters that got a gradient in a backward under ``no_sync()`` since the last
    synchronised backward. As torch's DDP, such a parameter counts as used in the next synchronised
    iteration even if that forward left it out: its ``.grad`` holds gradients to average with the other
    ranks'. Its own hooks note them (the Reducer's ignore a backward under ``no_sync()``)."""

    def __init__(self, params: Sequence[torch.nn.Parameter]):
        self.noted: set[int] = set()
        self.reducing = False  # a synchronised backward is on: its forward said what it uses
        self.reset_queued = False  # ... and at its end the notes start over
        self.handles = [param.register_post_accumulate_grad_hook(weak_hook(self.note, i))
                        for i, param in enumerate(params)]

    def note(self, index: int, _param: torch.nn.Parameter) -> None:
        if not self.reducing:
            self.noted.add(index)
        elif not self.reset_queued:  # the first gradient of the synchronised backward: start over at its end
            self.reset_queued = True
            torch.autograd.Variable._execution_engine.queue_callback(self.start_over)

    def start_over(self) -> None:
        self.reducing = self.reset_queued = False
        self.noted.clear()

    def take(self) -> set[int]:
        """What was noted since the last synchronised backward; the one about to start is not noted."""
        noted, self.noted, self.reducing = self.noted, set(), True
        return noted
# END SOLUTION


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
        # BEGIN SOLUTION  design: the state your Reducer keeps between calls (C1-C8).
        self.buckets: list[Bucket] = []
        self.locators: dict[int, tuple[int, int]] = {}  # parameter index -> (bucket, position in it)
        self.next_bucket = 0  # index of the next bucket to launch
        self.expect_autograd_hooks = False  # set by a synchronised forward, cleared by finalize_backward
        self.require_finalize = False  # a backward started reducing and has not finished
        self.unused: list[int] = []  # parameters known unused in this iteration (Bonus A)
        # END SOLUTION
        self.build_buckets(bucket_indices)
        self.hook_handles = [param.register_post_accumulate_grad_hook(weak_hook(self.autograd_hook, i))
                             for i, param in enumerate(self.params)]

    def build_buckets(self, bucket_indices: Sequence[Sequence[int]]) -> None:
        """(C1) One flat buffer per bucket, in its parameters' dtype and on their device; called again by
        Bonus B's rebuild, it replaces the buckets."""
        # BEGIN SOLUTION
        self.buckets, self.locators = [], {}
        for bucket_index, indices in enumerate(bucket_indices):
            params = [self.params[i] for i in indices]
            buffer = torch.zeros(sum(p.numel() for p in params), dtype=params[0].dtype, device=params[0].device)
            offsets = [sum(p.numel() for p in params[:k]) for k in range(len(params))]
            for position, i in enumerate(indices):
                self.locators[i] = (bucket_index, position)
            self.buckets.append(Bucket(bucket_index, list(indices), buffer, slots(buffer, params, offsets)))
        # END SOLUTION

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
        # BEGIN SOLUTION
        if self.require_finalize:
            raise RuntimeError(UNFINISHED_REDUCTION)
        for bucket in self.buckets:
            bucket.pending = len(bucket.variable_indices)
            bucket.work = bucket.future = None
        self.next_bucket = 0
        self.expect_autograd_hooks = True
        self.unused = list(unused)  # they will get no gradient: ready at the backward's first hook, as in torch
        # END SOLUTION

    def autograd_hook(self, index: int, param: torch.nn.Parameter) -> None:
        """Autograd calls this once per parameter per backward, right after ``param.grad`` holds the
        parameter's gradient (C2, C5); the end of a reducing backward must run ``finalize_backward``."""
        # BEGIN SOLUTION
        if not self.expect_autograd_hooks:  # forward ran under no_sync() or no_grad: accumulate locally
            return
        if not self.require_finalize:  # first gradient of this backward
            self.require_finalize = True
            torch.autograd.Variable._execution_engine.queue_callback(self.finalize_backward)
            for unused in self.unused:  # (Bonus A) ready now: in backward, never in the forward that found them
                self.mark_variable_ready(unused)
        self.mark_variable_ready(index)
        # END SOLUTION

    # BEGIN SOLUTION  design: your steps from a ready gradient to a launched bucket (C2, C3, C4, C7).
    def mark_variable_ready(self, index: int) -> None:
        """Copy parameter ``index``'s gradient into its slot of the bucket; count down."""
        bucket_index, position = self.locators[index]
        bucket = self.buckets[bucket_index]
        grad, slot = self.params[index].grad, bucket.views[position]
        if grad is None:  # unused in this iteration: contributes zeros
            slot.zero_()
        else:
            slot.copy_(grad)  # raw: all_reduce_bucket scales the whole bucket at once
        bucket.pending -= 1
        if bucket.pending == 0:
            self.mark_bucket_ready(bucket_index)

    def mark_bucket_ready(self, bucket_index: int) -> None:
        """Launch every ready bucket in index order, starting at ``next_bucket``."""
        while self.next_bucket < len(self.buckets) and self.buckets[self.next_bucket].pending == 0:
            self.all_reduce_bucket(self.buckets[self.next_bucket])
            self.next_bucket += 1

    def all_reduce_bucket(self, bucket: Bucket) -> None:
        """Start the asynchronous reduction of one bucket (the comm hook's, if one is registered)."""
        if self.comm_hook is None:
            # x * (1/world_size), as torch does (x / 3 differs in the last bit): one multiply per bucket,
            # the same bits as multiplying each gradient while copying it in.
            bucket.buffer.mul_(1.0 / self.world_size)
            bucket.work = dist.all_reduce(bucket.buffer, group=self.process_group, async_op=True)
        else:
            grad_bucket = GradBucket(bucket.index, bucket.buffer, [self.params[i] for i in bucket.variable_indices],
                                     is_last=bucket.index == len(self.buckets) - 1)
            bucket.future = self.comm_hook(self.comm_hook_state, grad_bucket)
    # END SOLUTION

    def finalize_backward(self) -> None:
        """The end of a reducing backward: when it returns, every ``.grad`` holds the average (C3, C4, C6);
        when some bucket never filled, C8 says what must hold. Bonus A: with usage tracking, call
        ``all_reduce_usage()`` once and leave a parameter no rank used as it was."""
        # BEGIN SOLUTION
        self.expect_autograd_hooks = False
        if self.next_bucket < len(self.buckets):
            # Some bucket never filled (an unused parameter): leave require_finalize set, so the next
            # forward raises UNFINISHED_REDUCTION instead of training on unsynchronised gradients.
            for bucket in self.buckets[:self.next_bucket]:
                bucket.wait()
            return
        global_used = self.all_reduce_usage()
        for bucket in self.buckets:
            reduced = bucket.wait()
            views = bucket.views if reduced is bucket.buffer else bucket.laid_out(reduced)
            grads, averaged = [], []
            for index, view in zip(bucket.variable_indices, views, strict=True):
                param = self.params[index]
                if global_used is not None and not global_used[index]:
                    continue  # unused on every rank: keep .grad as it was (None stays None)
                if param.grad is None:  # unused here, used elsewhere
                    param.grad = view.clone()
                else:
                    grads.append(param.grad)
                    averaged.append(view)
            if grads:  # (a bucket may hold only parameters unused on this rank)
                torch._foreach_copy_(grads, averaged)  # one call per bucket, not one copy per parameter
        self.require_finalize = False
        # END SOLUTION

    # -- unused parameters (bonus) ----------------------------------------------------------------------

    def enable_usage_tracking(self) -> None:
        """Track which parameters each rank used; see ``all_reduce_usage``."""
        device = self.params[0].device if self.params else torch.device("cpu")
        self.local_used = torch.ones(len(self.params), dtype=torch.int32, device=device)
        # BEGIN SOLUTION  design: Bonus A (handout §4.4), what record_usage will need to know.
        self.used_under_no_sync = UsedUnderNoSync(self.params)
        # END SOLUTION

    def record_usage(self, unused: Sequence[int]) -> None:
        """This rank's usage bitmap for the coming backward: 1 = used here in this iteration, as torch counts
        use (handout A3), 0 = not."""
        if self.local_used is None:
            return
        # BEGIN SOLUTION  hint: Bonus A (handout §4.4)
        since = self.used_under_no_sync.take()
        self.local_used.fill_(1)
        self.local_used[[i for i in unused if i not in since]] = 0
        # END SOLUTION

    def all_reduce_usage(self) -> torch.Tensor | None:
        """Sum the usage bitmaps of all ranks: a parameter with count 0 was used by no rank.

        The bitmap is int32, so it cannot ride in a (floating-point) gradient bucket: it costs one extra
        all-reduce per backward, one reason ``find_unused_parameters`` is off by default.
        """
        if self.local_used is None:
            return None
        # BEGIN SOLUTION  hint: Bonus A (handout §4.4)
        global_used = self.local_used.clone()
        dist.all_reduce(global_used, group=self.process_group)
        return global_used.tolist()
        # END SOLUTION
