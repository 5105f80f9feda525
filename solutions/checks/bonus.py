"""Bonus A (unused parameters) and B (bucket rebuild), handout §4: extra credit, graded with your own files."""

from __future__ import annotations

import random

from checks import part5
from checks.check import ANSWER, NONE, Check, Outcome, Run, fail, train
from checks.compare import outcome_text, same_training, side_by_side
from checks.part2 import random_buckets
from checks.part3 import EDGES, SUBGROUPS, bucket_records, groups_text, launch_problem, on_process_groups
from checks.part5 import call, companion, made_up_model, timeline_run

UNUSED = {"find_unused_parameters": True}


def unused_everywhere(o: Outcome) -> None:
    if o.run.fn == "used_parameters":
        return used_parameters(o)
    for rank, (r, g) in enumerate(zip(o.ref, o.got, strict=True)):
        for name, none in r["grad_is_none"].items():
            if g["grad_is_none"].get(name) != none:
                fail(f"rank {rank}, {name}: grad is {'None' if g['grad_is_none'].get(name) else 'a tensor'}; torch "
                     f"leaves it {'None' if none else 'a tensor'} (handout §4, bonus A)")
    no_allreduce_in_forward(o)
    unused_buckets_in_turn(o)
    same_training(o, "4 (bonus A)")


def no_allreduce_in_forward(o: Outcome) -> None:
    """(A1) The unused parameters count as ready during backward: no forward launches an all-reduce."""
    for rank, (r, g) in enumerate(zip(o.ref, o.got, strict=True)):
        for step, (rs, gs) in enumerate(zip(r["steps"], g["steps"], strict=True)):
            mine, theirs = ([c for c in x["forward"][-1] if c["op"] == "all_reduce"] for x in (gs, rs))
            if len(mine) > len(theirs):
                fail(f"rank {rank}, step {step + 1}: your forward launched {len(mine)} all-reduce(s), torch DDP's "
                     f"{len(theirs)}: buckets that hold only parameters the outputs do not use were launched in the "
                     "forward, as soon as prepare_for_backward counted them ready. Torch's forward launches no "
                     "all-reduce: its buckets, these too, go during backward (handout §4, bonus A, A1: `make probe` "
                     "shows at which gradient each goes).")


def unused_buckets_in_turn(o: Outcome) -> None:
    """(A1) The buckets that hold a rank's unused parameters go when torch's do. Seen by the order of events
    (``ReadyProbe``), counting the buckets' all-reduces only (when the usage bitmap goes is yours)."""
    for rank, (r, g) in enumerate(zip(o.ref, o.got, strict=True)):
        names = r["trainable"]
        for step, entry in enumerate(g["steps"]):
            if not entry.get("grad_events"):
                continue
            backward = entry["backward"][-1]
            if not backward:  # nothing recorded (a group the recorder does not watch): nothing to compare
                continue
            computed = {name for name, _ in entry["grad_events"]}
            unused = [name for name in names if name not in computed]
            events = [[name, _buckets_launched(backward, count)] for name, count in entry["grad_events"]]
            at_end = _buckets_launched(backward, entry["launched_at_end"]) if entry["launched_at_end"] >= 0 else -1
            problem = launch_problem(events, at_end, r["driver_buckets"], names, ready_first=unused)
            if problem and unused:
                fail(f"rank {rank}, step {step + 1}: {problem} On this rank the outputs did not use "
                     f"{', '.join(unused)}, and yet torch's buckets that hold them went in their turn during "
                     "backward, not at its end (handout §4, bonus A, A1: `make probe` shows at which gradient each "
                     "all-reduce goes).")


def _buckets_launched(backward: list[dict], count: int) -> int:
    """Of a backward's first ``count`` collectives, the buckets' all-reduces (not the usage bitmap's: Int)."""
    return sum(1 for c in backward[:max(count, 0)] if c["dtypes"] != ["Int"])


USED_RULE = ("find_used_parameters returns the id() of every parameter the outputs depend on through autograd, "
             "whatever holds the outputs (lists, tuples, dicts, nested), and of an output that is itself a parameter "
             "(a leaf that requires a gradient); not of a frozen one, nor through a detached tensor (handout §4, "
             "bonus A)")


def used_parameters(o: Outcome) -> None:
    """find_used_parameters on outputs of several shapes: the reference's answer, case by case."""
    for case, expected in o.ref[0].items():
        mine = o.got[0].get(case, {"error": "KeyError", "message": "no answer"})
        if mine != expected:
            itself = ("value" in expected and "prior" in expected["value"] and "value" in mine
                      and "prior" not in mine["value"] and "parameter itself" in case)
            fail(f"find_used_parameters(outputs), outputs {case}:\n  yours (by name):    {outcome_text(mine)}\n"
                 f"  expected (by name): {outcome_text(expected)}\n"
                 + ("An output that is itself a parameter counts as used: it has no grad_fn to walk from, but it is "
                    "a leaf that requires a gradient, and the loss reaches it. " if itself else "") + USED_RULE)


def usage_counts(o: Outcome) -> None:
    """At step s the ranks r <= s use branch b (``scenarios.usage_counts``): every parameter's count is the
    number of ranks that used it."""
    world = o.run.world_size
    for rank, g in enumerate(o.got):
        for step, counts in enumerate(g["counts"]):
            expected = [min(step + 1, world) if name.startswith("b.") else world for name in g["names"]]
            if counts != expected:
                fail(f"rank {rank}, step {step + 1} ({min(step + 1, world)} of {world} ranks use branch b): "
                     f"all_reduce_usage returned the usage counts {counts}, expected {expected} for "
                     f"{g['names']}: the SUM over ranks of the usage bitmaps, i.e. how many ranks used each "
                     "parameter (handout §4, bonus A)")
        if not all(g["local_used_kept"]):
            fail(f"rank {rank}: all_reduce_usage changed self.local_used (reduced it in place?): it returns the sum "
                 "of all ranks' bitmaps and leaves this rank's own bitmap unchanged (reduce a copy; handout §4, "
                 "bonus A)")
        if len(g["counts"]) != o.run.kwargs["steps"]:
            fail(f"rank {rank}: all_reduce_usage was called {len(g['counts'])} times in {o.run.kwargs['steps']} "
                 "backward passes; expected once per backward (handout §4, bonus A)")


def usage_bitmap(o: Outcome) -> None:
    if o.run.fn == "usage_counts":
        return usage_counts(o)
    if o.run.kwargs.get("subgroups"):  # the bitmap too goes to the DDP's process group
        return on_process_groups(o, "4 (bonus A)")
    for rank, g in enumerate(o.got):
        for step, entry in enumerate(g["steps"]):
            usage = [c for c in entry["backward"][-1] if c["dtypes"] == ["Int"]]
            if len(usage) != 1:
                fail(f"rank {rank}, step {step + 1}: expected exactly one int32 all-reduce (the usage bitmap) per "
                     f"backward, saw {len(usage)} (handout §4, bonus A)")
    same_training(o, "4 (bonus A)")


def rebuilt_buckets(o: Outcome) -> None:
    """Every rank rebuilds with its group's rank 0's order (as torch's do), then torch's buckets exactly."""
    def layout(record: dict, step: int) -> list:  # (index, parameters) of each GradBucket, in launch order
        return [b[:2] for b in record["steps"][step]["buckets"]]

    groups = o.run.kwargs.get("subgroups") or [list(range(len(o.got)))]
    for step in range(1, len(o.ref[0]["steps"])):
        for first, *others in groups:
            for rank in others:
                mine, rank0 = layout(o.got[rank], step), layout(o.got[first], step)
                if mine != rank0 and layout(o.ref[rank], step) == layout(o.ref[first], step):
                    fail(f"iteration {step + 1}: rank {rank}'s GradBuckets (index, parameters) differ from rank "
                         f"{first}'s, its process group's rank 0. The ranks observed different ready orders; every "
                         "rank must end with the same buckets: torch's ranks all rebuild with the order one of them "
                         "observed (which one, the probe shows; handout §4, bonus B, B2):\n" + side_by_side(mine, rank0, f"rank {rank}", f"rank {first}"))
    bucket_records(o, "4 (bonus B)")
    rebuild_forward(o)
    if o.run.kwargs.get("subgroups"):
        on_process_groups(o, "4 (bonus B)")


def rebuild_forward(o: Outcome) -> None:
    """The rebuild's collectives come where torch's come: in the same forward, at the same place in it."""
    def forwards(entry: dict) -> list[tuple]:
        """((micro-step, under torch.no_grad()?), its collectives) of each forward of a step, in order."""
        evals = entry.get("eval_forward") or []
        return [pair for micro, collectives in enumerate(entry["forward"])
                for pair in ([((micro, True), evals[micro])] if micro < len(evals) else []) + [((micro, False), collectives)]]

    def extras(record: dict, steady: dict) -> list[tuple]:
        """(step, (micro-step, no_grad?), rebuild first?) of each forward launching more collectives than the same
        forward of torch's last iteration (where nothing is rebuilt any more)."""
        found = []
        for step, entry in enumerate(record["steps"]):
            for at, collectives in forwards(entry):
                extra = len(collectives) - len(steady[at])
                if extra > 0:
                    found.append((step, at, collectives[extra:] == steady[at]))
        return found

    def where(found: tuple) -> str:
        step, (micro, no_grad) = found[:2]
        accumulate = o.run.kwargs.get("accumulate", 1)
        return (f"iteration {step + 1}'s " + ("forward under torch.no_grad() before " if no_grad else "")
                + f"forward {micro + 1} of {accumulate} "
                + ("(under no_sync())" if micro < accumulate - 1 else "(synchronised)"))

    for rank in range(len(o.got)):
        steady = dict(forwards(o.ref[rank]["steps"][-1]))
        mine, theirs = extras(o.got[rank], steady), extras(o.ref[rank], steady)
        if not theirs:
            continue
        if [at[:2] for at in mine] != [at[:2] for at in theirs]:
            fail(f"rank {rank}: torch rebuilds its buckets (its broadcasts of the order) once, in "
                 f"{where(theirs[0])}; "
                 + ("yours launched no collective beyond torch's in any forward: the ranks can agree on one "
                    "observed order only through a collective" if not mine else
                    "yours launched more collectives than torch's in " + ", ".join(where(at) for at in mine))
                 + " (handout §4, bonus B, B1, B2: the probe shows where torch rebuilds in a sequence like this "
                 "run's).")
        if not mine[0][2]:
            fail(f"rank {rank}, {where(mine[0])}: the rebuild's broadcast came after the buffers' broadcast; torch "
                 "rebuilds first, then broadcasts the buffers (handout §4, bonus B).")


# -- Bonus B's model: a group whose ranks produce their gradients in different orders (timeline.py) ------------

def branch_orders(model: dict, rng: random.Random, ranks: int) -> list[list[int]]:
    """Each rank's backward order for a made-up model read as a trunk, two branches a and b, and a head (layers
    in that registration order): the head first, then the branches, a then b on some ranks and b then a on the
    others (rank 0 and rank 1 differ), then the trunk; reverse registration order within each."""
    layers = [[2 * i, 2 * i + 1] for i in range(len(model["shapes"]) // 2)]
    trunk, head = rng.randint(1, len(layers) // 3), rng.randint(1, len(layers) // 4)
    middle = layers[trunk:len(layers) - head]
    split = rng.randint(1, len(middle) - 1)

    def backward(groups: list[list[int]]) -> list[int]:
        return [i for group in reversed(groups) for i in reversed(group)]

    a, b = backward(middle[:split]), backward(middle[split:])
    a_first = [True, False] + [rng.random() < 0.5 for _ in range(ranks - 2)]
    return [backward(layers[len(layers) - head:]) + (a + b if first else b + a) + backward(layers[:trunk])
            for first in a_first]


def group_cases(seed: int, count: int) -> list[dict]:
    """group_step and group_order on random ranks' ready times (some tied), buckets and durations."""
    rng = random.Random(seed)
    cases = []
    for _ in range(count):
        n, ranks = rng.randint(1, 10), rng.randint(1, 4)
        ready = [[round(rng.uniform(0, 10), rng.choice([0, 3])) for _ in range(n)] for _ in range(ranks)]
        buckets = random_buckets(rng, n)
        cases.append(call("group_step", ready, buckets, [round(rng.uniform(0.1, 3), 3) for _ in buckets],
                          rng.random() < 0.7))
        cases.append(call("group_order", ready))
    return cases


def rebuild_effect_cases(seed: int, count: int, name: str) -> list[dict]:
    """rebuild_order_effect on made-up models with branches, 2 to 4 ranks, small caps; first, your ddp_step on
    each model (what the experiment builds on)."""
    rng = random.Random(seed)
    companions, cases = [], []
    for i in range(count):
        model = made_up_model(rng.randrange(2**31), name.format(i=i), layers=rng.randint(8, 14))
        orders = branch_orders(model, rng, rng.randint(2, 4))
        alpha, beta = rng.choice([1e-6, 1e-5, 5e-5]), rng.choice([1e9, 1e10, 5e10])
        limits = [int(part5.model_bytes(model) * rng.choice([0.03, 0.06, 0.1, 0.2]))]
        companions.append(companion(model, len(orders), alpha, beta, limits, order=orders[0]))
        cases.append(call("rebuild_order_effect", model=model, rank_orders=orders, alpha=alpha, beta=beta,
                          bucket_size_limits=limits))
    return companions + cases


def _as_one_rank(fn: str, combine):
    """A mistake of ``fn`` in how the group's ready times come from the ranks': the reference given ONE rank whose
    ready times are the ranks' combined by ``combine`` (for a gradient, a list of the ranks' times -> one time)."""
    def make(c: dict) -> dict:
        if c["fn"] != fn:
            return c
        ready, *rest = c["args"]
        return {**c, "args": [[[combine(times) for times in zip(*ready, strict=True)]], *rest]}
    return make


COMBINED = {"are rank 0's": lambda times: times[0], "are the FIRST rank's to have each gradient": min,
            "are the ranks' mean": lambda times: sum(times) / len(times)}
GROUP_MISTAKES = {f"{fn}'s ready times for the group {wrong}": _as_one_rank(fn, combine)
                  for fn in ("group_step", "group_order") for wrong, combine in COMBINED.items()}
# The lecture's exercise 4 (checks/part5.py) on one rank, then on two: rank 1 has p4 last.
GROUP = [call("simulate_step", part5.EX4_READY_MS, [[4, 3], [2, 1, 0]], part5.EX4_COMM_MS),
         call("group_step", [part5.EX4_READY_MS], [[4, 3], [2, 1, 0]], part5.EX4_COMM_MS),
         call("group_step", [part5.EX4_READY_MS, [1.0, 2.0, 3.0, 4.0, 5.0]], [[4, 3], [2, 1, 0]],
              part5.EX4_COMM_MS),
         call("group_step", [part5.EX4_READY_MS, [1.0, 2.0, 3.0, 4.0, 5.0]], [[4, 3], [2, 1, 0]],
              part5.EX4_COMM_MS, False),
         call("group_order", [[5.0, 4.0, 3.0, 2.0, 1.0], [1.0, 2.0, 3.0, 4.0, 5.0], [3.0, 3.0, 3.0, 3.0, 3.0]]),
         call("group_step", [[], []], [], []), call("group_order", [[], [], []])] + group_cases(seed=7, count=12)
REBUILD_EFFECT = rebuild_effect_cases(seed=2026, count=2, name="made-up model {i} of checks/bonus.py")


def builds_on_part5(rule: str):
    """``part5.compare_values``, after saying so when the Part 5 function a case of this run builds on (the
    ``simulate_step`` and ``ddp_step`` cases) differs: fix that first."""
    values = part5.compare_values(rule)

    def compare(o: Outcome) -> None:
        part5.companions_agree(o, "Bonus B's model and experiment")
        values(o)
    return compare


REBUILD = {"bucket_cap_mb_list": [0.001, 0.01], "rebuild_buckets": True}

CHECKS = [
    Check("A.1", "a parameter unused on every rank keeps grad=None, nothing hangs", weight=2, section="4",
          runs=(train("minddp", "branch b unused on every rank", model="branchy", steps=3, use_b="none",
                      ddp_kwargs=UNUSED),),
          compare=unused_everywhere),
    Check("A.2", "a parameter used on rank 0 only ends as (g0 + 0) / 2 on both ranks", weight=2, section="4",
          runs=(Run("used_parameters", {}, ref=ANSWER, label="find_used_parameters on outputs of several shapes"),
                train("minddp", "branch b used on rank 0 only", model="branchy", steps=3, use_b="rank0",
                      ddp_kwargs=UNUSED),
                train("minddp", "branch b used on rank 0 only, one bucket per tensor (bucket_cap_mb=0: on rank 1 "
                      "b's buckets hold no gradient)", model="branchy", steps=3, use_b="rank0",
                      ddp_kwargs={**UNUSED, "bucket_cap_mb": 0}),
                train("minddp", f"{EDGES}, branch b used on rank 0 only, 2 micro-batches per step, .grad set to None "
                      "before each step, one bucket per tensor (b's come first)", model="edges", steps=3, use_b="rank0",
                      accumulate=2, set_to_none=True, ddp_kwargs={**UNUSED, "bucket_cap_mb": 0}),
                train("minddp", "branch b used by every rank in the micro-batch under no_sync() only, not in the "
                      "synchronised one (2 per step)", model="branchy", steps=3,
                      use_b="no_sync", accumulate=2, ddp_kwargs=UNUSED)),
          compare=unused_everywhere),
    Check("A.3", "one extra int32 all-reduce of the usage bitmap per backward, summed over ranks", weight=1,
          section="4",
          runs=(train("minddp", "branch b used on every rank", model="branchy", steps=2, use_b="all",
                      ddp_kwargs=UNUSED),
                Run("usage_counts", {"steps": 3}, world_size=3, ref=NONE,
                    label="3 ranks, branch b used by 1, then 2, then 3 of them (the usage counts)"),
                train("minddp", f"branch b used on rank 0 only, 3 ranks as process groups {groups_text(SUBGROUPS)}",
                      world_size=3, model="branchy", steps=2, use_b="rank0", subgroups=SUBGROUPS, ddp_kwargs=UNUSED)),
          compare=usage_bitmap),
    Check("B.1", "buckets rebuilt in the observed gradient-ready order match torch's from iteration 2", weight=5,
          section="4", runs=tuple(train("minddp", label, model=model, steps=3, hook="record", ddp_kwargs=REBUILD, **more)
                                  for model, label, more in (
                                      ("convbn", "Conv + BatchNorm (weights ready before biases)", {}),
                                      ("twobranch", "two branches, rank 0 computes branch a last", {}),
                                      ("frozen", "an MLP with two frozen layers (no gradient, no place in the order), "
                                                 f"3 ranks as process groups {groups_text(SUBGROUPS)}",
                                       {"world_size": 3, "subgroups": SUBGROUPS}),
                                      ("convbn", "Conv + BatchNorm, 2 micro-steps per iteration (no_sync, then "
                                                 "synchronised), each after an evaluation forward under "
                                                 "torch.no_grad()", {"accumulate": 2, "no_grad_forward": True}))),
          compare=rebuilt_buckets),
    Check("B.2", "the group's step when its ranks have their gradients at different times (group_step, group_order)",
          weight=1, section="4.5",
          runs=(timeline_run(GROUP, "the lecture's exercise 4 on one and two ranks, no tensors, 12 random groups",
                             GROUP_MISTAKES),),
          compare=builds_on_part5("Handout §4.5: the buckets are the group's, and each all-reduce is one collective "
                                  "of the whole group")),
    Check("B.3", "experiment: which order to rebuild by when the ranks disagree (rebuild_order_effect)", weight=1,
          section="4.5", runs=(timeline_run(REBUILD_EFFECT, "two made-up models with two branches"),),
          compare=builds_on_part5("Handout §4.5, rebuild_order_effect: every rank buckets by the same order; each "
                                  "choice is judged by the group's step")),
]
