"""Part 5 — the timeline model (handout §5): the checks and their public inputs.

The reference is the reference solution's answer to the same call (``expected.json`` holds it for these
inputs; on Gradescope the reference computes it). Common mistakes are named by the inputs under which
the reference makes the same mistake (no latency: alpha = 0; ...).
"""

from __future__ import annotations

import math
import random

from checks.check import Check, Outcome, Run, fail
from checks.compare import close, same_outcomes

RTOL = 1e-9


def call(fn: str, *args, **kwargs) -> dict:
    return {"fn": fn, "args": list(args), **({"kwargs": kwargs} if kwargs else {})}


def describe(case: dict) -> str:
    kwargs = "".join(f", {k}={v!r}" for k, v in case.get("kwargs", {}).items())
    return f"{case['fn']}({', '.join(repr(a) for a in case['args'])}{kwargs})"


# Each mistake as the arguments under which the reference makes it (cases it does not apply to stay).
def _no_latency(c: dict) -> dict:
    n, k, alpha, beta = c["args"]
    return {**c, "args": [n, k, 0.0, beta]} if k > 1 else c


def _no_fraction(c: dict) -> dict:
    n, k, alpha, beta = c["args"]  # 2(K-1)/K * n' / beta = 2 n / beta  when  n' = n K / (K-1)
    if k == 1:  # 2 n / beta alone: the cost of n' = 2 n on 2 ranks without latency
        return {**c, "args": [2 * n, 2, 0.0, beta]}
    return {**c, "args": [n * k / (k - 1), k, alpha, beta]}


def _registration_order(c: dict) -> dict:
    sizes, total, *order = c["args"]
    return c if order and order[0] is not None else {**c, "args": [sizes, total, list(range(len(sizes)))]}


def _overlap_ignored(c: dict) -> dict:
    ready, buckets, durations, *overlap = c["args"]
    return {**c, "args": [ready, buckets, durations, True]}


def _ready_order_launch(c: dict) -> dict:
    """Buckets launched in the order they become ready: the reference on buckets sorted that way; the
    result's per-bucket lists are put back in index order by ``reorder`` (see ``compare_values``)."""
    ready, buckets, durations, *overlap = c["args"]
    order = sorted(range(len(buckets)), key=lambda b: max(ready[i] for i in buckets[b]))
    return {**c, "args": [ready, [buckets[b] for b in order], [durations[b] for b in order], *overlap],
            "reorder": order}


def _without(key: str):
    """The mistake of ignoring keyword argument ``key``: the reference called without it."""
    def make(c: dict) -> dict:
        if key not in c.get("kwargs", {}):
            return c
        kwargs = {k: v for k, v in c["kwargs"].items() if k != key}
        return {**{k: v for k, v in c.items() if k != "kwargs"}, **({"kwargs": kwargs} if kwargs else {})}
    return make


def _permutation_not_inverted(c: dict) -> dict:
    """``permutation[o]`` for o = n-1..0 (the permutation reversed) instead of the position j with
    ``permutation[j] == o``: the reference on the inverse permutation."""
    if c["fn"] != "true_backward_order":
        return c
    (permutation,) = c["args"]
    inverse = [0] * len(permutation)
    for j, original in enumerate(permutation):
        inverse[original] = j
    return {**c, "args": [inverse]}


def _sync_on_top(c: dict) -> dict:
    """(n·nosync + sync)/n: the reference with the sync step made sync + nosync (one more no-sync step)."""
    sync, nosync, n = c["args"]
    return {**c, "args": [sync + nosync, nosync, n]}


def _unpermute(result: dict, order: list[int]) -> dict:
    if "value" not in result:
        return result
    value = dict(result["value"])
    for key in ("comm_start", "comm_end", "bucket_ready", "buckets"):
        lists = value[key]
        value[key] = [None] * len(lists)
        for position, b in enumerate(order):
            value[key][b] = lists[position]
    return {"value": value}


def timeline_run(cases: list[dict], label: str, mistakes: dict | None = None) -> Run:
    return Run("timeline_cases", {"cases": cases}, label=label,
               mistakes={text: {"cases": [make(c) for c in cases]} for text, make in (mistakes or {}).items()})


def zero_edge(case: dict) -> str:
    """The handout's edge a case of ready times is, if it is one: every size (or compute cost) 0."""
    if case["fn"] == "backward_ready_times":
        costs = case["args"][0]
    elif case["fn"] == "ddp_step":
        costs = case.get("kwargs", {}).get("compute_costs") or case["args"][0]
    else:
        return ""
    if costs and not any(entry_size(c) for c in costs):
        return ("Every size (or compute cost) here is 0: the handout's edge, where every gradient is ready at 0 "
                "(there is no total to divide by).")
    return ""


def entry_size(entry) -> float:
    """An entry of a ready-times input as a size: a number, a shape's element count, a (name, shape) row's."""
    if isinstance(entry, (int, float)):
        return entry
    if len(entry) == 2 and isinstance(entry[0], str):
        return entry_size(entry[1])
    return math.prod(entry)


def compare_values(rule: str):
    def compare(o: Outcome) -> None:
        mistakes = {}
        for text, results in o.mistakes.items():
            cases = o.run.mistakes[text]["cases"]
            mistakes[text] = [[_unpermute(r, c["reorder"]) if "reorder" in c else r for c, r in zip(cases, results[0], strict=True)]]
        same_outcomes(Outcome(o.run, o.got, o.ref, mistakes), describe, f"{rule} (relative tolerance {RTOL:g})",
                      rtol=RTOL, edge=zero_edge)
    return compare


def compare_simulator(rule: str):
    """``compare_values``, after naming one mistake no argument reproduces: a bucket taken as ready when its
    FIRST gradient is."""
    values = compare_values(rule)

    def compare(o: Outcome) -> None:
        for case, r, g in zip(o.run.kwargs["cases"], o.ref[0], o.got[0], strict=True):
            if case["fn"] != "simulate_step" or "value" not in g or "value" not in r:
                continue
            ready, buckets = case["args"][0], case["args"][1]
            first = [min(ready[i] for i in bucket) for bucket in buckets]
            mine, expected = g["value"].get("bucket_ready"), r["value"]["bucket_ready"]
            if close(mine, first, RTOL) and not close(mine, expected, RTOL):
                fail(f"{describe(case)}\n  your bucket_ready: {mine!r}\n  expected:          {expected!r}\n"
                     "Your bucket_ready is the ready time of each bucket's FIRST gradient: a bucket is ready when its "
                     "LAST gradient is, r_b = max of its tensors' ready times (handout §5)")
        values(o)
    return compare


def simulator_cases(seed: int, count: int) -> list[dict]:
    rng = random.Random(seed)
    cases = []
    for _ in range(count):
        n = rng.randint(0, 12)  # 0: no tensors, no buckets
        ready = [round(rng.uniform(0, 10), 3) for _ in range(n)]
        indices = list(range(n))
        rng.shuffle(indices)
        cuts = sorted(rng.sample(range(1, n), rng.randint(0, n - 1))) if n > 1 else []
        buckets = [indices[a:b] for a, b in zip([0, *cuts], [*cuts, n], strict=True)] if n else []
        durations = [round(rng.uniform(0.1, 3), 3) for _ in buckets]
        cases.append(call("simulate_step", ready, buckets, durations, rng.random() < 0.7))
    return cases


EX4_MB = [10, 2, 8, 20, 4]  # the lecture's exercise 4: p0..p4 in MB, cap 12 MB -> buckets {p4,p3}, {p2,p1,p0}
EX4_READY_MS = [5.0, 4.0, 3.0, 2.0, 1.0]
EX4_COMM_MS = [0.5 + 0.1 * (4 + 20), 0.5 + 0.1 * (8 + 2 + 10)]  # 0.5 ms + 0.1 ms per MB

RING = [call("ring_allreduce_time", 1e9, 1, 1.0, 1.0), call("ring_allreduce_time", 1e9, 2, 1e-5, 1e10),
        call("ring_allreduce_time", 25e6, 16, 1e-5, 1e10), call("ring_allreduce_time", 0, 4, 1e-5, 1e10)]
READY = [call("backward_ready_times", [1, 3], 4.0), call("backward_ready_times", [1, 3], 4.0, [0, 1]),
         call("backward_ready_times", [[2, 3], ["b", [4]]], 1.0),
         call("backward_ready_times", [[0], [0, 3], 0], 2.5)]  # every size 0: every gradient is ready at 0
SIMULATOR = [call("simulate_step", [5.0, 1.0], [[0], [1]], [1.0, 1.0]),
             call("simulate_step", [1.0, 4.0], [[0], [1]], [2.0, 1.0], False),
             call("simulate_step", EX4_READY_MS, [[4, 3], [2, 1, 0]], EX4_COMM_MS),
             call("simulate_step", EX4_READY_MS, [[4, 3], [2, 1, 0]], EX4_COMM_MS, False),
             call("simulate_step", EX4_READY_MS, [[4, 3, 2, 1, 0]], [4.9]),
             call("simulate_step", [], [], [])] + simulator_cases(seed=11, count=40)  # no tensors: all 0
SMALL_MODEL = [[1000], [3000]]  # 4000 and 12000 bytes; limit 10000 B seals [1] then [0]
DDP_STEP = [call("ddp_step", SMALL_MODEL, 1.0, 2, 0.01, 1e4, [10_000]),
            call("ddp_step", SMALL_MODEL, 1.0, 2, 0.01, 1e4, [10_000], overlap=False),
            call("ddp_step", SMALL_MODEL, 1.0, 2, 0.01, 1e4, [10_000], order=[0, 1]),
            call("ddp_step", SMALL_MODEL, 1.0, 2, 0.01, 1e4, [10_000], compute_costs=[3, 1]),
            call("ddp_step", SMALL_MODEL, 1.0, 2, 0.01, 1e4, [10_000], compute_costs=[0, 0]),  # all ready at 0
            call("ddp_step", [[0], [0, 4]], 1.0, 2, 0.01, 1e4, [10_000])]  # an all-empty model: the same
# Four tensors of 40, 100, 60, 250 elements: which buckets an 800-byte limit makes depends on the bytes per element.
FOUR_TENSORS = [[40], [10, 10], [3, 20], [250]]
DDP_STEP_ARGUMENTS = [
    call("ddp_step", FOUR_TENSORS, 1.0, 4, 0.01, 1e4, [800], dtype="float64"),
    call("ddp_step", FOUR_TENSORS, 1.0, 4, 0.01, 1e4, [800], overlap=False, dtype="bfloat16"),
    call("ddp_step", FOUR_TENSORS, 1.0, 4, 0.01, 1e4, [800], order=[1, 3, 0, 2]),
    call("ddp_step", FOUR_TENSORS, 1.0, 4, 0.01, 1e4, [800], compute_costs=[0.5, 2.25, 1.0, 4.0]),
    call("ddp_step", FOUR_TENSORS, 1.0, 4, 0.01, 1e4, [200, 800], order=[2, 0, 3, 1], dtype="float16",
         compute_costs=[3, 1, 4, 1])]
SKIP_SYNC = [call("skip_sync_step_time", 100.0, 50.0, 4), call("skip_sync_step_time", 100.0, 50.0, 1)]
# Permutations that are not their own inverse: reversing the permutation itself gives another answer.
TRUE_ORDERS = [call("true_backward_order", p) for p in ([3, 2, 0, 1], [1, 2, 0], [2, 0, 3, 1, 4], [4, 0, 1, 2, 3])]
ORDERS = [call("true_backward_order", [3, 2, 0, 1]), call("true_backward_order", [0, 1, 2]),
          call("registration_order_effect"), call("bucket_cap_sweep"), call("first_bucket_effect"),
          call("weak_scaling"), call("skip_sync_speedup")]

# The mistakes each check names (the hidden inputs name the same ones).
MISTAKES = {
    "5.1": {"the latency term 2(K-1)α is missing": _no_latency,
            "the bandwidth term lacks the (K-1)/K factor (it must be 2(K-1)/K · n/β)": _no_fraction},
    "5.2": {"gradients are taken in registration order; the default is reverse registration order":
            _registration_order},
    "5.3": {"buckets are launched in the order they become ready instead of bucket index order": _ready_order_launch,
            "overlap=False is ignored (without overlap no bucket may start before backward ends)": _overlap_ignored},
    "5.4": {"`dtype` is ignored (a gradient of dtype takes dtype.itemsize bytes per element, in the buckets and "
            "in the all-reduce)": _without("dtype"),
            "`order` is ignored (backward produces the gradients in `order`; only the buckets assume the reverse "
            "order)": _without("order"),
            "`compute_costs` is ignored (a gradient's share of backward_time is its compute cost when they are "
            "given)": _without("compute_costs")},
    "5.5": {"the synchronising iteration is added on top of n no-sync ones, (n·nosync + sync)/n, instead of "
            "replacing one of them: of every n iterations, n-1 skip the sync and one synchronises": _sync_on_top},
    "5.6": {"the permutation is reversed (permutation[o] for o = n-1..0) instead of inverted (the position j with "
            "permutation[j] == o)": _permutation_not_inverted},
}

CHECKS = [
    Check("5.1", "ring all-reduce cost 2(K-1)α + 2(K-1)/K · n/β", weight=3, section="5",
          runs=(timeline_run(RING, "the handout's cases", MISTAKES["5.1"]),),
          compare=compare_values("Handout §5: ring all-reduce cost; 0 for one rank")),
    Check("5.2", "gradient-ready times of the compute stream", weight=2, section="5",
          runs=(timeline_run(READY, "the handout's cases (all sizes 0 among them)", MISTAKES["5.2"]),),
          compare=compare_values("Handout §5: gradients one at a time in the given order, time proportional to size")),
    Check("5.3", "the two-stream simulator (buckets strictly in index order, with and without overlap)", weight=5,
          section="5", runs=(timeline_run(SIMULATOR, "the handout's cases, the lecture's exercise 4, 40 random cases",
                                          MISTAKES["5.3"]),),
          compare=compare_simulator("Handout §5: a bucket is ready when its last gradient is; bucket b starts at "
                                    "max(ready_b, end_(b-1)); without overlap every bucket waits for the end of "
                                    "backward")),
    Check("5.4", "ddp_step buckets a model and simulates one step", weight=2, section="5",
          runs=(timeline_run(DDP_STEP, "a two-tensor model: default, no overlap, a given order, compute costs, "
                             "all-zero compute costs; an all-empty model", MISTAKES["5.4"]),
                timeline_run(DDP_STEP_ARGUMENTS, "a four-tensor model: float64, bfloat16, float16, another order, "
                             "float compute costs", MISTAKES["5.4"])),
          compare=compare_values("Handout §5: bucket with compute_bucket_assignment, ready times from "
                                 "compute_costs (or sizes) in `order`, then simulate")),
    Check("5.5", "amortised step time when syncing every n steps", weight=1, section="5",
          runs=(timeline_run(SKIP_SYNC, "the lecture's exercise 11", MISTAKES["5.5"]),),
          compare=compare_values("Handout §5: ((n-1) no-sync steps + 1 sync step) / n")),
    Check("5.6", "true backward order, and the lecture's experiments on ResNet-50 and BERT-large", weight=2,
          section="5", runs=(timeline_run(TRUE_ORDERS, "permutations that are not their own inverse",
                                          MISTAKES["5.6"]),
                             timeline_run(ORDERS, "true_backward_order and the provided experiments")),
          compare=compare_values("Handout §5: re-registering changes what DDP assumes, not how the model computes")),
]
