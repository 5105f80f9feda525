"""Part 4 — the DDP wrapper (handout §4): the checks and their public inputs.

Every run trains the same model with torch's DDP and with your ``minddp.ddp.DistributedDataParallel``
and compares them: values after every phase, and the collectives of each phase.
"""

from __future__ import annotations

from checks.check import NONE, Check, Outcome, Run, fail, train
from checks.compare import as_planned, collective_text, elements_by_dtype, same_allreduces, same_training, side_by_side
from checks.part3 import EDGES, SUBGROUPS, groups_text, on_process_groups

CONVBN = "Conv + BatchNorm (buffers)"


def construction_collectives(record: dict, torch_ddp: bool = False) -> list[str]:
    """'op elements dtype' of each collective the constructor launched. Torch's DDP first checks that every rank
    holds parameters of the same shapes (an all_gather and a broadcast of int64 metadata); the handout's W2
    leaves that check out, so it is left out here."""
    found = record["construct"]
    if torch_ddp and found[:1] and found[0]["op"] == "all_gather":
        found = found[2:]
    return [f"{c['op']} {collective_text(c)}" for c in found]


def same_construction(o: Outcome) -> None:
    """(W2) The constructor launches torch's broadcasts: one per (dtype, device) group of parameters then buffers."""
    for rank, (r, g) in enumerate(zip(o.ref, o.got, strict=True)):
        mine, theirs = construction_collectives(g), construction_collectives(r, torch_ddp=True)
        if mine != theirs:
            dtypes = [[c.split()[-1] for c in found if c.startswith("broadcast")] for found in (mine, theirs)]
            split = [f"{d} tensors in {dtypes[0].count(d)} broadcasts where torch's sends {dtypes[1].count(d)}"
                     for d in dict.fromkeys(dtypes[0]) if dtypes[0].count(d) > dtypes[1].count(d) >= 1]
            fail(f"rank {rank}: your constructor launched other collectives than torch DDP's"
                 + (f" (you send {'; '.join(split)}: which tensors travel together?)" if split else "")
                 + " (handout §4, W2; `make probe` shows torch's on any model). (Torch's own check that the "
                 "parameter shapes agree is left out.)\n" + side_by_side(mine, theirs))


def broadcast_from_src(o: Outcome, groups: list) -> None:
    """broadcast_tensors(tensors, group, src): every rank of the group ends with the values of the group's rank src,
    written into the tensors themselves."""
    src = o.run.kwargs["src"]
    for ranks in groups:
        for rank in ranks:
            if o.got[rank].get("moved"):
                fail(f"broadcast_tensors(tensors, group, src={src}): on rank {rank}, {o.got[rank]['moved'][0]} was "
                     "replaced (its storage or strides changed), not overwritten in place: copy the values into the "
                     "tensors themselves (torch._foreach_copy_, or copy_ under torch.no_grad()), never rebind "
                     "their .data, so every view and reference of them sees the new values (handout §4, W1).")
            if o.got[rank]["from"] != [ranks[src]]:
                fail(f"broadcast_tensors(tensors, group, src={src}) with group {groups_text([ranks])} of a world of "
                     f"{len(o.got)}: rank {rank} ended with the values of global rank(s) {o.got[rank]['from']}, not "
                     f"those of the group's rank {src} (global rank {ranks[src]}): src is a rank of the group, which "
                     "dist.broadcast wants as a global rank (dist.get_global_rank; handout §4).")


def construction(o: Outcome) -> None:
    groups = o.run.kwargs.get("subgroups") or [list(range(len(o.got)))]
    if o.run.fn == "broadcast_values":
        return broadcast_from_src(o, groups)
    for ranks in groups:
        for what in ("params", "buffers"):
            if len({o.got[rank][f"{what}_at_start"] for rank in ranks} | {o.ref[ranks[0]][f"{what}_at_start"]}) > 1:
                words = "parameters" if what == "params" else "buffers (which differed on every rank before)"
                where = f" of process group {groups_text([ranks])}" if len(groups) > 1 else ""
                fail(f"ranks {ranks}{where} start from different {words}, or not from torch DDP's: broadcast rank "
                     "0's parameters and buffers in the constructor, both (handout §4)")
    in_place_construction(o)
    same_construction(o)
    as_planned(o, "2, §4")
    if len(groups) > 1:
        on_process_groups(o, "4")
    else:
        same_training(o, "4")


def in_place_construction(o: Outcome) -> None:
    """(W1) The constructor overwrites the module's parameters and buffers in place, as torch's does."""
    for rank, (r, g) in enumerate(zip(o.ref, o.got, strict=True)):
        moved = [n for n in g["moved_by_construction"] if n not in r["moved_by_construction"]]
        if moved:
            fail(f"rank {rank}: after construction, {moved[0]} is not in the storage it was in before (its address "
                 "or strides changed): the constructor replaced it, where torch's DDP overwrites every parameter "
                 "and buffer in place. A view of it taken before wrapping then keeps the old values, and a "
                 "transposed parameter comes back contiguous. Copy rank 0's values into the tensors themselves "
                 "(torch._foreach_copy_, or copy_ under torch.no_grad()), never rebind their .data (handout §4, W1).")


def buffers_each_forward(o: Outcome) -> None:
    off = (o.run.kwargs.get("ddp_kwargs") or {}).get("broadcast_buffers") is False
    for rank, (r, g) in enumerate(zip(o.ref, o.got, strict=True)):
        for step, entry in enumerate(g["steps"]):
            moved = [n for micro in entry["buffers_moved"] for n in micro]
            if moved:
                fail(f"rank {rank}, step {step + 1}: your forward replaced the buffer {moved[0]} (it is in another "
                     "storage after the forward than before): broadcast rank 0's buffers into the buffers "
                     "themselves, in place, as torch's DDP does; never rebind their .data, which moves them at "
                     "every forward (handout §4, W4).")
        if off and g["buffers_at_start"] != r["buffers_at_start"]:
            fail(f"rank {rank}: with broadcast_buffers=False, torch's DDP does not broadcast buffers at all, not even "
                 "in the constructor: each rank keeps its own (here they differ per rank); yours differ from them "
                 "right after construction (handout §4)")
        theirs = r["steps"][0]["forward"][0]  # later forwards of torch's also rebuild buckets
        for step, entry in enumerate(g["steps"]):
            if entry["forward"][0] != theirs:
                mine = [c["op"] for c in entry["forward"][0]]
                rule = ("with broadcast_buffers=False torch's DDP broadcasts nothing in forward" if off else
                        f"torch DDP broadcasts rank 0's buffers, one broadcast per dtype: {[c['op'] for c in theirs]}")
                after_eval = (" Here the step before ran in evaluation mode (ddp.eval()): the module's mode changes "
                              "what the module computes, not what torch's DDP does around it; a forward with "
                              "gradients enabled is synchronised in either mode."
                              if o.run.kwargs.get("eval_mode") and step % 2 == 0 and step > 0 and not mine else "")
                fail(f"rank {rank}, step {step + 1}: your forward launched {mine if mine else 'no broadcast'}; {rule} "
                     f"(handout §4).{after_eval}")
    same_construction(o)
    same_training(o, "4")


def no_sync_accumulates(o: Outcome) -> None:
    nested, no_grad = o.run.kwargs.get("no_sync") == "nested", o.run.kwargs.get("no_grad_forward")
    inside = (" Here an inner no_sync() was entered and left first, inside the outer one: leaving a no_sync() "
              "restores the state it found (still inside the outer one), it does not switch syncing back on."
              if nested else "")
    inside += (" Here each micro-batch starts with a forward under torch.no_grad(): such a forward prepares no "
               "synchronised backward, so it must not arm the next backward's reduction." if no_grad else "")
    after = (" Here a no_sync() block was left by an exception just before it: no_sync() must restore the switch "
             "however its block is left." if nested else "")
    armed = (" Here each step starts with a synchronised forward whose output gets no backward: it prepares the "
             "Reducer, and the next backward reduces, whichever forward it follows (a forward inside no_sync() "
             "prepares nothing, and does not undo it), as torch's DDP does." if o.run.kwargs.get("dropped_forward")
             else "")
    for rank, (r, g) in enumerate(zip(o.ref, o.got, strict=True)):
        for step, (rs, gs) in enumerate(zip(r["steps"], g["steps"], strict=True)):
            for micro, (t, m) in enumerate(zip(rs["backward"], gs["backward"], strict=True)):
                reduces = [any(c["op"] == "all_reduce" for c in b) for b in (t, m)]
                last = micro == len(gs["backward"]) - 1
                if m and not reduces[0] and not last:
                    fail(f"rank {rank}, step {step + 1}: a backward whose forward ran inside no_sync() launched "
                         f"collectives {[c['op'] for c in m]}; torch DDP's launched none: with no_sync, gradients "
                         f"only accumulate locally (handout §4).{inside}")
                if reduces[0] and not reduces[1]:
                    fail(f"rank {rank}, step {step + 1}: " + (
                        f"the last micro-batch (outside no_sync) must synchronise, but its backward launched no "
                        f"all-reduce (handout §4).{after}" if last else
                        f"torch DDP's backward of micro-batch {micro + 1} reduced (its forward ran inside no_sync()), "
                        f"yours launched no all-reduce (handout §3, C5).{armed}"))
    same_training(o, "4")


def no_sync_read_in_forward(o: Outcome) -> None:
    for rank, g in enumerate(o.got):
        for step, entry in enumerate(g["steps"]):
            if not all(entry["backward"]):
                fail(f"rank {rank}, step {step + 1}: torch's DDP all-reduced a backward that ran inside no_sync() "
                     "after a forward outside it, and yours did not: fill in handout §4.3's table with `make probe` "
                     "and explain that row from what the forward hands the Reducer")
    same_training(o, "4")


def every_backward_syncs(o: Outcome) -> None:
    same_allreduces(o, "expected one all-reduce per bucket, as torch DDP (elements, dtype; handout §2, §4)")
    same_training(o, "4")


def tied_once(o: Outcome) -> None:
    for rank, (r, g) in enumerate(zip(o.ref, o.got, strict=True)):
        extra = sum(elements_by_dtype(g, 0).values()) - sum(elements_by_dtype(r, 0).values())  # (any step)
        shared = [n for n, size in r["numels"].items() if size == extra and n in r.get("shared", {})]
        if shared:
            fail(f"rank {rank}, step 1: your backward all-reduced {extra:,} more elements than torch DDP's, exactly "
                 f"the size of {shared[0]}, which two modules share ({shared[0]} is also "
                 f"{', '.join(r['shared'][shared[0]])}): it was bucketed twice. A weight shared by two modules is "
                 "ONE parameter: hand it to the bucketing and the Reducer once (module.parameters() lists it once; "
                 "walking the submodules lists it twice; handout §4, W3).")
    same_allreduces(o, "the all-reduces of backward (elements, dtype) differ from torch DDP's (handout §2, §4)")
    same_training(o, "4")


def raises_like_torch(o: Outcome) -> None:
    """Torch trains iteration 1 (the unused parameter's bucket never fills) and raises in iteration 2's forward."""
    for rank, (r, g) in enumerate(zip(o.ref, o.got, strict=True)):
        mine, theirs = (x["steps"][0].get("grad_abs_sums", {}) if x["steps"] else {} for x in (g, r))
        extra = sorted(name for name, size in mine.items() if size and name not in theirs)
        if extra:  # (a zero gradient can be the Reducer's doing; a non-zero one only the module's)
            fail(f"rank {rank}, iteration 1: {', '.join(extra)} got a non-zero gradient in your run but none in "
                 "torch's, whose "
                 "forward left them unused: your model ran with other arguments than the ones given. Does your forward "
                 "pass every argument on, keyword ones too (self.module(*inputs, **kwargs); handout §4, W5)?")
        if "error" not in g:
            fail(f"rank {rank}: training went on although a parameter got no gradient in iteration 1; torch's DDP "
                 f"raises in the next forward: {r.get('message', '')[:160]}... (handout §4)")
        if "Expected to have finished reduction" not in g["message"]:
            fail(f"rank {rank}: raised {g['error']}: {g['message'][:300]!r}; expected the RuntimeError that says "
                 "\"Expected to have finished reduction in the prior iteration ...\" (handout §4)")
        if (g["step"], g["phase"]) != (r["step"], r["phase"]):
            fail(f"rank {rank}: raised in the {g['phase']} of step {g['step']}; torch's DDP raises in the "
                 f"{r['phase']} of step {r['step']}, after training step 1 normally (handout §4)")
        if [s["params"] for s in g["steps"]] != [s["params"] for s in r["steps"]]:
            fail(f"rank {rank}: the parameters after step 1 differ from torch DDP's: in a backward whose reduction "
                 "did not finish (a parameter got no gradient), torch writes nothing back, not even the buckets "
                 "already reduced: every .grad keeps this rank's local gradient (handout §4)")


CHECKS = [
    Check("4.1", "every rank starts from rank 0's parameters and buffers, also on a process group", weight=3,
          section="4",
          runs=(train("minddp", f"{CONVBN}, a different seed and different buffers on each rank", model="convbn",
                      steps=3, seed_per_rank=True, buffers_per_rank=True),
                train("minddp", f"{CONVBN}, 3 ranks as process groups {groups_text(SUBGROUPS)}, a different seed "
                      "and buffers on each rank", world_size=3, model="convbn", steps=2, seed_per_rank=True,
                      buffers_per_rank=True, subgroups=SUBGROUPS),
                train("minddp", "an MLP with two frozen layers, a different seed on each rank", model="frozen",
                      steps=2, seed_per_rank=True),
                train("minddp", f"{EDGES}, a different seed on each rank, bucket_cap_mb=0", model="edges", steps=2,
                      seed_per_rank=True, ddp_kwargs={"bucket_cap_mb": 0}),
                Run("broadcast_values", {"src": 1}, world_size=2, ref=NONE,
                    label="broadcast_tensors(..., src=1) on 2 ranks"),
                Run("broadcast_values", {"src": 1, "subgroups": [[1, 2]]}, world_size=3, ref=NONE,
                    label="broadcast_tensors(..., src=1) on process group {1, 2} of 3 ranks (its rank 1 is global "
                          "rank 2)")),
          compare=construction),
    Check("4.2", "rank 0's buffers are broadcast at the start of every forward (none with broadcast_buffers=False)",
          weight=4, section="4",
          runs=(train("minddp", CONVBN, model="convbn", steps=3),
                train("minddp", f"{CONVBN}, different buffers on each rank, broadcast_buffers=False", model="convbn",
                      steps=2, buffers_per_rank=True, ddp_kwargs={"broadcast_buffers": False}),
                train("minddp", f"{CONVBN}, steps 2 and 4 after ddp.eval()",
                      model="convbn", steps=4, eval_mode=True)),
          compare=buffers_each_forward),
    Check("4.3", "no_sync accumulates locally with no collective, then the next synced backward averages all",
          weight=4, section="4",
          runs=(train("minddp", f"{CONVBN}, 4 micro-batches per step", model="convbn", steps=2, accumulate=4),
                train("minddp", "6 x Linear(512, 512), 4 micro-batches per step", model="mlp", steps=2, accumulate=4,
                      ddp_kwargs={"bucket_cap_mb": 1}),
                train("minddp", f"{CONVBN}, 3 micro-batches, nested no_sync(), one left by an exception",
                      model="convbn", steps=2, accumulate=3, no_sync="nested"),
                train("minddp", f"{CONVBN}, 3 micro-batches, each after a forward under torch.no_grad()",
                      model="convbn", steps=2, accumulate=3, no_grad_forward=True),
                train("minddp", f"{CONVBN}, 2 micro-batches, each step after a synchronised forward whose output gets "
                      "no backward", model="convbn", steps=2, accumulate=2, dropped_forward=True)),
          compare=no_sync_accumulates),
    Check("4.4", "no_sync() around the backward only", weight=3, section="4",
          runs=(train("minddp", f"{CONVBN}, no_sync around backward only", model="convbn", steps=2, accumulate=3,
                      no_sync="backward"),),
          compare=no_sync_read_in_forward),
    Check("4.5", "frozen parameters (requires_grad=False) are not synchronised", weight=2, section="4",
          runs=(train("minddp", "an MLP with two frozen layers", model="frozen", steps=3,
                      ddp_kwargs={"bucket_cap_mb": 0.01}),),
          compare=lambda o: same_training(o, "4")),
    Check("4.6", "without no_sync every backward averages, buffers broadcast before every forward", weight=2,
          section="4", runs=(train("minddp", f"{CONVBN}, 2 micro-batches, no no_sync", model="convbn", steps=2,
                                   accumulate=2, no_sync="never"),),
          compare=every_backward_syncs),
    Check("4.7", "a weight shared by two modules is bucketed and all-reduced once", weight=1, section="4",
          runs=(train("minddp", "the tied model, bucket_cap_mb=0.005", model="tied", steps=3,
                      ddp_kwargs={"bucket_cap_mb": 0.005}),),
          compare=tied_once),
    Check("4.8", "a parameter without a gradient raises in the next forward, as torch DDP does", weight=1,
          section="4", runs=(train("minddp", "a model whose branch b is unused, find_unused_parameters=False",
                                   model="branchy", steps=2, use_b="none", catch=True),
                             train("minddp", "branch b unused, one bucket per tensor (the buckets before it are "
                                   "reduced)", model="branchy", steps=2, use_b="none", ddp_kwargs={"bucket_cap_mb": 0},
                                   catch=True)),
          compare=raises_like_torch),
]
