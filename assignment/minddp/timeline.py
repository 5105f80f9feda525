# GENERATED from solutions/minddp/timeline.py by tools/assign.py (staff: edit that file, then `make assignment`).
# Part 5, The timeline model (handout §5): this is your copy; edit the stubs (each `raise NotImplementedError`).
"""Part 5 — the α-β timeline model of overlap and scaling (handout §5).

DDP's speed on a real cluster cannot be measured on a laptop, so we model it. The model (handout §5.1):

* One COMPUTE stream runs backward and produces gradients one after another (by default in reverse
  registration order). A tensor's gradient takes time proportional to its element count, or to any
  per-tensor cost given instead; the model experiments use the forward MACs of each parameter
  (``model_shapes``), which is what reproduces the lecture's numbers.
* One COMMUNICATION stream all-reduces the buckets one at a time, strictly in bucket index order
  (every rank must launch the same collectives in the same order, handout §3.1). A bucket may start once all its
  gradients are ready and the previous bucket has finished.
* A ring all-reduce of n bytes on K ranks costs 2(K−1)α + 2(K−1)/K · n/β (the α-β model).
* The two streams never slow each other down; copies into buckets, the optimizer step and stragglers
  are free.

The lecture's timelines (handout §5.1) cover backward + communication (a "step" there has no forward). Its
scaling figures (handout §5.4) compare whole iterations, so it adds a forward pass that is never overlapped.

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
#   ResNet-50 : no-overlap step 53.3 ms  = backward + 4 ring all-reduces (20.37 ms at K=16) -> 32.93 ms
#   BERT-large: fully reversed 444.7 ms  = backward + 49 ring all-reduces (266.1 ms)         -> 178.6 ms
# Every other number (overlap, first bucket, orders, scaling, skip-sync) is then a prediction; see
# ``lecture_comparison()`` or run ``python -m minddp.timeline``.
RESNET50_BACKWARD_S = 32.93e-3
BERT_LARGE_BACKWARD_S = 178.6e-3
# The lecture's scaling figures count whole iterations (handout §A); forward costs half a backward (the usual
# 1:2 FLOP ratio). With it the model reproduces the lecture's 1.20x / 2.26x weak-scaling slowdowns; without it
# they would be ~1.3x / ~2.9x.
FORWARD_PER_BACKWARD = 0.5

CAP_SWEEP_BYTES = (0, 1 * MB, 2 * MB, 5 * MB, 10 * MB, 25 * MB, 50 * MB, 100 * MB, None)  # None: one bucket
SCALING_WORLD_SIZES = tuple(2**k for k in range(9))  # 1, 2, 4, ..., 256
SKIP_SYNC_WORLD_SIZE = 256
SKIP_SYNC_EVERY = 8
ORDER_SEED = 0

CommTime = Callable[[int], float] | Sequence[float]


# The α-β cost and the compute stream -------------------------------------------------------------

def ring_allreduce_time(nbytes: float, world_size: int, alpha: float, beta: float) -> float:
    """Seconds for a ring all-reduce of ``nbytes`` on ``world_size`` ranks: 2(K−1)α + 2(K−1)/K · n/β.

    A ring all-reduce is a reduce-scatter then an all-gather, each K−1 rounds; each round pays the
    per-message latency ``alpha`` (s) and moves n/K bytes at ``beta`` bytes/s. One rank sends nothing.
    """
    if world_size < 1:
        raise ValueError(f"world_size must be >= 1, got {world_size}")
    # YOUR CODE HERE: replace this raise.
    raise NotImplementedError("Part 5: ring_allreduce_time — see handout §5")


def backward_ready_times(shapes_or_sizes: Sequence[ParamEntry], backward_time: float,
                         order: Sequence[int] | None = None) -> list[float]:
    """When each tensor's gradient is ready, if backward takes ``backward_time`` in total.

    Entry i is a shape, a ``(name, shape)`` row or a number (an int element count, or any relative cost,
    int or float).
    Assumptions: gradients are produced one at a time, in ``order`` (default: reverse registration
    order, the order DDP assumes), and each takes time proportional to its size (its element count, or
    the number given). Returns a list indexed like ``shapes_or_sizes``; the last gradient in ``order`` is
    ready at ``backward_time``.
    """
    sizes = param_numels(shapes_or_sizes)
    if order is None:
        order = reverse_order(len(sizes))
    if sorted(order) != list(range(len(sizes))):
        raise ValueError("order must list every tensor index exactly once")
    # YOUR CODE HERE: replace this raise.
    raise NotImplementedError("Part 5: backward_ready_times — see handout §5")


# The two-stream simulator ------------------------------------------------------------------------

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
    """Run one backward on the two-stream model and return its timeline.

    ``ready_times[i]``: when tensor i's gradient is ready. ``buckets``: lists of tensor indices; every
    bucket non-empty. ``comm_time``: a bucket's all-reduce duration, as ``comm_time(b)`` or a list.

    A bucket is ready when all its tensors are. The communication stream takes buckets strictly in index
    order, one at a time, so bucket b starts at max(ready_b, end_{b-1}): a bucket that is ready early
    still waits for every lower-index bucket. Without overlap nothing starts before backward has ended
    (the last gradient is ready). The unit of time is whatever the inputs use.
    """
    if any(len(bucket) == 0 for bucket in buckets):
        raise ValueError("every bucket must hold at least one tensor")
    durations = _durations(comm_time, len(buckets))
    # YOUR CODE HERE: replace this raise.
    raise NotImplementedError("Part 5: simulate_step — see handout §5")


_BUCKET_SYMBOLS = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"


def ascii_timeline(timeline: StepTimeline, width: int = 64, title: str | None = None) -> str:
    """Draw the two streams as in handout §5.1; assumes the timeline is in seconds (printed in ms).

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


# Whole models ------------------------------------------------------------------------------------

def ddp_step(shapes: Sequence[ParamEntry], backward_time: float, world_size: int, alpha: float,
             beta: float, bucket_size_limits: Sequence[int], overlap: bool = True,
             order: Sequence[int] | None = None, dtype: torch.dtype = FP32,
             compute_costs: Sequence[float] | None = None) -> StepTimeline:
    """Bucket a model as DDP would, then simulate one backward (+ communication) step.

    ``shapes``: the parameters in registration order (see ``model_shapes``), gradients of ``dtype``.
    Buckets come from ``compute_bucket_assignment`` with ``bucket_size_limits`` (bytes), i.e. DDP's
    reverse-registration assumption. ``order`` is the order backward REALLY produces the gradients in
    (default: reverse registration); when it differs, buckets fill out of order. A gradient's share of
    ``backward_time`` is proportional to ``compute_costs[i]`` (ints or floats; default: its element
    count). Gradients of ``dtype`` take ``dtype.itemsize`` bytes per element. Each bucket
    costs one ring all-reduce of its bytes.
    """
    tensors = meta_tensors(shapes, dtype)
    costs = shapes if compute_costs is None else compute_costs  # shapes count as their element counts
    if len(costs) != len(tensors):
        raise ValueError(f"{len(costs)} compute costs for {len(tensors)} tensors")
    # YOUR CODE HERE: replace this raise.
    raise NotImplementedError("Part 5: ddp_step — see handout §5")


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


# Experiments (handout §5.3, §5.4): each returns plain data for the handout's tables and figures ---------------

def bucket_cap_sweep(model: ModelSpec | None = None, world_size: int = LECTURE_WORLD_SIZE,
                     alpha: float = ALPHA_S, beta: float = BETA_BYTES_PER_S,
                     caps: Sequence[int | None] = CAP_SWEEP_BYTES) -> dict:
    """Overlapped step time for each bucket cap (bytes, one limit for every bucket). Default: ResNet-50.

    Cap 0 seals a bucket after every gradient (one all-reduce per tensor); ``None`` means one bucket
    holding the whole model. Returns ``{"no_overlap_s": step at the lecture's 25 MB without overlap,
    "points": [{"cap_bytes", "num_buckets", "step_s"}, ...]}``.
    """
    model = resnet50_model() if model is None else model
    points = []
    for cap in caps:
        limits = [model_bytes(model.shapes) if cap is None else cap]
        tl = model.step(world_size, limits, alpha, beta)
        points.append({"cap_bytes": cap, "num_buckets": tl.num_buckets, "step_s": tl.step_time})
    no_overlap = model.step(world_size, [LECTURE_BUCKET_CAP_BYTES], alpha, beta, overlap=False)
    return {"no_overlap_s": no_overlap.step_time, "points": points}


def first_bucket_effect(model: ModelSpec | None = None, world_size: int = LECTURE_WORLD_SIZE,
                        alpha: float = ALPHA_S, beta: float = BETA_BYTES_PER_S,
                        cap_bytes: int = LECTURE_BUCKET_CAP_BYTES,
                        first_bucket_bytes: int = DEFAULT_FIRST_BUCKET_BYTES) -> dict:
    """Limits ``[cap]`` vs ``[first_bucket, cap]`` (torch's small first bucket). Default: ResNet-50.

    Returns ``{"cap_only": row, "small_first": row}``, each row
    ``{"limits", "num_buckets", "first_comm_start_s", "step_s"}``.
    """
    model = resnet50_model() if model is None else model
    result = {}
    for key, limits in (("cap_only", [cap_bytes]), ("small_first", [first_bucket_bytes, cap_bytes])):
        tl = model.step(world_size, limits, alpha, beta)
        result[key] = {"limits": limits, "num_buckets": tl.num_buckets,
                       "first_comm_start_s": tl.comm_start[0], "step_s": tl.step_time}
    return result


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
    """Step time when layers are registered in an order other than the one they compute in (handout §5.3).

    Default model: BERT-large. Buckets follow the reverse of the (wrong) registration order; gradients
    still arrive in the true backward order. Returns ``{mode: {"num_buckets", "first_comm_start_s",
    "step_s"}}`` for modes "reverse", "scrambled", "reversed" (see ``layer_permutation``).
    """
    model = bert_large_model() if model is None else model
    costs = model.compute_costs if model.compute_costs is not None else param_numels(model.shapes)
    result = {}
    for mode in ("reverse", "scrambled", "reversed"):
        permutation = layer_permutation(model.shapes, mode, seed)
        registered = ModelSpec(model.name, [model.shapes[i] for i in permutation], model.backward_time,
                               [costs[i] for i in permutation])
        tl = registered.step(world_size, bucket_size_limits, alpha, beta,
                             order=true_backward_order(permutation))
        result[mode] = {"num_buckets": tl.num_buckets, "first_comm_start_s": tl.comm_start[0],
                        "step_s": tl.step_time}
    return result


def iteration_time(model: ModelSpec, world_size: int, alpha: float = ALPHA_S,
                   beta: float = BETA_BYTES_PER_S,
                   bucket_size_limits: Sequence[int] = (LECTURE_BUCKET_CAP_BYTES,),
                   forward_time: float | None = None) -> float:
    """One whole iteration (handout §5.4): forward (default ``FORWARD_PER_BACKWARD`` x backward) + overlapped step.

    Assumes nothing overlaps the forward pass (DDP only overlaps communication with backward).
    """
    if forward_time is None:
        forward_time = FORWARD_PER_BACKWARD * model.backward_time
    return forward_time + model.step(world_size, bucket_size_limits, alpha, beta).step_time


def weak_scaling(model: ModelSpec | None = None, world_sizes: Sequence[int] = SCALING_WORLD_SIZES,
                 alpha: float = ALPHA_S, beta: float = BETA_BYTES_PER_S,
                 bucket_size_limits: Sequence[int] = (LECTURE_BUCKET_CAP_BYTES,),
                 forward_time: float | None = None) -> list[dict]:
    """Per-iteration time as ranks are added at a fixed per-rank batch (weak scaling, handout §5.4).

    Returns ``[{"world_size", "iteration_s", "slowdown"}, ...]`` where slowdown is the iteration time
    over the single-rank one (which communicates nothing). Default model: ResNet-50.
    """
    model = resnet50_model() if model is None else model
    single = iteration_time(model, 1, alpha, beta, bucket_size_limits, forward_time)
    rows = []
    for k in world_sizes:
        t = iteration_time(model, k, alpha, beta, bucket_size_limits, forward_time)
        rows.append({"world_size": k, "iteration_s": t, "slowdown": t / single})
    return rows


def skip_sync_step_time(sync_step: float, nosync_step: float, n: int) -> float:
    """Average iteration time when only one iteration in ``n`` synchronizes (``no_sync`` for the rest)."""
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    # YOUR CODE HERE: replace this raise.
    raise NotImplementedError("Part 5: skip_sync_step_time — see handout §5")


def skip_sync_speedup(model: ModelSpec | None = None, world_size: int = SKIP_SYNC_WORLD_SIZE,
                      n: int = SKIP_SYNC_EVERY, alpha: float = ALPHA_S, beta: float = BETA_BYTES_PER_S,
                      bucket_size_limits: Sequence[int] = (LECTURE_BUCKET_CAP_BYTES,),
                      forward_time: float | None = None) -> dict:
    """Syncing every ``n`` iterations vs every iteration, at ``world_size`` ranks. Default: ResNet-50.

    A skipped sync costs a single-rank iteration (nothing to communicate). Returns ``{"sync_s",
    "nosync_s", "average_s", "speedup"}``; speedup = sync_s / average_s − 1 (0.17 = 17% faster).
    """
    model = resnet50_model() if model is None else model
    sync = iteration_time(model, world_size, alpha, beta, bucket_size_limits, forward_time)
    nosync = iteration_time(model, 1, alpha, beta, bucket_size_limits, forward_time)
    average = skip_sync_step_time(sync, nosync, n)
    return {"sync_s": sync, "nosync_s": nosync, "average_s": average, "speedup": sync / average - 1}


def lecture_comparison() -> list[tuple[str, float, float]]:
    """``(quantity, model, lecture)`` for every number the lecture quotes (times in ms, speedups in %)."""
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
    """``python -m minddp.timeline``: the lecture's two timelines, then model vs lecture."""
    resnet = resnet50_model()
    for overlap in (False, True):
        print(ascii_timeline(resnet.step(LECTURE_WORLD_SIZE, [LECTURE_BUCKET_CAP_BYTES], overlap=overlap)))
    for quantity, model, lecture in lecture_comparison():
        print(f"{quantity:38s} model {model:8.2f}   lecture {lecture:8.2f}")


if __name__ == "__main__":
    _main()
