# GENERATED from solutions/checks/part3.py by tools/assign.py (staff: edit that file, then `make assignment`).
# Provided code: do not edit it by hand; the grader uses its own copy.
"""Part 3 — the Reducer (handout §3): the checks and their public inputs.

Every run trains the same model twice, with torch's DDP and with your Reducer driven by
``scenarios.ReducerDriver`` (torch's buckets, no wrapper of yours), and compares them.
"""

from __future__ import annotations

from collections.abc import Sequence

from checks.check import Check, Failure, Outcome, fail, train
from checks.compare import (
    as_planned,
    ascii_overlap,
    close_training,
    same_allreduces,
    same_training,
    side_by_side,
)

MLP = "6 x Linear(512, 512)"
EDGES = "the edges model (a transposed weight, an empty and a 0-dim parameter, a dict of outputs)"
SUBGROUPS = [[0], [1, 2]]  # a world of 3 split into two process groups: group {1, 2}'s rank 0 is global rank 1


def groups_text(groups: list) -> str:
    return " and ".join("{" + ", ".join(str(r) for r in ranks) + "}" for ranks in groups)


def on_process_groups(o: Outcome, section: str) -> None:
    """Each DDP on its own process group (``subgroups``): nothing on the world group, torch's values, and
    replicas identical within each group."""
    groups = o.run.kwargs["subgroups"]
    where = f"each DDP runs on its own process group ({groups_text(groups)} of a world of {len(o.got)})"
    for rank, (r, g) in enumerate(zip(o.ref, o.got, strict=True)):
        counts = [x["construct_world_collectives"] + sum(s["world_collectives"] for s in x["steps"]) for x in (g, r)]
        if counts[0] != counts[1]:
            fail(f"rank {rank}: here {where}, and torch's DDP launches {counts[1]} collectives on the default "
                 f"(world) group; yours launched {counts[0]}. Every collective must go to the process_group the "
                 f"DDP was given (group=process_group), not to the world (handout §{section}).")
    same_training(o, section)
    for ranks in groups:
        if len({o.got[rank]["steps"][-1]["params"] for rank in ranks}) != 1:
            fail(f"ranks {ranks} (one process group) ended with different parameters: the replicas of one group "
                 f"must stay identical (handout §{section}).")


def grads_in_place(o: Outcome, section: str = "3") -> None:
    """Where the averaged gradient lands: in the .grad tensor that was there before backward, which is the one
    autograd left there (a new one after zero_grad() set .grad to None), as torch writes it; and a .grad a user
    kept from the step before is left alone."""
    for rank, (r, g) in enumerate(zip(o.ref, o.got, strict=True)):
        for step, (rs, gs) in enumerate(zip(r["steps"], g["steps"], strict=True)):
            moved = [n for n, kept in rs["grads_in_place"].items() if kept and not gs["grads_in_place"].get(n)]
            if moved:
                fail(f"rank {rank}, step {step + 1}: after backward, {moved[0]}.grad is not the tensor it was before "
                     "backward (a new tensor, or new storage): torch's DDP writes the averaged gradient into the "
                     "existing .grad, in place, so .grad keeps its identity and storage from one iteration to the "
                     f"next (handout §{section}, C3).")
            replaced = [n for n, kept in rs["grads_from_autograd"].items()
                        if kept and not gs["grads_from_autograd"].get(n)]
            if replaced:
                fail(f"rank {rank}, step {step + 1}: after backward, {replaced[0]}.grad is not the tensor autograd "
                     "left in .grad during this backward" + (" (a new one: zero_grad() had set .grad to None)"
                                                            if o.run.kwargs.get("set_to_none") or not step else "")
                     + ": yours was put in its place (a view into your bucket, or a copy). Torch's DDP writes the "
                     "averaged gradient in place into the tensor autograd left there, whatever it is: hold no .grad "
                     f"from one backward to the next (handout §{section}, C3).")
            changed = [n for n in gs.get("kept_grads_changed", []) if n not in rs.get("kept_grads_changed", [])]
            if changed:
                fail(f"rank {rank}, step {step + 1}: {changed[0]}.grad of step {step}, which the user kept (zero_grad() "
                     f"set .grad to None, so step {step + 1} got a new one), changed during step {step + 1}: your "
                     "DDP wrote into a tensor autograd no longer uses (a bucket's storage, reused). Write the average "
                     "in place into the .grad autograd left in this backward, and hold no .grad from one step to "
                     f"the next (handout §{section}, C3).")
    same_training(o, section)


def launch_times(o: Outcome, section: str = "3") -> None:
    """(C2) In every backward each bucket is launched once it and every bucket below it are full: never before
    (out of index order), never later. Seen by the order of events: how many all-reduces had been launched when
    each gradient was computed, and when every hook of the backward had run (``ReadyProbe``)."""
    if "bucket_indices" not in o.kwargs:
        return
    buckets = o.kwargs["bucket_indices"]
    for rank, g in enumerate(o.got):
        names = g["trainable"]
        for step, entry in enumerate(g["steps"]):
            if not entry.get("grad_events"):
                continue
            problem = launch_problem(entry["grad_events"], entry["launched_at_end"], buckets, names)
            if problem:
                fail(f"rank {rank}, step {step + 1}: {problem} Launch bucket i as soon as all its gradients are "
                     "ready and buckets 0 to i-1 have been launched: strictly in index order, never in the order "
                     "buckets fill, and never later (a bucket that filled before its turn goes right after the "
                     f"bucket before it; handout §{section}, C2).")


def launch_problem(events: list, at_end: int, buckets: list, names: list, ready_first: Sequence[str] = ()) -> str:
    """What is wrong with the launches of one backward (empty: nothing). ``events``: [parameter, all-reduces
    launched when its gradient was computed], in the order computed; ``at_end``: launched when every hook had run.
    A gradient's own hooks may run before the count (tensor hooks registered before the probe's), so the buckets
    it completes count as launchable at its event. ``ready_first``: parameters that get no gradient and count as
    ready at the first event (bonus A)."""
    bucket_of = {names[i]: b for b, bucket in enumerate(buckets) for i in bucket}
    missing = [len(bucket) for bucket in buckets]
    full_at: dict[int, int] = {}  # bucket -> the event that completed it
    allowed, turn_at = 0, {}  # buckets 0..allowed-1 may be launched; bucket -> the event that made it launchable
    for k, (name, launched) in enumerate(events):
        for ready in ([*ready_first, name] if k == 0 else [name]):
            if ready in bucket_of:
                missing[bucket_of[ready]] -= 1
                if missing[bucket_of[ready]] == 0:
                    full_at[bucket_of[ready]] = k
        while allowed < len(buckets) and missing[allowed] == 0:
            turn_at[allowed], allowed = k, allowed + 1
        full = sum(1 for left in missing if left <= 0)
        if launched > full:
            return (f"when {name}'s gradient was computed, {launched} all-reduce(s) had been launched, but only "
                    f"{full} bucket(s) were full: a bucket was launched before all its gradients were ready. Each "
                    "parameter's gradient counts once per backward (one hook call per parameter, also for one used "
                    "twice in forward), and a bucket goes once every one of its gradients has come.")
        if launched > allowed:
            return (f"when {name}'s gradient was computed, {launched} all-reduce(s) had been launched, but bucket "
                    f"{allowed} was not full yet: a bucket above it went first, out of index order (the ranks then "
                    "sum different buckets together).")
        later = events[k + 1][1] if k + 1 < len(events) else at_end
        if 0 <= later < allowed:
            when = (f"when {events[k + 1][0]}'s gradient was computed" if k + 1 < len(events) else
                    "when every hook of the backward had run (before it ended)")
            early = full_at[later] < turn_at[later]
            return (f"bucket {later} could go once {events[turn_at[later]][0]}'s gradient was ready (it and every "
                    f"bucket below it were full then), but only {later} all-reduce(s) had been launched {when}: "
                    f"bucket {later} was launched late" + (f", although it had filled before its turn (at "
                                                           f"{events[full_at[later]][0]}'s gradient: buckets fill "
                                                           "out of index order here)" if early else "") + ".")
    return ""


def three_ranks(o: Outcome) -> None:
    if o.run.kwargs.get("subgroups"):
        on_process_groups(o, "3")
    else:
        close_training(o)


def expected_buckets(o: Outcome, rank: int, step: int) -> list | None:
    """[index, parameter names] of each GradBucket a comm hook must see in iteration ``step + 1``, in launch
    order: the driver's buckets (Part 3, from iteration 1 on), or torch's (your wrapper, Bonus B: from iteration
    2 on, once torch has rebuilt them); None: nothing to compare."""
    if "bucket_indices" in o.kwargs:
        names = o.ref[rank]["trainable"]
        return [[b, [names[i] for i in bucket]] for b, bucket in enumerate(o.kwargs["bucket_indices"])]
    return [b[:2] for b in o.ref[rank]["steps"][step]["buckets"]] if step > 0 else None


def bucket_records(o: Outcome, section: str = "3") -> None:
    """What a recording comm hook saw of each GradBucket, in launch order: index and parameters (as expected),
    is_last(), the buffer's dtype and size, what each parameter's slot holds, and (where torch's buckets are the
    same) the buffer's exact bits, against the rules torch's GradBuckets follow."""
    for rank, (r, g) in enumerate(zip(o.ref, o.got, strict=True)):
        for step in range(len(r["steps"])):
            expected = expected_buckets(o, rank, step)
            if expected is None:
                continue
            mine, theirs = g["steps"][step]["buckets"], r["steps"][step]["buckets"]
            if [b[:2] for b in mine] != expected:
                fail(f"rank {rank}, iteration {step + 1}: the GradBuckets passed to the comm hook (index, parameters), "
                     f"in launch order, are not the buckets (handout §{section}):\n"
                     + side_by_side([b[:2] for b in mine], expected, right_name="the buckets"))
            for m in mine:
                problem = bucket_problem(m, len(expected), r)
                if problem:
                    fail(f"rank {rank}, iteration {step + 1}, bucket {m[0]}: the comm hook saw {problem} "
                         f"(handout §{section}).")
    same_training(o, section)  # (values differ later, in the buckets too: the first difference is the cause)
    for rank, (r, g) in enumerate(zip(o.ref, o.got, strict=True)):
        for step in range(len(r["steps"])):
            mine, theirs = g["steps"][step]["buckets"], r["steps"][step]["buckets"]
            if [b[:2] for b in theirs] != expected_buckets(o, rank, step):
                continue  # torch's buckets are others: their bits say nothing of yours
            for m, t in zip(mine, theirs, strict=True):
                if m[2].get("values") != t[2]["values"]:
                    fail(f"rank {rank}, iteration {step + 1}, bucket {m[0]}: the comm hook saw a buffer whose values "
                         "differ from torch's (its bits), though the gradients match torch's: the buffer holds the "
                         f"raw gradients, unscaled, in torch's layout (handout §{section}).")


def bucket_problem(mine: list, count: int, record: dict) -> str:
    """What is wrong with one GradBucket a hook saw (empty: nothing), by the rules torch's follow."""
    index, params, seen = mine
    if seen.get("is_last") != (index == count - 1):
        return (f"is_last() {seen.get('is_last')} in bucket {index} of {count}; is_last() is true for the bucket with "
                f"the highest index ({count - 1}) and for no other, whichever fills last")
    if params and seen.get("dtype") != record["dtypes"][params[0]]:
        return f"a {seen.get('dtype')} buffer for {record['dtypes'][params[0]]} parameters: the buffer has its parameters' dtype"
    if seen.get("elements") != sum(record["numels"][n] for n in params):
        return (f"a buffer of {seen.get('elements')} elements for parameters of "
                f"{sum(record['numels'][n] for n in params)}: the buffer holds exactly the bucket's parameters")
    for name, kind in zip(params, seen.get("slots") or [], strict=False):
        if kind == "grad, row-major":
            return (f"{name}'s gradient in row-major order, where torch's slot holds it as {name} lies in memory "
                    f"({name} is not contiguous): each slot has its parameter's shape and strides, "
                    "buffer.as_strided(param.size(), param.stride(), offset), as torch makes them (C1)")
        if kind == "other":
            return (f"a buffer whose slot of {name} does not hold {name}'s raw gradient: the buffer holds the raw "
                    "gradients, copied in unscaled: averaging is the hook's job")
    if seen.get("state") is not True:
        return ("a state other than the object registered with it: the hook is called with the state registered "
                "with it, hook(state, bucket)")
    return ""


def same_run(o: Outcome) -> None:
    """Every observable of a run: the first backward's all-reduces (torch rebuilds its buckets after it), what a
    recording comm hook saw, and every value, bit for bit."""
    as_planned(o, "3")
    if o.run.kwargs.get("hook") == "record":
        bucket_records(o)
    else:
        same_training(o)


def launch_order(o: Outcome) -> None:
    same_allreduces(o, "the all-reduces of backward (elements, dtype) differ from torch DDP's, whose buckets follow "
                       "reverse registration order from iteration 2 (handout §2, §3)")
    launch_times(o)
    same_training(o)


def one_allreduce_per_bucket(o: Outcome) -> None:
    same_allreduces(o, "expected exactly one all-reduce per bucket per backward, of the bucket's elements and "
                       "dtype (handout §2, §3)")
    launch_times(o)
    same_training(o)


def ordered_launches(o: Outcome) -> None:
    """Ranks whose buckets fill in different orders: every launch in index order and on time, then the values."""
    launch_times(o)
    same_training(o)


def any_completion_order(o: Outcome) -> None:
    """``same_training``; a run with ``backend="late"`` goes through ``checks/late_backend.py``, whose works
    complete only when waited on (or at the end of backward, last launched first), never in launch order."""
    try:
        same_training(o)
    except Failure as failure:
        if o.run.kwargs.get("backend") != "late":
            raise
        fail(f"{failure}\nThis run goes through a test backend whose works complete in any order: a bucket's "
             "result reaches its buffer only once that bucket's own work (or future) is waited on. If the same "
             "model trains right on gloo, your finalize reads some bucket before waiting on it: wait on every "
             "bucket's work before reading its buffer; waiting on the last one says nothing about the others "
             "(handout §3).")


def overlap(o: Outcome) -> None:
    values = [g["steps"][1]["hold_value"] for g in o.got]
    if not o.got[1]["steps"][1]["backward_blocked"] and (not values[0] or values[0] != values[1]):
        fail("rank 1 went on without the signal rank 0's last gradient sends (the probe's own value): the "
             "overlap probe was interfered with (handout §3, §8).")
    if o.got[1]["steps"][1]["backward_blocked"]:
        fail("your all-reduce blocks backward: while rank 1 held back its first all-reduce, rank 0 could not "
             "compute its remaining gradients, so rank 0 was waiting for communication inside backward. Launch "
             "each bucket asynchronously (async_op=True), keep what it returns, and wait only at the end of "
             "backward (handout §3).")
    for rank, g in enumerate(o.got):
        if g["steps"][1]["allreduces_before_last_grad"] < 1:
            fail(f"rank {rank}: no all-reduce was launched before the last gradient of backward was computed. "
                 "Launch each bucket from inside backward, asynchronously, as soon as it and every lower-index "
                 "bucket are ready; wait only at the end of backward (handout §3).\n" + ascii_overlap(g, 1))
    same_training(o)


CHECKS = [
    Check("3.1", "one bucket per layer: bit for bit equal to torch DDP", weight=4, section="3",
          runs=(train("reducer", f"{MLP}, bucket_cap_mb=1", model="mlp", steps=3, ddp_kwargs={"bucket_cap_mb": 1}),
                train("reducer", f"{MLP}, bucket_cap_mb=1, every .grad set to None before each step (zero_grad()'s "
                      "default)", model="mlp", steps=3, ddp_kwargs={"bucket_cap_mb": 1}, set_to_none=True)),
          compare=grads_in_place),
    Check("3.2", "one bucket per tensor: bit for bit equal to torch DDP", weight=2, section="3",
          runs=(train("reducer", f"{MLP}, bucket_cap_mb=0", model="mlp", steps=3, ddp_kwargs={"bucket_cap_mb": 0}),
                train("reducer", f"{MLP}, bucket_cap_mb=0, works completing out of order", model="mlp", steps=3,
                      ddp_kwargs={"bucket_cap_mb": 0}, backend="late")),
          compare=any_completion_order),
    Check("3.3", "one bucket; torch's default limits; one bucket per tensor of every shape: bit for bit equal to torch DDP",
          weight=1, section="3",
          runs=(train("reducer", f"{MLP}, bucket_cap_mb=100", model="mlp", steps=3, ddp_kwargs={"bucket_cap_mb": 100}),
                train("reducer", f"{MLP}, default bucket limits", model="mlp", steps=3),
                train("reducer", f"{EDGES}, one bucket per tensor, .grad set to None before each step", model="edges",
                      steps=3, ddp_kwargs={"bucket_cap_mb": 0}, set_to_none=True)),
          compare=same_run),
    Check("3.4", "a parameter used twice (tied embedding) is counted once per backward", weight=2, section="3",
          runs=(train("reducer", "the tied model, bucket_cap_mb=0.005", model="tied", steps=3,
                      ddp_kwargs={"bucket_cap_mb": 0.005}),),
          compare=ordered_launches),
    Check("3.5", "float32 and float64 parameters in their own buckets", weight=1, section="3",
          runs=(train("reducer", "the mixed-dtype model, bucket_cap_mb=0.01", model="mixed", steps=3,
                      ddp_kwargs={"bucket_cap_mb": 0.01}),),
          compare=same_training),
    Check("3.6", "from iteration 2 on, buckets are launched in index order, as torch DDP does", weight=3, section="3",
          runs=(train("reducer", "48 x Linear(32, 32), limits [0.005, 0.02] MiB", model="many_small", steps=3,
                      ddp_kwargs={"bucket_cap_mb_list": [0.005, 0.02]}),),
          compare=launch_order),
    Check("3.7", "exactly one all-reduce per bucket per backward, first bucket small", weight=3, section="3",
          runs=(train("reducer", f"{MLP}, limits [1, 2] MiB", model="mlp", steps=3,
                      ddp_kwargs={"bucket_cap_mb_list": [1, 2]}),
                train("reducer", "the mixed-dtype model, limits [0.01, 0.05] MiB", model="mixed", steps=3,
                      ddp_kwargs={"bucket_cap_mb_list": [0.01, 0.05]})),
          compare=one_allreduce_per_bucket),
    Check("3.8", "communication overlaps backward (launched before the last gradient, never blocking it)", weight=4,
          section="3", runs=(train("reducer", f"{MLP}, bucket_cap_mb=1, rank 1 holding back its first all-reduce",
                                   model="mlp", steps=2, ddp_kwargs={"bucket_cap_mb": 1}, hold_back=True),),
          compare=overlap),
    Check("3.9", "ranks whose gradients become ready in different orders still agree (ordered launch)", weight=3,
          section="3", runs=(train("reducer", "two branches computed in a different order on each rank",
                                   model="twobranch", steps=4, ddp_kwargs={"bucket_cap_mb": 0.01}),),
          compare=ordered_launches),
    Check("3.10", "3 ranks, also split into process groups: like torch DDP, replicas identical", weight=3,
          section="3",
          runs=(train("reducer", f"{MLP} on 3 ranks, bucket_cap_mb=1", world_size=3, model="mlp", steps=3,
                      ddp_kwargs={"bucket_cap_mb": 1}, tensors=True),
                train("reducer", f"{MLP}, 3 ranks as process groups {groups_text(SUBGROUPS)}, bucket_cap_mb=1",
                      world_size=3, model="mlp", steps=3, ddp_kwargs={"bucket_cap_mb": 1}, subgroups=SUBGROUPS)),
          compare=three_ranks),
    Check("3.11", "a comm hook sees torch's GradBuckets (index, parameters, is_last, raw buffer), its result is used",
          weight=2,
          section="3", runs=(train("reducer", f"{MLP}, bucket_cap_mb=1, a recording comm hook", model="mlp", steps=3,
                                   hook="record", ddp_kwargs={"bucket_cap_mb": 1}),
                             train("reducer", f"{EDGES}, one bucket per tensor (they fill out of index order), a "
                                   "recording comm hook", model="edges", steps=2, hook="record",
                                   ddp_kwargs={"bucket_cap_mb": 0})),
          compare=bucket_records),
    Check("3.12", "the fp16 compression hook gives torch's results bit for bit", weight=2, section="3",
          runs=(train("reducer", f"{MLP}, bucket_cap_mb=1, fp16_compress_hook", model="mlp", steps=3, hook="fp16",
                      ddp_kwargs={"bucket_cap_mb": 1}),),
          compare=lambda o: same_training(o, "3 (comm hooks: the buffer holds raw gradients; the hook's result "
                                             "is copied back)")),
]
