# GENERATED from solutions/minddp/timeline.py by tools/assign.py (staff: edit that file, then `make assignment`).
# Part 5, The timeline model (handout §5): this is your copy; edit the stubs (each `raise NotImplementedError`).
"""Part 5 — the α-β timeline model of overlap and scaling (handout §5).

DDP's speed on a real cluster cannot be measured on a laptop, so we model it. Handout §5.1 states the model in
words: a compute stream that produces gradients one at a time, a communication stream that all-reduces buckets
one at a time in bucket index order, and the cost of one ring all-reduce, which you derive from how the ring
algorithm moves data. You write the model (the first four functions below), then the experiments that carry
the lecture's conclusions: bucket size, the first bucket, registration order, scaling, skipping
synchronisation (handout §5.3). The written questions of Part 6 ask what your experiments found.

Times are in seconds and sizes in bytes, unless a name or docstring says otherwise.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch

from minddp.bucketing import DEFAULT_FIRST_BUCKET_BYTES, compute_bucket_assignment, reverse_order
from minddp.model_shapes import (
    ParamEntry,
    bert_large_param_macs,
    bert_large_param_shapes,
    meta_tensors,
    param_numels,
    resnet50_param_macs,
    resnet50_param_shapes,
)

# Calibration: every constant the lecture's numbers depend on lives here ---------------------------

MB = 10**6  # the lecture's "25 MB" bucket is DECIMAL: 25e6 bytes splits ResNet-50 / BERT-large into
#             4 / 48 buckets as the lecture says; 25 MiB would give 4 / 37 (see tests/test_timeline.py).
ALPHA_S = 10e-6  # the lecture's (handout §5.1): a fast interconnect, 10 µs per message ...
BETA_BYTES_PER_S = 10e9  # ... and 10 GB/s
LECTURE_WORLD_SIZE = 16
LECTURE_BUCKET_CAP_BYTES = 25 * MB
FP32 = torch.float32  # gradients are 4-byte floats

# Backward times (batch 32 per rank for ResNet-50). Neither is given by the lecture; each is fitted to
# ONE lecture number whose model value is "backward + all communication after it", so the fit does not
# depend on the compute model:
#   ResNet-50 : the lecture's no-overlap step, 53.3 ms, minus its 4 all-reduces at K=16;
#   BERT-large: the lecture's fully reversed registration order, 444.7 ms, minus its 49 all-reduces (there
#               every all-reduce waits for the end of backward).
# Every other number (overlap, first bucket, orders, scaling, skip-sync) is then a prediction: run
# ``python -m minddp.timeline`` to see yours beside the lecture's.
RESNET50_BACKWARD_S = 32.93e-3
BERT_LARGE_BACKWARD_S = 178.6e-3
# The lecture's scaling figures count whole iterations: forward costs half a backward (the usual 1:2 FLOP
# ratio), and nothing overlaps it.
FORWARD_PER_BACKWARD = 0.5

CAP_SWEEP_BYTES = (0, 1 * MB, 2 * MB, 5 * MB, 10 * MB, 25 * MB, 50 * MB, 100 * MB, None)  # None: one bucket
SCALING_WORLD_SIZES = tuple(2**k for k in range(9))  # 1, 2, 4, ..., 256
SKIP_SYNC_WORLD_SIZE = 256
SKIP_SYNC_EVERY = 8
ORDER_SEED = 0

CommTime = Callable[[int], float] | Sequence[float]


# The model: the cost of one all-reduce, the compute stream, the two streams together ----------------

def ring_allreduce_time(nbytes: float, world_size: int, alpha: float, beta: float) -> float:
    """Seconds for a ring all-reduce of ``nbytes`` on ``world_size`` ranks (handout §5.1).

    ``alpha``: the latency every message pays, in seconds; ``beta``: the bandwidth, in bytes per second.
    Derive the cost from how the ring moves the data (handout §5.1 and its figure); one rank sends nothing.
    """
    if world_size < 1:
        raise ValueError(f"world_size must be >= 1, got {world_size}")
    # YOUR CODE HERE: replace this raise.
    raise NotImplementedError("Part 5: ring_allreduce_time — see handout §5")


def backward_ready_times(shapes_or_sizes: Sequence[ParamEntry], backward_time: float,
                         order: Sequence[int] | None = None) -> list[float]:
    """When each tensor's gradient is ready, if backward takes ``backward_time`` in total (handout §5.1).

    Entry i is a shape, a ``(name, shape)`` row or a number (an int element count, or any relative cost,
    int or float); ``param_numels`` turns them into sizes. The compute stream produces the gradients one at
    a time, in ``order`` (default: reverse registration order, the order DDP assumes), each taking a share
    of ``backward_time`` proportional to its size. Returns a list indexed like ``shapes_or_sizes`` (not by
    order).
    """
    sizes = param_numels(shapes_or_sizes)
    if order is None:
        order = reverse_order(len(sizes))
    if sorted(order) != list(range(len(sizes))):
        raise ValueError("order must list every tensor index exactly once")
    # YOUR CODE HERE: replace this raise.
    raise NotImplementedError("Part 5: backward_ready_times — see handout §5")


@dataclass(frozen=True)
class StepTimeline:
    """What ``simulate_step`` found; lists are indexed by bucket. Any time unit, used consistently."""

    buckets: list[list[int]]
    bucket_ready: list[float]  # when the last gradient of the bucket is ready
    comm_start: list[float]  # when its all-reduce starts on the communication stream
    comm_end: list[float]
    backward_end: float  # when the compute stream produced its last gradient
    overlap: bool

    @property
    def step_time(self) -> float:
        """Backward + communication: the step ends when both streams are idle."""
        return max([self.backward_end, *self.comm_end])

    @property
    def num_buckets(self) -> int:
        return len(self.buckets)


def _durations(comm_time: CommTime, num_buckets: int) -> list[float]:
    """Bucket durations from a ``comm_time(bucket_index)`` callable or a list of durations."""
    if callable(comm_time):
        return [float(comm_time(b)) for b in range(num_buckets)]
    durations = [float(d) for d in comm_time]
    if len(durations) != num_buckets:
        raise ValueError(f"{len(durations)} communication times for {num_buckets} buckets")
    return durations


def simulate_step(ready_times: Sequence[float], buckets: Sequence[Sequence[int]], comm_time: CommTime,
                  overlap: bool = True) -> StepTimeline:
    """One backward on the two-stream model of handout §5.1, and its timeline.

    ``ready_times[i]``: when tensor i's gradient is ready (backward ends with the last one). ``buckets``:
    lists of tensor indices, every bucket non-empty. ``comm_time``: each bucket's all-reduce duration, as a
    list or as ``comm_time(bucket_index)``. The communication stream all-reduces one bucket at a time,
    strictly in bucket index order; with ``overlap`` a bucket may go as soon as all its gradients are ready,
    without it not before backward has ended. The unit of time is whatever the inputs use.
    """
    if any(len(bucket) == 0 for bucket in buckets):
        raise ValueError("every bucket must hold at least one tensor")
    durations = _durations(comm_time, len(buckets))
    # YOUR CODE HERE: replace this raise.
    raise NotImplementedError("Part 5: simulate_step — see handout §5")


_BUCKET_SYMBOLS = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"


def ascii_timeline(timeline: StepTimeline, width: int = 64, title: str | None = None) -> str:
    """Draw the two streams; assumes the timeline is in seconds (printed in ms).

    Column c stands for the instant in the middle of its 1/width share of the step. The comm row shows
    which bucket is being all-reduced then: 0-9, then a-z, A-Z (cycling after 62 buckets).
    """
    if title is None:
        title = "overlap (DDP)" if timeline.overlap else "no overlap"
    step = timeline.step_time
    backward, comm = [], []
    for column in range(width):
        t = (column + 0.5) * step / width
        backward.append("█" if t < timeline.backward_end else " ")
        symbol = " "
        for b, (start, end) in enumerate(zip(timeline.comm_start, timeline.comm_end, strict=True)):
            if start <= t < end:
                symbol = _BUCKET_SYMBOLS[b % len(_BUCKET_SYMBOLS)]
        comm.append(symbol)
    return (f"{title}: step {step * 1e3:.1f} ms\n"
            f"  backward |{''.join(backward)}|\n"
            f"  comm     |{''.join(comm)}|")


def ddp_step(shapes: Sequence[ParamEntry], backward_time: float, world_size: int, alpha: float,
             beta: float, bucket_size_limits: Sequence[int], overlap: bool = True,
             order: Sequence[int] | None = None, dtype: torch.dtype = FP32,
             compute_costs: Sequence[float] | None = None) -> StepTimeline:
    """The step the model predicts for a model trained with DDP (handout §5.2).

    ``shapes``: the parameters in registration order (see ``model_shapes``), gradients of ``dtype``. The
    buckets are the ones DDP makes for these gradients with ``bucket_size_limits`` (bytes); ``order`` is the
    order backward REALLY produces the gradients in (default: reverse registration order); a gradient's
    share of ``backward_time`` is its ``compute_costs`` entry (default: its element count); each bucket is
    one ring all-reduce of its bytes on ``world_size`` ranks.
    """
    tensors = meta_tensors(shapes, dtype)
    costs = shapes if compute_costs is None else compute_costs  # shapes count as their element counts
    if len(costs) != len(tensors):
        raise ValueError(f"{len(costs)} compute costs for {len(tensors)} tensors")
    # YOUR CODE HERE: replace this raise.
    raise NotImplementedError("Part 5: ddp_step — see handout §5")


# Whole models (provided) -----------------------------------------------------------------------------

def model_bytes(shapes: Sequence[ParamEntry], dtype: torch.dtype = FP32) -> int:
    """Bytes of all gradients of a model."""
    return sum(param_numels(shapes)) * dtype.itemsize


@dataclass(frozen=True)
class ModelSpec:
    """What the experiments need to know about a model."""

    name: str
    shapes: list[tuple[str, tuple[int, ...]]]  # (name, shape) in registration order
    backward_time: float  # seconds, on one rank
    compute_costs: list[float] | None = None  # relative backward cost per tensor; None: element counts

    def step(self, world_size: int, bucket_size_limits: Sequence[int], alpha: float = ALPHA_S,
             beta: float = BETA_BYTES_PER_S, overlap: bool = True,
             order: Sequence[int] | None = None) -> StepTimeline:
        """``ddp_step`` for this model."""
        return ddp_step(self.shapes, self.backward_time, world_size, alpha, beta, bucket_size_limits,
                        overlap=overlap, order=order, compute_costs=self.compute_costs)


def resnet50_model() -> ModelSpec:
    """ResNet-50, batch 32 per rank; a gradient costs as much backward time as its layer's forward MACs."""
    return ModelSpec("ResNet-50", resnet50_param_shapes(), RESNET50_BACKWARD_S, resnet50_param_macs())


def bert_large_model() -> ModelSpec:
    """BERT-large; a gradient costs as much backward time as its layer's forward MACs."""
    return ModelSpec("BERT-large", bert_large_param_shapes(), BERT_LARGE_BACKWARD_S, bert_large_param_macs())


def layer_name(param_name: str) -> str:
    """The module a parameter belongs to, for re-ordering whole layers.

    The prefix up to the first numeric component ("encoder.layer.7.attention..." -> "encoder.layer.7",
    "layer1.0.conv1.weight" -> "layer1.0"); without one, the first component ("pooler.dense.bias" ->
    "pooler").
    """
    parts = param_name.split(".")
    for i, part in enumerate(parts):
        if part.isdigit():
            return ".".join(parts[:i + 1])
    return parts[0]


def layer_permutation(table: Sequence[tuple[str, tuple[int, ...]]], mode: str,
                      seed: int = ORDER_SEED) -> list[int]:
    """A new registration order (indices into ``table``) that moves whole layers, keeping each layer's
    own parameters in order. ``mode``: "reverse" (the true order, DDP's assumption holds), "scrambled"
    (layers shuffled by ``random.Random(seed)``: deterministic) or "reversed" (layers registered last
    to first). Assumes a layer's parameters are contiguous in ``table``.
    """
    groups: list[list[int]] = []
    for index, (name, _) in enumerate(table):
        if groups and layer_name(table[groups[-1][0]][0]) == layer_name(name):
            groups[-1].append(index)
        else:
            groups.append([index])
    if mode == "scrambled":
        random.Random(seed).shuffle(groups)
    elif mode == "reversed":
        groups.reverse()
    elif mode != "reverse":
        raise ValueError(f"mode must be 'reverse', 'scrambled' or 'reversed', got {mode!r}")
    return [index for group in groups for index in group]


# The experiments (handout §5.3): each returns plain data; Part 6 asks what they found ------------------

def bucket_cap_sweep(model: ModelSpec | None = None, world_size: int = LECTURE_WORLD_SIZE,
                     alpha: float = ALPHA_S, beta: float = BETA_BYTES_PER_S,
                     caps: Sequence[int | None] = CAP_SWEEP_BYTES,
                     no_overlap_cap: int = LECTURE_BUCKET_CAP_BYTES) -> dict:
    """The bucket-size trade-off: the step of ``model`` (default ResNet-50) for each bucket cap of ``caps``.

    A cap is one limit for every bucket, in bytes; ``None`` means a single bucket holding the whole model.
    Every step overlaps communication with backward; ``no_overlap_s`` is, for comparison, the step with
    ``no_overlap_cap`` (default: the lecture's 25 MB) without overlap. Returns ``{"no_overlap_s": seconds,
    "points": [{"cap_bytes": cap, "num_buckets": int, "step_s": seconds}, ...]}``, one point per cap, in the
    order of ``caps``.
    """
    model = resnet50_model() if model is None else model
    # YOUR CODE HERE: replace this raise.
    raise NotImplementedError("Part 5: bucket_cap_sweep — see handout §5")


def first_bucket_effect(model: ModelSpec | None = None, world_size: int = LECTURE_WORLD_SIZE,
                        alpha: float = ALPHA_S, beta: float = BETA_BYTES_PER_S,
                        cap_bytes: int = LECTURE_BUCKET_CAP_BYTES,
                        first_bucket_bytes: int = DEFAULT_FIRST_BUCKET_BYTES) -> dict:
    """Torch's small first bucket: ``model`` (default ResNet-50) with ``cap_bytes`` for every bucket, against a
    first bucket of ``first_bucket_bytes`` and ``cap_bytes`` for the later ones.

    Returns ``{"cap_only": row, "small_first": row}``, each row ``{"limits": the byte limits, "num_buckets",
    "first_comm_start_s": when the first all-reduce starts, "step_s"}``.
    """
    model = resnet50_model() if model is None else model
    # YOUR CODE HERE: replace this raise.
    raise NotImplementedError("Part 5: first_bucket_effect — see handout §5")


def best_bucket_plan(model: ModelSpec | None = None, world_size: int = LECTURE_WORLD_SIZE,
                     alpha: float = ALPHA_S, beta: float = BETA_BYTES_PER_S,
                     order: Sequence[int] | None = None) -> tuple[list[list[int]], float]:
    """The fastest way to bucket ``model`` (default BERT-large): ``(plan, step_s)``.

    A plan is a list of buckets, launched in list order, each a run of consecutive gradients in the order backward
    produces them (``order``, default reverse registration order), together holding every tensor once; ``step_s``
    is its step with overlap. The plan returned has the shortest step of all such plans (no cap need make it).
    """
    model = bert_large_model() if model is None else model
    # YOUR CODE HERE: replace this raise.
    raise NotImplementedError("Part 5: best_bucket_plan — see handout §5")


def true_backward_order(permutation: Sequence[int]) -> list[int]:
    """Backward's real gradient order, as indices into the RE-REGISTERED table.

    ``permutation[j]`` is the original index of the parameter registered j-th. Re-registering changes
    what DDP assumes, not how the model computes: gradients still come in reverse ORIGINAL order.
    """
    # YOUR CODE HERE: replace this raise.
    raise NotImplementedError("Part 5: true_backward_order — see handout §5")


def registration_order_effect(model: ModelSpec | None = None, world_size: int = LECTURE_WORLD_SIZE,
                              alpha: float = ALPHA_S, beta: float = BETA_BYTES_PER_S,
                              bucket_size_limits: Sequence[int] = (LECTURE_BUCKET_CAP_BYTES,),
                              seed: int = ORDER_SEED) -> dict:
    """Layers registered in another order than the one they compute in (default model: BERT-large).

    For each mode of ``layer_permutation`` ("reverse", "scrambled" with ``seed``, "reversed"): the step when
    ``model``'s parameters are registered in that order. The model computes as it always did; what changes is
    the registration order, and with it the buckets DDP makes. Returns ``{mode: {"num_buckets",
    "first_comm_start_s", "step_s"}}``.
    """
    model = bert_large_model() if model is None else model
    # YOUR CODE HERE: replace this raise.
    raise NotImplementedError("Part 5: registration_order_effect — see handout §5")


def iteration_time(model: ModelSpec, world_size: int, alpha: float = ALPHA_S,
                   beta: float = BETA_BYTES_PER_S,
                   bucket_size_limits: Sequence[int] = (LECTURE_BUCKET_CAP_BYTES,),
                   forward_time: float | None = None) -> float:
    """One whole training iteration of ``model`` on ``world_size`` ranks (handout §5.1: forward, then the
    overlapped step). ``forward_time`` defaults to ``FORWARD_PER_BACKWARD`` times the model's backward."""
    if forward_time is None:
        forward_time = FORWARD_PER_BACKWARD * model.backward_time
    # YOUR CODE HERE: replace this raise.
    raise NotImplementedError("Part 5: iteration_time — see handout §5")


def weak_scaling(model: ModelSpec | None = None, world_sizes: Sequence[int] = SCALING_WORLD_SIZES,
                 alpha: float = ALPHA_S, beta: float = BETA_BYTES_PER_S,
                 bucket_size_limits: Sequence[int] = (LECTURE_BUCKET_CAP_BYTES,),
                 forward_time: float | None = None) -> list[dict]:
    """Weak scaling of ``model`` (default ResNet-50): the batch per rank stays fixed as ranks are added.

    One row per K of ``world_sizes``: ``{"world_size": K, "iteration_s": one iteration, "slowdown": that over
    one rank's iteration, "efficiency": the scaling efficiency, the throughput of K ranks over K times the
    throughput of one rank}``.
    """
    model = resnet50_model() if model is None else model
    # YOUR CODE HERE: replace this raise.
    raise NotImplementedError("Part 5: weak_scaling — see handout §5")


def skip_sync_step_time(sync_step: float, nosync_step: float, n: int) -> float:
    """The average iteration time when only one iteration in ``n`` synchronizes (``no_sync`` for the rest)."""
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    # YOUR CODE HERE: replace this raise.
    raise NotImplementedError("Part 5: skip_sync_step_time — see handout §5")


def skip_sync_speedup(model: ModelSpec | None = None, world_size: int = SKIP_SYNC_WORLD_SIZE,
                      n: int = SKIP_SYNC_EVERY, alpha: float = ALPHA_S, beta: float = BETA_BYTES_PER_S,
                      bucket_size_limits: Sequence[int] = (LECTURE_BUCKET_CAP_BYTES,),
                      forward_time: float | None = None) -> dict:
    """Synchronising once every ``n`` iterations instead of every iteration, at ``world_size`` ranks (default
    model: ResNet-50). Returns ``{"sync_s": a synchronised iteration, "nosync_s": one under no_sync(),
    "average_s", "speedup": sync_s / average_s - 1}`` (0.17 means 17% faster).
    """
    model = resnet50_model() if model is None else model
    # YOUR CODE HERE: replace this raise.
    raise NotImplementedError("Part 5: skip_sync_speedup — see handout §5")


# Bonus B (handout §4.5): one bucket order for a group whose ranks disagree --------------------------------

def group_step(ready_times_per_rank: Sequence[Sequence[float]], buckets: Sequence[Sequence[int]],
               comm_time: CommTime, overlap: bool = True) -> StepTimeline:
    """One backward of a whole group on the two-stream model, when each rank has its own gradient-ready times
    (``ready_times_per_rank[r][i]``: when rank r has gradient i) and every rank has the same ``buckets``.

    Each rank launches its buckets as Part 3's Reducer does; each all-reduce is ONE collective of the whole group,
    and the group's all-reduces go one at a time, in bucket index order. The timeline is the group's, its fields
    meaning what ``simulate_step``'s mean, for the group as a whole: ``bucket_ready[b]`` is when bucket b is ready
    for the group (the order of launches aside), ``backward_end`` when the last rank's backward ends.
    """
    if not ready_times_per_rank:
        raise ValueError("a group has at least one rank")
    # YOUR CODE HERE: replace this raise.
    # Hint: Bonus B (handout §4.5)
    raise NotImplementedError("Part 5: group_step — see handout §4.5 (optional: bonus)")


def group_order(ready_times_per_rank: Sequence[Sequence[float]]) -> list[int]:
    """The order in which the group as a whole has its gradients (ready as ``group_step`` counts it), earliest
    first; gradients ready at the same time, the smaller index first."""
    # YOUR CODE HERE: replace this raise.
    # Hint: Bonus B (handout §4.5)
    raise NotImplementedError("Part 5: group_order — see handout §4.5 (optional: bonus)")


def rebuild_order_effect(model: ModelSpec, rank_orders: Sequence[Sequence[int]], alpha: float = ALPHA_S,
                         beta: float = BETA_BYTES_PER_S,
                         bucket_size_limits: Sequence[int] = (LECTURE_BUCKET_CAP_BYTES,)) -> dict:
    """Which order to rebuild the buckets by, when the ranks' backwards produce ``model``'s gradients in different
    orders: ``rank_orders[r]`` is rank r's (as many ranks as orders; each gradient's share of the backward as in
    ``ddp_step``). Every rank buckets by the same order, with ``bucket_size_limits``, and each choice is judged by
    the group's step (``group_step``, one ring all-reduce per bucket).

    Returns ``{"no_rebuild_s": the step with DDP's first buckets (reverse registration order), "by_rank_s": [the
    step when the buckets are rebuilt by rank r's order, for each rank r], "by_group_s": the step when they are
    rebuilt by ``group_order``}``.
    """
    # YOUR CODE HERE: replace this raise.
    # Hint: Bonus B (handout §4.5)
    raise NotImplementedError("Part 5: rebuild_order_effect — see handout §4.5 (optional: bonus)")


def lecture_comparison() -> list[tuple[str, float, float]]:
    """``(quantity, your model, the lecture)`` for every number the lecture quotes (ms, x, %), from your
    experiments with the lecture's constants."""
    resnet, bert = resnet50_model(), bert_large_model()
    k, lecture_cap = LECTURE_WORLD_SIZE, [LECTURE_BUCKET_CAP_BYTES]
    first = first_bucket_effect(resnet)
    orders = registration_order_effect(bert)
    ms = 1e3
    return [
        ("ResNet-50 step, no overlap (ms)", resnet.step(k, lecture_cap, overlap=False).step_time * ms, 53.3),
        ("ResNet-50 step, overlap (ms)", resnet.step(k, lecture_cap).step_time * ms, 37.8),
        ("first comm starts, 25 MB cap (ms)", first["cap_only"]["first_comm_start_s"] * ms, 1.88),
        ("first comm starts, 1 MiB first (ms)", first["small_first"]["first_comm_start_s"] * ms, 0.02),
        ("step, 25 MB cap (ms)", first["cap_only"]["step_s"] * ms, 37.75),
        ("step, 1 MiB first bucket (ms)", first["small_first"]["step_s"] * ms, 35.04),
        ("BERT-large, reverse order (ms)", orders["reverse"]["step_s"] * ms, 270.3),
        ("BERT-large, scrambled layers (ms)", orders["scrambled"]["step_s"] * ms, 425.7),
        ("BERT-large, fully reversed (ms)", orders["reversed"]["step_s"] * ms, 444.7),
        ("ResNet-50 slowdown at 256 ranks (x)", weak_scaling(resnet)[-1]["slowdown"], 1.20),
        ("BERT-large slowdown at 256 ranks (x)", weak_scaling(bert)[-1]["slowdown"], 2.26),
        ("ResNet-50 skip-sync speedup (%)", skip_sync_speedup(resnet)["speedup"] * 100, 17),
        ("BERT-large skip-sync speedup (%)", skip_sync_speedup(bert)["speedup"] * 100, 95),
    ]


def _main() -> None:
    """``python -m minddp.timeline``: ResNet-50's step without and with overlap, then your model beside the
    lecture's numbers (once your experiments are written)."""
    resnet = resnet50_model()
    for overlap in (False, True):
        print(ascii_timeline(resnet.step(LECTURE_WORLD_SIZE, [LECTURE_BUCKET_CAP_BYTES], overlap=overlap)))
    print(f"{'':38s} {'your model':>10s}   {'lecture':>8s}")
    for quantity, model, lecture in lecture_comparison():
        print(f"{quantity:38s} {model:10.2f}   {lecture:8.2f}")


if __name__ == "__main__":
    _main()
