"""The hidden inputs: every check of the release's ``checks`` package again, on inputs students never see.

``HIDDEN[number]`` lists the extra runs of check ``number`` (the same comparison, other arguments); they
earn the part of the check's points that its public inputs do not (``Check.public_share``). Hidden-only
checks, if any, would be declared here as ``Check`` records too. Like the public inputs, each follows
from a sentence of the handout.

Every check's hidden inputs include some drawn from the grader's secret (``secret.py``, made when the image
is built): seeds, bucket caps, environments and cases that no one knows in advance, so a table of answers
computed elsewhere cannot pass them. Their labels say what kind of input they are, never the values.
"""

from __future__ import annotations

import random

from checks import bonus, part2, part5, part6
from checks.check import ANSWER, NONE, Run, train
from checks.part1 import env, env_run, invalid_run, layout_run
from checks.part2 import bucket_run, case, overlap_case, overlap_run, reverse_order_run
from checks.part3 import EDGES
from checks.part5 import call, simulator_cases, timeline_run
from grader.secret import rng
from grader.secret import seed as secret_seed

# -- Part 1 ------------------------------------------------------------------------------------------------
GOOD = env(6, 12, 2, 4, "node0.cluster", 29400)
VALID = [GOOD, {**GOOD, "RANK": "0", "LOCAL_RANK": "0"}, {**GOOD, "RANK": "11", "LOCAL_RANK": "3"},
         env(0, 1, 0, 1, "127.0.0.1", 1), env(2, 3, 2, 3, "localhost", 65535)]
INVALID = [({k: v for k, v in GOOD.items() if k != name}, name) for name in GOOD] + [
    ({**GOOD, "RANK": "six"}, "RANK"), ({**GOOD, "RANK": "13", "LOCAL_RANK": "1"}, "RANK"),
    ({**GOOD, "WORLD_SIZE": "0"}, "WORLD_SIZE"),
    ({**GOOD, "LOCAL_RANK": "4"}, "LOCAL_RANK"), ({**GOOD, "LOCAL_RANK": "1"}, "LOCAL_RANK"),
    ({**GOOD, "LOCAL_WORLD_SIZE": "5", "LOCAL_RANK": "1"}, "LOCAL_WORLD_SIZE"),  # 5 does not divide 12 (LOCAL_RANK 6 mod 5 = 1)
    ({**GOOD, "LOCAL_WORLD_SIZE": "16", "LOCAL_RANK": "6"}, "LOCAL_WORLD_SIZE"),  # 16 per node in a world of 12
    ({**GOOD, "MASTER_PORT": "65536"}, "MASTER_PORT"),
    ({**GOOD, "MASTER_PORT": "x"}, "MASTER_PORT")] + [({**GOOD, name: ""}, name) for name in reversed(list(GOOD))] + [
    ({**GOOD, "MASTER_PORT": "0"}, "MASTER_PORT"), ({**GOOD, "MASTER_PORT": "65536"}, "MASTER_PORT"),
    ({**GOOD, "RANK": "12", "LOCAL_RANK": "0"}, "RANK")]
LAYOUTS = [[rank, lws] for lws in (1, 2, 3, 4, 8) for rank in range(0, 3 * lws)]
TORCHRUN = [[rank, 12, 4, "10.1.2.3", 29500 + rank] for rank in range(12)] + [[0, 1, 1, "localhost", 80]]


def random_envs(r: random.Random, count: int) -> list[dict]:
    """Valid torchrun environments: nodes of ``local_world`` processes, a rank on one of them."""
    envs = []
    for _ in range(count):
        local_world, nodes = r.choice([1, 2, 3, 4, 6, 8]), r.randint(1, 6)
        rank = r.randrange(local_world * nodes)
        envs.append(env(rank, local_world * nodes, rank % local_world, local_world,
                        r.choice(["10.2.3.4", "node7.cluster", "localhost", "127.0.0.1"]), r.randint(1, 65535)))
    return envs


def random_invalid(r: random.Random, valid: list[dict]) -> list[tuple[dict, str]]:
    """One variable of each valid environment broken so that the error can only name it: missing, empty, or (a
    number) not a number."""
    broken = []
    for good in valid:
        name = r.choice(list(good))
        value = r.choice([None, ""] + (["x1"] if name != "MASTER_ADDR" else []))
        env_ = {k: v for k, v in good.items() if k != name} if value is None else {**good, name: value}
        broken.append((env_, name))
    return broken


R1 = {number: rng(number) for number in ("1.1", "1.2", "1.3")}
VALID_RANDOM = random_envs(R1["1.1"], 12)
INVALID_RANDOM = random_invalid(R1["1.2"], random_envs(R1["1.2"], 12))
LAYOUTS_RANDOM = [[R1["1.3"].randrange(3 * lws), lws] for lws in (R1["1.3"].choice([2, 3, 4, 6, 8]) for _ in range(12))]

# -- Part 2 ------------------------------------------------------------------------------------------------
MIB_F32 = part2.MIB_F32
BASIC = [case([n * MIB_F32 for n in (6, 3, 9, 14, 2)], [10 * 2**20]), case([5, 7, 1, 9, 4, 4, 2], [32]),
         case([100], [4]), case([1, 1, 1, 1], [1000])]
SEALING = [case([4, 4, 4, 4], [16]), case([2, 2, 2, 2, 2, 2], [8]), case([3, 1, 4, 4], [16])]
FIRST_LIMIT = [case([1] * 12, [4, 16]), case([8, 2, 2, 8, 1, 1], [4, 24]), case([5] * 9, [20, 40, 60]),
               case([3] * 5, [0, 100]), case([1, 2, 1, 2, 1, 2, 1, 2], [4, 8], ["float32", "float16"] * 4)]
DTYPES = [case([2, 1, 2, 1, 3], [16], ["float32", "float64", "float32", "float64", "float16"]),
          case([4, 4, 4, 4, 4, 4], [8, 24], ["bfloat16", "float32"] * 3),
          case([2, 3, 5, 7], [20], order=[0, 1, 2, 3]),
          case([3, 6, 3, 6, 3], [12], ["float32", "float16", "float32", "float16", "float32"]),  # sealed in turn
          case([1, 1, 1, 1, 2, 2], [8], devices=["cpu", "meta", "meta", "cpu", "cpu", "meta"]),
          case([1, 0, 3, 0, 2], [4], ["float32", "float64", "float32", "float64", "float32"])]


R2_REVERSE = rng("2.1/reverse")


def secret_cases(number: str, count: int) -> list[dict]:
    """``count`` random cases drawn from the secret (as ``part2.random_cases`` draws them)."""
    return part2.random_cases(seed=secret_seed(number), count=count)


OVERLAP_SIZES = [n * MIB_F32 for n in (6, 3, 9, 14, 2)]
OVERLAP = [overlap_case(OVERLAP_SIZES, [[4, 3], [2, 1, 0]], [4, 3, 2, 1, 0]),
           overlap_case(OVERLAP_SIZES, [[0, 1, 2], [3, 4]], [4, 3, 2, 1, 0]),
           overlap_case([3, 3, 3, 3, 3], [[4], [3], [2], [1], [0]], [1, 4, 3, 2, 0]),
           overlap_case([4, 0, 2], [[2], [1, 0]], [0, 2, 1], ["float16", "float32", "float64"])]
OVERLAP_RANDOM = part2.random_overlap_cases(seed=secret_seed("2.6"), count=200)


# -- Part 5 ------------------------------------------------------------------------------------------------
def timeline_hidden(seed: int) -> dict[str, list[dict]]:
    rng = random.Random(seed)
    ring = [call("ring_allreduce_time", rng.choice([0, 1e3, 4e6, 1e8]), rng.choice([1, 2, 3, 16, 256]),
                 rng.choice([1e-6, 1e-5, 5e-5]), rng.choice([1e9, 1e10, 5e10])) for _ in range(12)]
    ready = []
    for i in range(8):
        n = rng.randint(1, 12)
        sizes = [rng.randint(1, 10_000) if i else 0 for _ in range(n)]  # the first: all sizes 0 (handout §5.1)
        ready.append(call("backward_ready_times", sizes, rng.uniform(1e-3, 1e-1),
                          rng.sample(range(n), n) if rng.random() < 0.5 else None))
    steps = []
    for _ in range(6):
        n = rng.randint(2, 20)
        shapes = [[rng.randint(1, 512), rng.randint(1, 512)] for _ in range(n)]
        extra = {"dtype": rng.choice(["float64", "float16", "bfloat16"])} if rng.random() < 0.6 else {}
        if rng.random() < 0.6:
            extra["order"] = rng.sample(range(n), n)
        if rng.random() < 0.6:
            extra["compute_costs"] = [rng.choice([rng.randint(1, 1000), round(rng.uniform(0.1, 10), 3)])
                                      for _ in range(n)]
        steps.append(call("ddp_step", shapes, rng.uniform(0.01, 0.1), rng.choice([2, 8, 64]), 1e-5, 1e10,
                          [rng.choice([0, 65536, 262144, 1 << 20])], overlap=rng.random() < 0.7, **extra))
    orders = [call("true_backward_order", rng.sample(range(n), n)) for n in (4, 7, 12)] + [
        call("true_backward_order", [(j + 1) % n for j in range(n)]) for n in (3, 6)]  # cycles: not involutions
    return {"ring": ring, "ready": ready, "simulator": simulator_cases(seed=seed + 100, count=12), "ddp_step": steps,
            "orders": orders, **part5.experiment_cases(seed=seed + 200, count=4, name="a random model")}


TIMELINE = timeline_hidden(rng("5").getrandbits(256))  # no seed small enough to search for


def _timeline(number: str, cases: list[dict], label: str) -> Run:
    return timeline_run(cases, label, part5.MISTAKES.get(number))


def _buckets(cases: list[dict], label: str) -> Run:
    return bucket_run(cases, label)


def cap(number: str, low: float, high: float) -> float:
    """A bucket cap in MiB between ``low`` and ``high``, drawn from the secret (for check ``number``)."""
    return round(rng(number + "/cap").uniform(low, high), 5)


def caps(number: str, low: float, high: float) -> list[float]:
    """Two increasing caps (the first bucket's, then the rest's) between ``low`` and ``high``."""
    r = rng(number + "/caps")
    first = round(r.uniform(low, (low + high) / 2), 5)
    return [first, round(r.uniform(first * 1.5, high), 5)]


def seed(number: str) -> int:
    """The weights' and the data's seed of check ``number``'s hidden training run, drawn from the secret."""
    return rng(number + "/seed").randrange(1, 2**31)


def hidden_train(number: str, impl: str, label: str, **kwargs) -> tuple[Run]:
    return (train(impl, label + ", random weights and data", seed=seed(number), **kwargs),)


MLP = "6 x Linear(512, 512)"


# -- Differential runs: random configurations of the space the handout allows -------------------------------
# Each is run on torch's DDP and on the submission, and compared as the check compares its own inputs (every value
# bit for bit, the first backward's all-reduces, the construction's broadcasts). The label names the features a
# configuration combines (never its values): a failure tells the student which kind of input differed, and the
# staff-only entry has the whole configuration.

# The largest gradient of each model, in MiB: bucket caps are drawn around it (test_grader_units checks the table).
LARGEST_MIB = {"tied": 0.0078, "mixed": 0.0176, "frozen": 0.0156, "twobranch": 0.0156, "many_small": 0.0039,
               "edges": 0.0039, "convbn": 0.0044, "mlp": 1.0}
MODEL_WORDS = {"mlp": MLP, "convbn": "Conv + BatchNorm (buffers)", "tied": "the tied model",
               "frozen": "an MLP with frozen layers", "mixed": "the mixed-dtype model",
               "twobranch": "two branches computed in a different order on each rank",
               "many_small": "48 x Linear(32, 32)", "edges": EDGES}


def random_limits(r: random.Random, model: str) -> tuple[dict, str]:
    """Bucket limits around the model's largest gradient: one bucket per tensor, one cap, a first and a later
    limit, or torch's defaults."""
    largest, kind = LARGEST_MIB[model], r.choice(["zero", "cap", "caps", "default"])
    if kind == "zero":
        return {"bucket_cap_mb": 0}, "one bucket per tensor"
    if kind == "cap":
        return {"bucket_cap_mb": round(largest * 2 ** r.uniform(-1, 3), 6)}, "a random bucket cap"
    if kind == "caps":
        first, later = sorted(round(largest * 2 ** r.uniform(-1.5, 3), 6) for _ in range(2))
        return {"bucket_cap_mb_list": [first, later]}, "random first and later limits"
    return {}, "torch's default limits"


RANDOM_LABEL = "random configuration"  # how their labels start: a failing one's is shown (features, not values)
SAME_READY_ORDER = ("mlp", "many_small", "mixed", "tied", "frozen")  # gradients ready in reverse parameter order
FLAGS = ("set_to_none", "hook", "late", "subgroups", "seed_per_rank", "accumulate", "no_grad_forward", "eval_mode",
         "buffers")
# Features that random_config never combines (no hook on 3 ranks as process groups: see there): the second is
# drawn apart from the first where the configurations allow, so that both are exercised in every grading.
APART = {"subgroups": "hook"}
# Learning rates that keep a model's training finite for 3 steps of 3 micro-batches under fp16_compress_hook:
# the edges model's unscaled weights grow its gradients ~12x a step at lr 0.17, past fp16's range by step 3
# (torch's run and yours then differ only in the bits of their NaNs; 3 of 340 such runs did, at lr > 0.15).
MAX_LR = {"edges": 0.05}


def random_config(r: random.Random, impl: str, model: str, on: set[str]) -> tuple[dict, str]:
    """One configuration of ``model`` for ``impl`` ("reducer": your Reducer through the driver, which neither
    broadcasts nor knows no_sync; "minddp": your DDP) with the features ``on``: the kwargs of ``train``, and the
    words naming its features."""
    limits, words = random_limits(r, model)
    kwargs: dict = {"model": model, "steps": r.randint(2, 3), "ddp_kwargs": limits, "seed": r.randrange(1, 2**31),
                    "lr": round(r.uniform(0.01, MAX_LR.get(model, 0.2)), 4)}
    features = [MODEL_WORDS[model], words]

    def feature(flag: str, text: str, **more) -> None:
        if flag in on:
            kwargs.update(more)
            features.append(text)

    feature("set_to_none", ".grad set to None before each step", set_to_none=True)
    # A recording hook's buckets are compared from iteration 2, after torch rebuilds its buckets in the observed
    # ready order: only where that order is the reverse one. The hooks reduce over the world (their state is
    # None), whose sum is exact only on 2 ranks: none on 3 ranks as process groups.
    hook = r.choice(["fp16", "record"] if impl == "reducer" and model in SAME_READY_ORDER else ["fp16"])
    if impl == "reducer" or "subgroups" not in on:  # the driver has no process groups
        feature("hook", {"fp16": "fp16_compress_hook", "record": "a recording comm hook"}[hook], hook=hook)
    if impl == "reducer":
        feature("late", "works completing out of order", backend="late")
        return kwargs, ", ".join(features)
    groups = r.choice([[[0], [1, 2]], [[0, 1], [2]], [[0, 2], [1]]])
    feature("subgroups", f"3 ranks as process groups {' and '.join(str(set(g)) for g in groups)}", world_size=3,
            subgroups=groups)
    feature("seed_per_rank", "a different seed on each rank", seed_per_rank=True)
    accumulate, how = r.randint(2, 3), r.choice(["forward", "nested"])
    feature("accumulate", f"{accumulate} micro-batches per step" + (", nested no_sync()" if how == "nested" else ""),
            accumulate=accumulate, no_sync=how)
    feature("no_grad_forward", "forwards under torch.no_grad() between", no_grad_forward=True)
    feature("eval_mode", "every other step after ddp.eval()", eval_mode=True)
    if model == "convbn":
        if r.random() < 0.3:
            feature("buffers", "broadcast_buffers=False", ddp_kwargs={**limits, "broadcast_buffers": False})
        else:
            feature("buffers", "different buffers on each rank", buffers_per_rank=True)
    return kwargs, ", ".join(features)


def features_on(r: random.Random, count: int) -> list[set[str]]:
    """The FLAGS of each of ``count`` configurations: each flag in about half of them (never all or none), a
    flag of APART first where the flag it excludes is off."""
    on: list[set[str]] = [set() for _ in range(count)]
    for flag in FLAGS:
        wanted = (count + r.randint(0, 1)) // 2
        free = [i for i in range(count) if APART.get(flag) not in on[i]]
        taken = [i for i in range(count) if i not in free]
        for i in r.sample(free, min(wanted, len(free))) + r.sample(taken, max(0, wanted - len(free))):
            on[i].add(flag)
    return on


def random_runs(number: str, impl: str, count: int, secret: str | None = None) -> tuple[Run, ...]:
    """``count`` random configurations for check ``number``, drawn from the secret (the grader's, or ``secret``):
    each a different model, and each feature in about half of them (every feature exercised, alone and with
    others)."""
    r = rng(number + "/random", secret)
    models = [m for m in LARGEST_MIB if m != "mlp" and (m != "convbn" or impl == "minddp")]  # the driver broadcasts no buffer
    models = r.sample(models, count - 1) + ["mlp"]  # the large model once: it costs the most
    runs = []
    for i, (model, flags) in enumerate(zip(models, features_on(r, count), strict=True)):
        kwargs, words = random_config(r, impl, model, flags)
        runs.append(train(impl, f"{RANDOM_LABEL} {i + 1}: {words}", **kwargs))
    return tuple(runs)


USE_B_WORDS = {"none": "branch b unused on every rank", "rank0": "branch b used on rank 0 only",
               "all": "branch b used on every rank", "no_sync": "branch b used in the micro-batches under no_sync() only"}


def random_unused_runs(number: str, count: int, secret: str | None = None) -> tuple[Run, ...]:
    """``count`` random configurations of Bonus A (``find_unused_parameters=True``) on the edges model: which
    ranks use branch b, drawn, with the features of ``random_config`` (each in about half of them)."""
    r = rng(number + "/random", secret)
    uses = r.sample(list(USE_B_WORDS), count) if count <= len(USE_B_WORDS) else [r.choice(list(USE_B_WORDS))
                                                                             for _ in range(count)]
    runs = []
    for i, (use_b, on) in enumerate(zip(uses, features_on(r, count), strict=True)):
        kwargs, words = random_config(r, "minddp", "edges", on)
        kwargs["ddp_kwargs"] = {**kwargs["ddp_kwargs"], "find_unused_parameters": True}
        if use_b == "no_sync" and "accumulate" not in kwargs:
            kwargs["accumulate"] = 2
            words += ", 2 micro-batches per step"
        runs.append(train("minddp", f"{RANDOM_LABEL} {i + 1}: {words}, {USE_B_WORDS[use_b]}", use_b=use_b, **kwargs))
    return tuple(runs)


HIDDEN: dict[str, tuple[Run, ...]] = {
    "1.1": (env_run(VALID + VALID_RANDOM, "other valid environments"),),
    "1.2": (invalid_run(INVALID + INVALID_RANDOM, VALID + VALID_RANDOM, "other invalid environments (and valid ones)"),),
    "1.3": (layout_run(LAYOUTS + LAYOUTS_RANDOM, TORCHRUN, "other layouts and torchrun environments"),),
    "2.1": (reverse_order_run([3, 7, 12] + [R2_REVERSE.randint(13, 500) for _ in range(3)],
                              "reverse_order of other numbers of parameters"),
            _buckets(BASIC + secret_cases("2.1", 40), "other small cases, and random ones")),
    "2.2": (_buckets(SEALING + secret_cases("2.2", 40), "other tensors that reach the limit exactly, and random cases"),),
    "2.3": (_buckets(FIRST_LIMIT + secret_cases("2.3", 40), "other limits, and random cases"),),
    "2.4": (_buckets(DTYPES + secret_cases("2.4", 40), "other dtypes and orders, and random cases"),),
    "2.5": (_buckets(secret_cases("2.5", 1500), "1,500 other random cases"),),
    "2.6": (overlap_run(OVERLAP + OVERLAP_RANDOM, "other small cases, and 200 random ones"),),
    "3.1": (*hidden_train("3.1", "reducer", f"{MLP}, a random bucket cap, lr 0.1", model="mlp", steps=4, lr=0.1,
                          ddp_kwargs={"bucket_cap_mb": cap("3.1", 0.3, 1.2)}),
            *hidden_train("3.1", "reducer", "the mixed-dtype model, a random bucket cap, .grad set to None before each "
                          "step", model="mixed", steps=3, set_to_none=True,
                          ddp_kwargs={"bucket_cap_mb": cap("3.1/none", 0.005, 0.03)})),
    "3.2": hidden_train("3.2", "reducer", "48 x Linear(32, 32), bucket_cap_mb=0, works completing out of order",
                        model="many_small", steps=3, ddp_kwargs={"bucket_cap_mb": 0}, backend="late"),
    "3.3": (*hidden_train("3.3", "reducer", "the mixed-dtype model, bucket_cap_mb=100", model="mixed", steps=3,
                          ddp_kwargs={"bucket_cap_mb": 100}),
            *hidden_train("3.3", "reducer", f"{EDGES}, a random bucket cap", model="edges", steps=3,
                          ddp_kwargs={"bucket_cap_mb": cap("3.3/edges", 0.001, 0.006)}),
            *random_runs("3.3", "reducer", 4)),
    "3.4": hidden_train("3.4", "reducer", "the tied model, one bucket per tensor", model="tied", steps=4,
                        ddp_kwargs={"bucket_cap_mb": 0}),
    "3.5": hidden_train("3.5", "reducer", "the mixed-dtype model, random first and later limits", model="mixed",
                        steps=3, ddp_kwargs={"bucket_cap_mb_list": caps("3.5", 0.0005, 0.006)}),
    "3.6": hidden_train("3.6", "reducer", "the mixed-dtype model, random first and later limits", model="mixed",
                        steps=3, ddp_kwargs={"bucket_cap_mb_list": caps("3.6", 0.002, 0.012)}),
    "3.7": hidden_train("3.7", "reducer", "48 x Linear(32, 32), random first and later limits", model="many_small",
                        steps=3, ddp_kwargs={"bucket_cap_mb_list": caps("3.7", 0.008, 0.035)}),
    "3.8": hidden_train("3.8", "reducer", "48 x Linear(32, 32), a random bucket cap, rank 1 holding back",
                        model="many_small", steps=2, ddp_kwargs={"bucket_cap_mb": cap("3.8", 0.006, 0.02)},
                        hold_back=True),
    "3.9": hidden_train("3.9", "reducer", "two branches, one bucket per tensor", model="twobranch", steps=3,
                        ddp_kwargs={"bucket_cap_mb": 0}),
    "3.10": (*hidden_train("3.10", "reducer", "48 x Linear(32, 32) on 3 ranks, random first and later limits",
                           world_size=3, model="many_small", steps=3,
                           ddp_kwargs={"bucket_cap_mb_list": caps("3.10", 0.004, 0.025)}, tensors=True),
             *hidden_train("3.10", "reducer", "the tied model, 3 ranks as process groups {0, 2} and {1}, a random "
                           "bucket cap", world_size=3, model="tied", steps=3, subgroups=[[0, 2], [1]],
                           ddp_kwargs={"bucket_cap_mb": cap("3.10/groups", 0.002, 0.01)})),
    "3.11": hidden_train("3.11", "reducer", "48 x Linear(32, 32), random first and later limits, a recording hook",
                         model="many_small", steps=3, hook="record",
                         ddp_kwargs={"bucket_cap_mb_list": caps("3.11", 0.004, 0.025)}),
    "3.12": hidden_train("3.12", "reducer", "48 x Linear(32, 32), a random bucket cap, fp16_compress_hook",
                         model="many_small", steps=3, hook="fp16", ddp_kwargs={"bucket_cap_mb": cap("3.12", 0.006, 0.02)}),
    "4.1": (*hidden_train("4.1", "minddp", f"{MLP}, a different seed on each rank, a random bucket cap", model="mlp",
                          steps=2, seed_per_rank=True, ddp_kwargs={"bucket_cap_mb": cap("4.1", 0.5, 2.0)}),
            *hidden_train("4.1", "minddp", "an MLP with two frozen layers, a different seed on each rank, a random "
                          "bucket cap", model="frozen", steps=2, seed_per_rank=True,
                          ddp_kwargs={"bucket_cap_mb": cap("4.1/frozen", 0.005, 0.05)}),
            *hidden_train("4.1", "minddp", f"{EDGES}, a different seed on each rank, one bucket per tensor",
                          model="edges", steps=2, seed_per_rank=True, ddp_kwargs={"bucket_cap_mb": 0}),
            Run("broadcast_values", {"src": 1, "subgroups": [[0, 2]]}, world_size=3, ref=NONE,
                label="broadcast_tensors(..., src=1) on another process group"),
            Run("broadcast_values", {"src": 2}, world_size=3, ref=NONE, label="broadcast_tensors(..., src=another rank) on 3 ranks"),
            *random_runs("4.1", "minddp", 4)),
    "4.2": hidden_train("4.2", "minddp", "Conv + BatchNorm, a random bucket cap, steps 2 and 4 after ddp.eval()",
                        model="convbn", steps=4, eval_mode=True, ddp_kwargs={"bucket_cap_mb": cap("4.2", 0.005, 0.02)}),
    "4.3": hidden_train("4.3", "minddp", "the tied model, 3 micro-batches per step, a random bucket cap", model="tied",
                        steps=2, accumulate=3, ddp_kwargs={"bucket_cap_mb": cap("4.3", 0.002, 0.01)}),
    "4.4": hidden_train("4.4", "minddp", f"{MLP}, no_sync around backward only, a random bucket cap", model="mlp",
                        steps=2, accumulate=3, no_sync="backward", ddp_kwargs={"bucket_cap_mb": cap("4.4", 0.5, 2.0)}),
    "4.5": hidden_train("4.5", "minddp", "an MLP with two frozen layers, one bucket per tensor", model="frozen",
                        steps=3, ddp_kwargs={"bucket_cap_mb": 0}),
    "4.6": hidden_train("4.6", "minddp", f"{MLP}, 3 micro-batches, no no_sync, random first and later limits",
                        model="mlp", steps=2, accumulate=3, no_sync="never",
                        ddp_kwargs={"bucket_cap_mb_list": caps("4.6", 0.6, 3.0)}),
    "4.7": hidden_train("4.7", "minddp", "the tied model, one bucket per tensor", model="tied", steps=3,
                        ddp_kwargs={"bucket_cap_mb": 0}),
    "4.8": hidden_train("4.8", "minddp", "branch b unused, random first and later limits", model="branchy", steps=2,
                        use_b="none", ddp_kwargs={"bucket_cap_mb_list": caps("4.8", 0.0003, 0.003)}, catch=True),
    "5.1": (_timeline("5.1", TIMELINE["ring"], "12 random cases"),),
    "5.2": (_timeline("5.2", TIMELINE["ready"], "8 random cases"),),
    "5.3": (_timeline("5.3", TIMELINE["simulator"], "12 random cases"),),
    "5.4": (_timeline("5.4", TIMELINE["ddp_step"], "6 random models (dtypes, orders, compute costs)"),),
    "5.5": (_timeline("5.5", TIMELINE["sweep"], "4 random models, world sizes, α, β and caps"),),
    "5.6": (_timeline("5.6", TIMELINE["first"], "4 random models, world sizes, α, β and limits"),),
    "5.7": (_timeline("5.7", TIMELINE["orders"], "random permutations"),
            _timeline("5.7", TIMELINE["order"], "4 random models, world sizes, α, β, caps and seeds")),
    "5.8": (_timeline("5.8", TIMELINE["scaling"], "4 random models, world sizes, α, β, caps and forward times"),),
    "5.9": (_timeline("5.9", TIMELINE["skip"], "4 random models, world sizes, α, β, caps and n"),),
    "5.10": (_timeline("5.10", TIMELINE["plan"], "4 random models, world sizes, α, β and backward orders"),),
    **{check.number: (Run("answers", {"names": part6.NAMES}, ref=ANSWER, label="your answers.py"),)
       for check in part6.ANSWER_CHECKS},
    "A.1": hidden_train("A.1", "minddp", "branch b unused everywhere, one bucket per tensor", model="branchy",
                        steps=3, use_b="none", ddp_kwargs={"bucket_cap_mb": 0, "find_unused_parameters": True}),
    "A.2": (*hidden_train("A.2", "minddp", "branch b used on rank 0 only, one bucket per tensor", model="branchy",
                          steps=3, use_b="rank0", ddp_kwargs={"bucket_cap_mb": 0, "find_unused_parameters": True}),
            *hidden_train("A.2", "minddp", f"{EDGES}, branch b used on rank 0 only, 2 micro-batches per step, .grad "
                          "set to None before each step, a random bucket cap", model="edges", steps=3, use_b="rank0",
                          accumulate=2, set_to_none=True,
                          ddp_kwargs={"bucket_cap_mb": cap("A.2", 0.001, 0.006), "find_unused_parameters": True}),
            *hidden_train("A.2", "minddp", f"{EDGES}, branch b used by every rank in the micro-batches under no_sync() "
                          "only (3 per step), a random bucket cap", model="edges", steps=3, use_b="no_sync",
                          accumulate=3, ddp_kwargs={"bucket_cap_mb": cap("A.2/no_sync", 0.001, 0.006),
                                                    "find_unused_parameters": True}),
            *random_unused_runs("A.2", 4)),
    "A.3": (*hidden_train("A.3", "minddp", "branch b used on rank 0 only", model="branchy", steps=2, use_b="rank0",
                          ddp_kwargs={"find_unused_parameters": True}),
            Run("usage_counts", {"steps": 2}, world_size=2, ref=NONE, label="2 ranks, branch b used by 1, then 2"),
            *hidden_train("A.3", "minddp", "branch b used on rank 0 only, 3 ranks as process groups {0, 1} and {2}",
                          world_size=3, model="branchy", steps=2, use_b="rank0", subgroups=[[0, 1], [2]],
                          ddp_kwargs={"find_unused_parameters": True})),
    "B.1": (*hidden_train("B.1", "minddp", "two branches, random first and later limits", model="twobranch", steps=3,
                          hook="record", ddp_kwargs={"bucket_cap_mb_list": caps("B.1", 0.0015, 0.025),
                                                     "rebuild_buckets": True}),
            *hidden_train("B.1", "minddp", "an MLP with two frozen layers, random first and later limits", model="frozen",
                          steps=3, hook="record", ddp_kwargs={"bucket_cap_mb_list": caps("B.1/frozen", 0.005, 0.03),
                                                              "rebuild_buckets": True})),
    "B.2": (timeline_run(bonus.group_cases(seed=rng("B.2").getrandbits(256), count=12), "12 random groups",
                         bonus.GROUP_MISTAKES),),
    "B.3": (timeline_run(bonus.rebuild_effect_cases(seed=rng("B.3").getrandbits(256), count=4, name="a random model"),
                         "4 random models with two branches, 2 to 4 ranks, α, β and caps"),),
}
