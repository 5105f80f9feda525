"""Part 3 — the Reducer (handout §3): the checks and their public inputs.

Every run trains the same model twice, with torch's DDP and with your Reducer driven by
``scenarios.ReducerDriver`` (torch's buckets, no wrapper of yours), and compares them.
"""

from __future__ import annotations

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
    try:
        same_training(o, section)
    except Failure as failure:
        fail(f"{failure}\nHere {where}: the world size that averages is the group's (dist.get_world_size("
             "process_group)), and a broadcast's src is a GLOBAL rank: rank 0 of group {1, 2} is global rank 1.")
    for ranks in groups:
        if len({o.got[rank]["steps"][-1]["params"] for rank in ranks}) != 1:
            fail(f"ranks {ranks} (one process group) ended with different parameters: the replicas of one group "
                 f"must stay identical (handout §{section}).")


def grads_in_place(o: Outcome, section: str = "3") -> None:
    """Where the averaged gradient lands: in the .grad tensor that was there before backward, as torch writes it."""
    for rank, (r, g) in enumerate(zip(o.ref, o.got, strict=True)):
        for step, (rs, gs) in enumerate(zip(r["steps"], g["steps"], strict=True)):
            moved = [n for n, kept in rs["grads_in_place"].items() if kept and not gs["grads_in_place"].get(n)]
            if moved:
                fail(f"rank {rank}, step {step + 1}: after backward, {moved[0]}.grad is not the tensor it was before "
                     "backward (a new tensor, or new storage): torch's DDP writes the averaged gradient into the "
                     "existing .grad, in place, so .grad keeps its identity and storage from one iteration to the "
                     f"next (handout §{section}).")
    same_training(o, section)


def three_ranks(o: Outcome) -> None:
    if o.run.kwargs.get("subgroups"):
        on_process_groups(o, "3")
    else:
        close_training(o)


BUCKET_FIELDS = {"is_last": "is_last() is true for the last bucket of the iteration, and only for it",
                 "dtype": "the buffer has its parameters' dtype",
                 "elements": "the buffer holds exactly the bucket's parameters",
                 "values": "the buffer holds the raw gradients, copied in unscaled: averaging is the hook's job",
                 "state": "the hook is called with the state registered with it: hook(state, bucket)"}


def bucket_records(o: Outcome, section: str = "3") -> None:
    """From iteration 2 on, what a recording comm hook saw of each GradBucket, in launch order: index,
    parameters, is_last(), the buffer's dtype, size and exact values."""
    for rank, (r, g) in enumerate(zip(o.ref, o.got, strict=True)):
        for step in range(1, len(r["steps"])):
            mine, theirs = g["steps"][step]["buckets"], r["steps"][step]["buckets"]
            if [b[:2] for b in mine] != [b[:2] for b in theirs]:
                fail(f"rank {rank}, iteration {step + 1}: the GradBuckets passed to the comm hook (index, parameters), "
                     f"in launch order, differ from torch's (handout §{section}):\n"
                     + side_by_side([b[:2] for b in mine], [b[:2] for b in theirs]))
            for m, t in zip(mine, theirs, strict=True):
                for key, rule in BUCKET_FIELDS.items():
                    if m[2].get(key) != t[2][key]:
                        seen = {"is_last": f"is_last() {m[2].get(key)} where torch's gives {t[2][key]}",
                                "dtype": f"a {m[2].get(key)} buffer where torch's is {t[2][key]}",
                                "elements": f"a buffer of {m[2].get(key)} elements where torch's has {t[2][key]}",
                                "values": "a buffer whose values differ from torch's",
                                "state": "a state other than the object registered with it"}[key]
                        fail(f"rank {rank}, iteration {step + 1}, bucket {t[0]}: the comm hook saw {seen}; "
                             f"{rule} (handout §{section}).")
    same_training(o, section)


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
    same_training(o)


def one_allreduce_per_bucket(o: Outcome) -> None:
    same_allreduces(o, "expected exactly one all-reduce per bucket per backward, of the bucket's elements and "
                       "dtype (handout §2, §3)")
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
    Check("3.3", "a single bucket, torch's default limits, parameters of every shape: bit for bit equal to torch DDP",
          weight=1, section="3",
          runs=(train("reducer", f"{MLP}, bucket_cap_mb=100", model="mlp", steps=3, ddp_kwargs={"bucket_cap_mb": 100}),
                train("reducer", f"{MLP}, default bucket limits", model="mlp", steps=3),
                train("reducer", f"{EDGES}, one bucket per tensor, .grad set to None before each step", model="edges",
                      steps=3, ddp_kwargs={"bucket_cap_mb": 0}, set_to_none=True)),
          compare=same_run),
    Check("3.4", "a parameter used twice (tied embedding) is counted once per backward", weight=2, section="3",
          runs=(train("reducer", "the tied model, bucket_cap_mb=0.005", model="tied", steps=3,
                      ddp_kwargs={"bucket_cap_mb": 0.005}),),
          compare=same_training,
          hint="the tied weight is ONE parameter used twice in forward: its gradient is accumulated once, so it is "
               "counted once (one hook call) and sits in one bucket slot."),
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
          compare=same_training,
          hint="here rank 0 and rank 1 produce gradients in different orders, so their buckets fill in different "
               "orders. Collectives pair up by call order: launch buckets strictly in index order (bucket i+1 waits "
               "for bucket i's launch), never in the order they fill."),
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
                                   hook="record", ddp_kwargs={"bucket_cap_mb": 1}),),
          compare=bucket_records,
          hint="the comm hook here returns a NEW tensor (the averaged copy), not the bucket's buffer: copy back the "
               "tensor the future returns."),
    Check("3.12", "the fp16 compression hook gives torch's results bit for bit", weight=2, section="3",
          runs=(train("reducer", f"{MLP}, bucket_cap_mb=1, fp16_compress_hook", model="mlp", steps=3, hook="fp16",
                      ddp_kwargs={"bucket_cap_mb": 1}),),
          compare=lambda o: same_training(o, "3 (comm hooks: the buffer holds raw gradients; the hook's result "
                                             "is copied back)")),
]
