"""Part 5 — the timeline model (handout §5): the checks and their public inputs.

The reference is the reference solution's answer to the same call (``expected.json`` holds it for these
inputs; on Gradescope the reference computes it). Common mistakes are named by the inputs under which
the reference makes the same mistake (no latency: alpha = 0; ...). The experiments (5.5-5.9) run on small
models made up for the checks (``made_up_model``); what they find for ResNet-50 and BERT-large is yours to
report in Part 6. Each experiment's first cases are ``ddp_step`` calls on the same model: the experiments
build on your model, and a difference there is shown first.
"""

from __future__ import annotations

import math
import random

from checks.check import Check, Outcome, Run, fail
from checks.compare import close, in_index_order, mistakes_in_index_order, outcome_text, same_outcomes
from checks.part2 import random_buckets

RTOL = 1e-9


def call(fn: str, *args, **kwargs) -> dict:
    return {"fn": fn, "args": list(args), **({"kwargs": kwargs} if kwargs else {})}


def describe(case: dict) -> str:
    def text(value) -> str:
        if isinstance(value, dict) and "shapes" in value:  # a model: its name says where it is defined
            return f"<{value['name']}: {len(value['shapes'])} tensors>"
        return repr(value)
    def kwarg(key: str, value) -> str:
        return f"{key}=<{case['about']}'s>" if "about" in case and key == "compute_costs" else f"{key}={text(value)}"
    args = [f"<the shapes of {case['about']}>" if "about" in case and i == 0 else text(a)
            for i, a in enumerate(case["args"])]
    kwargs = [kwarg(k, v) for k, v in case.get("kwargs", {}).items()]
    return f"{case['fn']}({', '.join(args + kwargs)})"


# Each mistake as the arguments under which the reference makes it (cases it does not apply to stay).
def _no_latency(c: dict) -> dict:
    n, k, alpha, beta = c["args"]
    return {**c, "args": [n, k, 0.0, beta]} if k > 1 else c


def _no_fraction(c: dict) -> dict:
    """Every round counted with all n bytes, as if one rank sent the whole message twice: the reference on more
    bytes (and, on one rank, on two ranks without latency) gives the same times."""
    n, k, alpha, beta = c["args"]
    if k == 1:
        return {**c, "args": [2 * n, 2, 0.0, beta]}
    return {**c, "args": [n * k / (k - 1), k, alpha, beta]}


def _one_phase(c: dict) -> dict:
    """Only the reduce-scatter (or only the all-gather): half the cost, the reference with alpha / 2, beta * 2."""
    n, k, alpha, beta = c["args"]
    return {**c, "args": [n, k, alpha / 2, beta * 2]}


def _whole_message_per_round(c: dict) -> dict:
    """Every round moves all n bytes instead of a chunk of n/K: the reference on K times the bytes."""
    n, k, alpha, beta = c["args"]
    return {**c, "args": [n * k, k, alpha, beta]}


def _latency_once(c: dict) -> dict:
    """One α per all-reduce instead of one per round: the reference with α divided by the number of rounds."""
    n, k, alpha, beta = c["args"]
    return {**c, "args": [n, k, alpha / (2 * (k - 1)), beta]} if k > 1 else c


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
    if c["fn"] != "skip_sync_step_time":
        return c
    sync, nosync, n = c["args"]
    return {**c, "args": [sync + nosync, nosync, n]}


def _unpermute(result: dict, order: list[int]) -> dict:
    if "value" not in result:
        return result
    value = dict(result["value"])
    for key in ("comm_start", "comm_end", "bucket_ready", "buckets"):
        value[key] = in_index_order(value[key], order)
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
        mistakes = mistakes_in_index_order(o, _unpermute)
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
        buckets = random_buckets(rng, n)
        durations = [round(rng.uniform(0.1, 3), 3) for _ in buckets]
        cases.append(call("simulate_step", ready, buckets, durations, rng.random() < 0.7))
    return cases


def _no_forward(c: dict) -> dict:
    """An iteration without its forward pass: the reference with ``forward_time=0``."""
    if c["fn"] not in ("iteration_time", "weak_scaling", "skip_sync_speedup"):
        return c
    return {**c, "kwargs": {**c.get("kwargs", {}), "forward_time": 0.0}}


# -- the experiments' models: made up for the checks (handout §5.3 asks about ResNet-50 and BERT-large) --------

def model_bytes(model: dict) -> int:
    """Bytes of a made-up model's float32 gradients."""
    total = 0
    for _, shape in model["shapes"]:
        elements = 1
        for size in shape:
            elements *= size
        total += 4 * elements
    return total


def made_up_model(seed: int, name: str, layers: int | None = None) -> dict:
    """A model as the experiments take it (``timeline.ModelSpec``'s fields; the checks pass it as a dict):
    ``layers`` layers "layer.<i>" of a weight and a bias each, registered in the order they compute, whose
    backward costs are their forward MACs (a weight is applied at a number of positions, as a convolution's)."""
    rng = random.Random(seed)
    shapes, costs = [], []
    for i in range(layers or rng.randint(4, 14)):
        width, fan_in = rng.choice([32, 64, 128, 256, 512, 1024]), rng.choice([16, 64, 256, 1024, 2048])
        positions = rng.choice([1, 1, 49, 196, 784, 3136])  # a linear layer, or a conv applied at 7x7 ... 56x56
        shapes += [[f"layer.{i}.weight", [width, fan_in]], [f"layer.{i}.bias", [width]]]
        costs += [width * fan_in * positions, width * positions]
    model = {"name": name, "shapes": shapes, "compute_costs": costs}
    # Backward takes about as long as moving the gradients once at 10 GB/s, give or take a factor of 4: the regime
    # where overlap, bucket sizes and registration order all matter.
    return {**model, "backward_time": float(f"{model_bytes(model) / 1e10 * rng.uniform(0.25, 4):.4g}")}


def companion(model: dict, world_size: int, alpha: float, beta: float, limits: list, **kwargs) -> dict:
    """Your ``ddp_step`` on an experiment's model: what the experiment builds on."""
    return {**call("ddp_step", model["shapes"], model["backward_time"], world_size, alpha, beta, limits,
                   compute_costs=model["compute_costs"], **kwargs), "about": model["name"]}


def experiment_cases(seed: int, count: int, name: str = "made-up model {i} of checks/part5.py") -> dict[str, list[dict]]:
    """For each experiment, ``count`` calls on made-up models and settings drawn from ``seed`` (the public
    inputs use a fixed seed; the hidden ones, the grader's secret), each experiment's list starting with
    ``ddp_step`` calls on its models."""
    rng = random.Random(seed)
    cases: dict[str, list[dict]] = {"sweep": [], "first": [], "order": [], "scaling": [], "skip": [], "plan": []}
    companions: dict[str, list[dict]] = {key: [] for key in cases}
    for i in range(count):
        model = made_up_model(rng.randrange(2**31), name.format(i=i))
        size = model_bytes(model)
        k, alpha, beta = rng.choice([2, 4, 16, 64, 256]), rng.choice([1e-6, 1e-5, 5e-5]), rng.choice([1e9, 1e10, 5e10])
        settings = {"world_size": k, "alpha": alpha, "beta": beta}
        cap = int(size * rng.choice([0.05, 0.1, 0.25, 0.5]))
        caps = sorted({0, int(size * 0.01), int(size * 0.05), cap, int(size * 0.3)}) + [None]
        companions["sweep"].append(companion(model, k, alpha, beta, [cap]))
        cases["sweep"].append(call("bucket_cap_sweep", model=model, caps=caps, no_overlap_cap=cap, **settings))
        first = int(cap * rng.choice([0.02, 0.1, 0.3]))
        companions["first"].append(companion(model, k, alpha, beta, [first, cap]))
        cases["first"].append(call("first_bucket_effect", model=model, cap_bytes=cap, first_bucket_bytes=first,
                                   **settings))
        # Registration order shows most with many layers and small buckets: a model of its own.
        layered = made_up_model(rng.randrange(2**31), name.format(i=f"{i}b"), layers=rng.randint(8, 14))
        small_cap = int(model_bytes(layered) * rng.choice([0.03, 0.06, 0.1]))
        companions["order"].append(companion(layered, k, alpha, beta, [small_cap],
                                             order=list(range(len(layered["shapes"])))))
        cases["order"].append(call("registration_order_effect", model=layered, bucket_size_limits=[small_cap],
                                   seed=rng.randrange(1000), **settings))
        world_sizes = sorted(rng.sample([1, 2, 3, 4, 8, 16, 32, 64, 128, 256, 512], rng.randint(2, 5)))
        companions["scaling"].append(companion(model, world_sizes[-1], alpha, beta, [cap]))
        forward = {"forward_time": round(rng.uniform(0.001, 0.1), 4)} if rng.random() < 0.5 else {}
        cases["scaling"].append(call("iteration_time", model=model, bucket_size_limits=[cap], **settings, **forward))
        cases["scaling"].append(call("weak_scaling", model=model, world_sizes=world_sizes, alpha=alpha, beta=beta,
                                     bucket_size_limits=[cap], **forward))
        companions["skip"].append(companion(model, k, alpha, beta, [cap]))
        cases["skip"].append(call("skip_sync_step_time", round(rng.uniform(0.05, 0.2), 4),
                                  round(rng.uniform(0.01, 0.05), 4), rng.randint(1, 16)))
        cases["skip"].append(call("skip_sync_speedup", model=model, n=rng.randint(2, 16), bucket_size_limits=[cap],
                                  **settings, **forward))
        n = len(model["shapes"])
        given = {"order": rng.sample(range(n), n)} if i % 2 else {}  # backward's real order, when not the reverse
        companions["plan"].append(companion(model, k, alpha, beta, [cap], **given))
        cases["plan"].append(call("best_bucket_plan", model=model, **settings, **given))
    return {key: companions[key] + cases[key] for key in cases}


def compare_experiment(rule: str):
    """``compare_values``, after saying which part of an experiment's result differs first (a point of the
    sweep, a mode, a world size), and whether your ``ddp_step`` on the same model agrees."""
    values = compare_values(rule)

    def compare(o: Outcome) -> None:
        companions_agree(o)
        for case, r, g in zip(o.run.kwargs["cases"], o.ref[0], o.got[0], strict=True):
            if case["fn"] == "ddp_step" or close(g, r, RTOL) or "value" not in g or "value" not in r:
                continue
            where = first_difference(g["value"], r["value"])
            if where:
                fail(f"{describe(case)}\n  the first difference: {where}\n{rule} (relative tolerance {RTOL:g})"
                     + _named(o, case))
        values(o)
    return compare


COMPANIONS = {"simulate_step": "handout §5.1; check 5.3", "ddp_step": "handout §5.2; check 5.4"}


def companions_agree(o: Outcome, builder: str = "The experiments of this check") -> None:
    """A run's first cases: your Part 5 functions (``COMPANIONS``) on its inputs, which what ``builder`` names
    builds on; where one differs (or raises), that is what to fix first."""
    for case, r, g in zip(o.run.kwargs["cases"], o.ref[0], o.got[0], strict=True):
        if case["fn"] in COMPANIONS and "value" in r and not close(g, r, RTOL):
            fail(f"{describe(case)}\n  yours:    {_short(g)}\n  expected: {_short(r)}\n{builder} build on "
                 f"{case['fn']}, which differs on this check's inputs ({COMPANIONS[case['fn']]}): fix it first.")


def compare_plan(o: Outcome) -> None:
    """best_bucket_plan: a plan of the shape asked for, and the shortest step (plans may tie: only the step is
    compared with the reference's)."""
    companions_agree(o)
    if any("error" in g for g in o.got[0]):  # a raise (a stub, an exception) is shown as in any other check
        same_outcomes(Outcome(o.run, o.got, o.ref, {}), describe, RULES["5.10"], rtol=RTOL)
    for case, r, g in zip(o.run.kwargs["cases"], o.ref[0], o.got[0], strict=True):
        if case["fn"] != "best_bucket_plan" or "value" not in g:
            continue
        mine, best = g["value"], r["value"][1]
        sequence = case["kwargs"].get("order") or list(range(len(case["kwargs"]["model"]["shapes"]) - 1, -1, -1))
        if not (isinstance(mine, (list, tuple)) and len(mine) == 2 and isinstance(mine[0], (list, tuple))):
            fail(f"{describe(case)} returned {outcome_text(g)}: it returns (plan, step_s), the plan a list of buckets, "
                 "each a list of tensor indices (handout §5.3)")
        plan, step = mine
        if [i for bucket in plan for i in bucket] != sequence or any(not bucket for bucket in plan):
            fail(f"{describe(case)}: your plan {plan!r:.300} is not a list of non-empty runs of consecutive "
                 f"gradients in the order backward produces them ({sequence!r:.200}), holding each tensor once "
                 "(handout §5.3)")
        if not close(step, best, RTOL):
            fail(f"{describe(case)}: your plan of {len(plan)} buckets has a step of {step!r} s; the fastest plan's "
                 f"step is {best!r} s" + (f", {1 - best / step:.2%} shorter" if isinstance(step, float) and step > 0
                                          else "") + f". {RULES['5.10']} (relative tolerance {RTOL:g})")


def _short(outcome: dict) -> str:
    value = outcome.get("value")
    return repr({k: value[k] for k in ("step_time", "buckets")}) if isinstance(value, dict) else outcome_text(outcome)


def _named(o: Outcome, case: dict) -> str:
    """"Your answers are exactly what ..." when one of the run's named mistakes gives your answers to every case
    of the failing function (the experiments built on it may differ in ways no argument reproduces)."""
    cases, mine, ref = o.run.kwargs["cases"], o.got[0], o.ref[0]
    same_fn = [i for i, c in enumerate(cases) if c["fn"] == case["fn"]]
    for text, results in o.mistakes.items():
        if all(close(results[0][i], mine[i], RTOL) for i in same_fn) and \
                not all(close(results[0][i], ref[i], RTOL) for i in same_fn):
            return f"\nYour answers are exactly what you get when {text}."
    return ""


def first_difference(mine, theirs, path: str = "") -> str:
    """Where two results first differ, in words: "points[2] (cap_bytes 5000): step_s yours 0.01, expected 0.02"."""
    if isinstance(theirs, dict) and isinstance(mine, dict):
        if mine.keys() != theirs.keys():
            return f"{path or 'the result'} has the keys {sorted(mine)}; expected {sorted(theirs)}"
        for key in theirs:
            found = first_difference(mine[key], theirs[key], f"{path}[{key!r}]")
            if found:
                return found
        return ""
    if isinstance(theirs, list) and isinstance(mine, list):
        if len(mine) != len(theirs):
            return f"{path or 'the result'} has {len(mine)} entries; expected {len(theirs)}"
        for i, (a, b) in enumerate(zip(mine, theirs, strict=True)):
            label = next((f" ({k} {b[k]!r})" for k in ("cap_bytes", "world_size") if isinstance(b, dict) and k in b), "")
            found = first_difference(a, b, f"{path}[{i}]{label}")
            if found:
                return found
        return ""
    return "" if close(mine, theirs, RTOL) else f"{path or 'the result'}: yours {mine!r}, expected {theirs!r}"


EX4_MB = [10, 2, 8, 20, 4]  # the lecture's exercise 4: p0..p4 in MB, cap 12 MB -> buckets {p4,p3}, {p2,p1,p0}
EX4_READY_MS = [5.0, 4.0, 3.0, 2.0, 1.0]
EX4_COMM_MS = [0.5 + 0.1 * (4 + 20), 0.5 + 0.1 * (8 + 2 + 10)]  # 0.5 ms + 0.1 ms per MB

RING = [call("ring_allreduce_time", 1e9, 1, 1.0, 1.0), call("ring_allreduce_time", 1e9, 2, 1e-5, 1e10),
        call("ring_allreduce_time", 25e6, 16, 1e-5, 1e10), call("ring_allreduce_time", 0, 4, 1e-5, 1e10),
        call("ring_allreduce_time", 3e6, 3, 2e-5, 1e9)]
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
# Permutations that are not their own inverse: reversing the permutation itself gives another answer.
TRUE_ORDERS = [call("true_backward_order", p) for p in ([3, 2, 0, 1], [1, 2, 0], [2, 0, 3, 1, 4], [4, 0, 1, 2, 3])]
EXPERIMENTS = experiment_cases(seed=2026, count=2)
SKIP_SYNC = [call("skip_sync_step_time", 100.0, 50.0, 4), call("skip_sync_step_time", 100.0, 50.0, 1)]  # exercise 11

# The mistakes each check names (the hidden inputs name the same ones).
MISTAKES = {
    "5.1": {"the latency is missing: every round of the ring pays α": _no_latency,
            "the bytes are counted as if each rank sent the whole message twice: a rank sends one chunk of n/K bytes "
            "per round": _no_fraction,
            "only one phase is counted: a ring all-reduce is a reduce-scatter AND an all-gather, K-1 rounds each":
            _one_phase,
            "every round moves the whole message: a rank sends one chunk of n/K bytes per round": _whole_message_per_round,
            "the latency is paid once per all-reduce instead of once per round": _latency_once},
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
    "5.7": {"the permutation is reversed (permutation[o] for o = n-1..0) instead of inverted (the position j with "
            "permutation[j] == o)": _permutation_not_inverted},
    "5.8": {"the forward pass is left out of an iteration (it is never overlapped: it adds to every iteration)":
            _no_forward},
    "5.9": {"the synchronising iteration is added on top of n no-sync ones, (n·nosync + sync)/n, instead of "
            "replacing one of them: of every n iterations, n-1 skip the sync and one synchronises": _sync_on_top,
            "the forward pass is left out of an iteration (it is never overlapped: it adds to every iteration)":
            _no_forward},
}
RULES = {
    "5.5": "Handout §5.3, bucket_cap_sweep: one overlapped step per cap (None: one bucket holding the whole model), "
           "and the step with no_overlap_cap without overlap",
    "5.6": "Handout §5.3, first_bucket_effect: the same cap for every bucket, against a small first bucket then the cap",
    "5.7": "Handout §5.3: re-registering changes what DDP assumes (its buckets), not how the model computes (the "
           "order its gradients come in)",
    "5.8": "Handout §5.3: an iteration is a forward pass then the overlapped step; weak scaling keeps the batch per "
           "rank; efficiency is the throughput of K ranks over K times one rank's",
    "5.9": "Handout §5.3: of every n iterations, one synchronises and n-1 run under no_sync(), which communicates "
           "nothing",
    "5.10": "Handout §5.3, best_bucket_plan: the shortest step of all plans whose buckets are runs of consecutive "
            "gradients in the order backward produces them; no single cap need give it",
}

CHECKS = [
    Check("5.1", "the cost of a ring all-reduce, derived from the ring algorithm", weight=2, section="5",
          runs=(timeline_run(RING, "small cases", MISTAKES["5.1"]),),
          compare=compare_values("Handout §5.1: the ring all-reduce; 0 for one rank")),
    Check("5.2", "gradient-ready times of the compute stream", weight=1, section="5",
          runs=(timeline_run(READY, "small cases, all sizes 0", MISTAKES["5.2"]),),
          compare=compare_values("Handout §5.1: gradients one at a time in the given order, time proportional to "
                                 "size; if all sizes are 0, every gradient is ready at 0")),
    Check("5.3", "the two-stream simulator (buckets strictly in index order, with and without overlap)", weight=2,
          section="5", runs=(timeline_run(SIMULATOR, "small cases, the lecture's exercise 4, 40 random cases",
                                          MISTAKES["5.3"]),),
          compare=compare_simulator("Handout §5.1: a bucket is ready when its last gradient is; one bucket at a "
                                    "time, in index order; without overlap no bucket starts before backward ends")),
    Check("5.4", "ddp_step buckets a model and simulates one step", weight=2, section="5",
          runs=(timeline_run(DDP_STEP, "a two-tensor model: default, no overlap, a given order, compute costs, "
                             "all-zero compute costs; an all-empty model", MISTAKES["5.4"]),
                timeline_run(DDP_STEP_ARGUMENTS, "a four-tensor model: float64, bfloat16, float16, another order, "
                             "float compute costs", MISTAKES["5.4"])),
          compare=compare_values("Handout §5.2: DDP's buckets for these gradients, ready times from compute_costs "
                                 "(or sizes) in `order`, one ring all-reduce per bucket")),
    Check("5.5", "experiment: the bucket-size trade-off (bucket_cap_sweep)", weight=1, section="5",
          runs=(timeline_run(EXPERIMENTS["sweep"], "two made-up models"),),
          compare=compare_experiment(RULES["5.5"])),
    Check("5.6", "experiment: a small first bucket (first_bucket_effect)", weight=1, section="5",
          runs=(timeline_run(EXPERIMENTS["first"], "two made-up models"),),
          compare=compare_experiment(RULES["5.6"])),
    Check("5.7", "experiment: layers registered in the wrong order (true_backward_order, registration_order_effect)",
          weight=2, section="5",
          runs=(timeline_run(TRUE_ORDERS, "permutations that are not their own inverse", MISTAKES["5.7"]),
                timeline_run(EXPERIMENTS["order"], "two made-up models, scrambled with a given seed")),
          compare=compare_experiment(RULES["5.7"])),
    Check("5.8", "experiment: weak scaling (iteration_time, weak_scaling)", weight=1, section="5",
          runs=(timeline_run(EXPERIMENTS["scaling"], "two made-up models", MISTAKES["5.8"]),),
          compare=compare_experiment(RULES["5.8"])),
    Check("5.9", "experiment: skipping synchronisation (skip_sync_step_time, skip_sync_speedup)", weight=1,
          section="5", runs=(timeline_run(SKIP_SYNC + EXPERIMENTS["skip"], "the lecture's exercise 11, two made-up models",
                                          MISTAKES["5.9"]),),
          compare=compare_experiment(RULES["5.9"])),
    Check("5.10", "design: the fastest bucket plan (best_bucket_plan)", weight=2, section="5",
          runs=(timeline_run(EXPERIMENTS["plan"], "two made-up models, one with another backward order"),),
          compare=compare_plan),
]
