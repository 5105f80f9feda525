"""Provided — the comparisons the checks use, with feedback that names the mistake when one explains it.

They run in the caller (pytest, or the grader's trusted process), never in a worker, and need no torch:
tensors arrive as numpy arrays. Each function raises ``Failure`` with the message you read.
"""

from __future__ import annotations

import math

import numpy as np

from checks.check import Outcome, fail

PHASES = (("buffers", "buffers after forward"), ("grads", "gradients when backward returned"),
          ("params", "parameters after optimizer.step()"))


# -- training records (Parts 3, 4, bonus): yours against torch DDP's, rank by rank, step by step ------------

def same_training(o: Outcome, section: str = "3") -> None:
    """Bit-for-bit equality of the start, and of every step's buffers, gradients and parameters, on every rank."""
    ref, got = o.ref, o.got
    for rank, (r, g) in enumerate(zip(ref, got, strict=True)):
        if len(g["steps"]) != len(r["steps"]):
            fail(f"rank {rank}: the scenario recorded {len(g['steps'])} steps, not {len(r['steps'])}")
        if g["params_at_start"] != r["params_at_start"] or g["buffers_at_start"] != r["buffers_at_start"]:
            fail(f"rank {rank}: parameters or buffers right after construction differ from torch DDP's: "
                 "broadcast every parameter and buffer from rank 0 in the constructor (handout §4).")
    for step in range(len(ref[0]["steps"])):  # step by step, every rank: the first divergence is the cause
        for rank, (r, g) in enumerate(zip(ref, got, strict=True)):
            rs, gs = r["steps"][step], g["steps"][step]
            for key, what in PHASES:
                if rs[key] != gs[key]:
                    fail(f"rank {rank}, step {step + 1}: {what} differ from torch DDP's (handout §{section})"
                         f"{largest_difference(r, g)}.{training_hint(o, key, rank, step)}")


def largest_difference(ref: dict, got: dict) -> str:
    """Where the final parameters differ most, from per-parameter sums (cheap to send): '; after the last step,
    ...', or nothing if those sums agree."""
    diffs = {name: abs(value - got["param_sums"].get(name, float("nan")))
             for name, value in ref["param_sums"].items()}
    name = max(diffs, key=lambda n: (diffs[n] == diffs[n], diffs[n]))  # NaN (missing) sorts first
    if diffs[name] == 0:
        return ""
    return f"; after the last step, the sum of {name} differs by {diffs[name]:.3g}"


def group_size(o: Outcome, rank: int) -> int:
    """The size K of the process group ``rank``'s DDP averages over: its subgroup's, or the world's."""
    return next((len(ranks) for ranks in o.run.kwargs.get("subgroups") or [] if rank in ranks), len(o.ref))


def training_hint(o: Outcome, key: str, rank: int, step: int) -> str:
    """What a difference in ``key`` at (rank, step) shows (ranks before ``rank`` matched): a cause the records
    point to, or where the values first differ; never a cause they do not show."""
    if key == "buffers":
        return buffers_hint(o, rank, step)
    if key != "grads":
        return ""
    ref, got = o.ref, o.got
    rs, gs = ref[rank]["steps"][step], got[rank]["steps"][step]
    hint = (f" Rank 0's values match torch DDP's at this step but rank {rank}'s do not: does some of your code "
            "run on rank 0 only (if rank == 0)?" if rank > 0 else "")
    mine_ar = [allreduces(got[rank], step, micro) for micro in range(len(gs["backward"]))]
    theirs_ar = [allreduces(ref[rank], step, micro) for micro in range(len(rs["backward"]))]
    if len(mine_ar) > 1 and any(mine_ar[:-1]) and not any(theirs_ar[:-1]):
        return hint + (" A backward whose forward ran inside no_sync() launched all-reduces: with no_sync, "
                       "gradients only accumulate locally (handout §4).")
    if not any(mine_ar) and any(theirs_ar):
        if step > 0 and any(c["op"] == "all_reduce" for phase in got[rank]["steps"][0]["backward"] for c in phase):
            return hint + (f" Iteration 1 launched all-reduces but iteration {step + 1} launched none: reset the "
                           "per-iteration state (what counts each bucket's missing gradients, which bucket launches next) in "
                           "prepare_for_backward (handout §3).")
        return hint + (f" Your backward launched no all-reduce, where torch DDP's launched {len(theirs_ar[-1])} on "
                       "the same process group: the gradients were never averaged. Every collective goes to "
                       "process_group (handout §3).")
    if step > 0 and sorted(mine_ar[-1]) == sorted(theirs_ar[-1]) and mine_ar[-1] != theirs_ar[-1]:
        return hint + (" Your all-reduces have torch's sizes but not its order: launch bucket i+1 only after "
                       "bucket i, strictly in index order, never in the order buckets fill (handout §3):\n"
                       + side_by_side(mine_ar[-1], theirs_ar[-1]))
    early = [c for c in gs["forward"][-1] if c["op"] == "all_reduce"]
    if early and not any(c["op"] == "all_reduce" for c in rs["forward"][-1]):
        return hint + (f" Your forward launched {len(early)} all-reduce(s), before backward computed any gradient: "
                       "buckets whose parameters all counted as unused, and so ready at once. Torch marks the unused "
                       "parameters ready at the backward's first gradient, not in the forward; and with "
                       "find_unused_parameters, every parameter the outputs depend on is used, whatever holds the "
                       "outputs (lists, tuples, dicts; handout §4, bonus A).")
    # Whatever the buckets, one backward reduces every gradient once: as many elements of each dtype as torch's.
    mine_dt, theirs_dt = elements_by_dtype(got[rank], step), elements_by_dtype(ref[rank], step)
    if mine_dt != theirs_dt:
        return hint + (f" Your backward all-reduced {dtype_text(mine_dt)}; torch DDP's {dtype_text(theirs_dt)}: each "
                       "gradient is reduced once, in a bucket of its own dtype (one flat tensor of its parameters' "
                       "dtype on their device; handout §3, C1).")
    return hint + (values_hint(o, rank, step) or accumulated_hint(ref[rank], got[rank], step)
                   or first_difference(rs.get("grad_abs_sums"), gs.get("grad_abs_sums"), step))


def values_hint(o: Outcome, rank: int, step: int) -> str:
    """A cause the gradients' sums show: local gradients kept, read before the wait, one micro-batch only, or
    every gradient torch's times one constant."""
    rs, gs = o.ref[rank]["steps"][step], o.got[rank]["steps"][step]
    mine, theirs, local = gs.get("grad_abs_sums"), rs.get("grad_abs_sums"), gs.get("local_abs_sums")
    size = group_size(o, rank)
    if mine and local and all_close(mine, local) and not all_close(theirs, local):
        if rs["params"] == gs["params"]:
            return (" When loss.backward() returned, .grad still held this rank's local gradients, yet "
                    "the parameters after optimizer.step() are right: you average too late. Wait for the "
                    "buckets and copy the averaged gradients back at the end of backward, so backward "
                    "returns with them (handout §3).")
        return (" When loss.backward() returned, .grad still held this rank's local gradients: copy the averaged "
                + ("result back into .grad at the end of backward: with a comm hook, the tensor the future returns "
                   "(here a new tensor, not the bucket's buffer; handout §3, C4)." if o.run.kwargs.get("hook") else
                   "bucket back into .grad at the end of backward (handout §3)."))
    if mine and local and theirs and o.run.kwargs.get("use_b") == "no_sync":
        kept = [k for k in mine if k in local and k in theirs and all_close({k: mine[k]}, {k: local[k]})
                and not all_close({k: theirs[k]}, {k: local[k]})]
        if kept:
            return (f" {', '.join(kept)} kept this rank's local gradient where torch DDP's averaged it: in this "
                    "iteration they got gradients only in the micro-batch under no_sync(), and torch counts that "
                    "as use in the iteration, so with find_unused_parameters they are averaged like any other "
                    "(handout §4, bonus A, A3).")
    scaled = {k: v / size for k, v in (local or {}).items()}
    if mine and local and all_close(mine, scaled) and not all_close(theirs, scaled):
        return (" When loss.backward() returned, .grad held this rank's own gradients divided by the world "
                "size: the bucket as it was launched, read before its all-reduce completed. Wait on each "
                "bucket's work (or future) before you read its buffer (handout §3).")
    kept = micro_batches_kept(o, rank, step)
    if kept:
        return (f" When the synchronised backward returned, each gradient was the average of the last {kept} "
                f"micro-batch(es) alone: the {len(gs['backward']) - kept} before, under no_sync(), did not "
                "accumulate into .grad. Inside no_sync() each backward only accumulates into .grad (nothing zeroes "
                "or overwrites it); the next synchronised backward averages the accumulated sum (handout §4).")
    return scaling_hint(theirs, mine, size, grouped=bool(o.run.kwargs.get("subgroups")))


def micro_batches_kept(o: Outcome, rank: int, step: int) -> int:
    """j if rank's gradients are the average over its group of the last j micro-batches' local gradients alone
    (plain sums per parameter, which average), for some j fewer than all of them, where torch's are not; else 0."""
    ranks = next((r for r in o.run.kwargs.get("subgroups") or [] if rank in r), range(len(o.got)))
    micros = [o.got[r]["steps"][step].get("micro_local_sums") or [] for r in ranks]
    mine, theirs = o.got[rank]["steps"][step].get("grad_sums"), o.ref[rank]["steps"][step].get("grad_sums")
    count = len(micros[0])
    if not mine or count < 2 or any(len(m) != count or any(s.keys() != mine.keys() for s in m) for m in micros):
        return 0
    for kept in range(1, count):
        average = {n: sum(s[n] for m in micros for s in m[-kept:]) / len(micros) for n in mine}
        near = lambda a, avg=average: all(abs(a.get(n, float("nan")) - avg[n]) <= 1e-5 * max(abs(avg[n]), abs(mine[n]))
                                          + 1e-9 for n in mine)  # noqa: E731
        if near(mine) and not near(theirs):
            return kept
    return 0


def buffers_hint(o: Outcome, rank: int, step: int) -> str:
    """Why the buffers after a forward differ, from what the forwards launched."""
    ops = lambda x: [[c["op"] for c in f] for f in x["steps"][step]["forward"]]  # noqa: E731
    mine, theirs = ops(o.got[rank]), ops(o.ref[rank])
    for micro, (m, t) in enumerate(zip(mine, theirs, strict=False)):
        where = f"forward {micro + 1} of step {step + 1}" if len(mine) > 1 else f"step {step + 1}'s forward"
        if t and not m:
            return (f" Your {where} launched no broadcast where torch DDP's broadcast rank 0's buffers ({len(t)} "
                    "broadcast(s)) at the start of the forward (handout §4.3, W4).")
        if m and not t:
            return (f" Your {where} broadcast the buffers where torch DDP's did not: torch skips the broadcast in some "
                    "forwards; look at the forwards before this one, and watch torch's with `make probe` (handout "
                    "§4.3, W4).")
    if mine == theirs:
        return (" Your forwards launched torch's broadcasts, yet the buffers after forward differ: broadcast rank "
                "0's buffers at the START of the forward, before the module runs (which updates them from this "
                "rank's data), into the buffers themselves (handout §4).")
    return ""


def elements_by_dtype(record: dict, step: int) -> dict[str, int]:
    """Elements all-reduced per dtype in the last backward of ``step``."""
    counts: dict[str, int] = {}
    for c in record["steps"][step]["backward"][-1]:
        if c["op"] == "all_reduce" and c["dtypes"]:
            counts[c["dtypes"][0]] = counts.get(c["dtypes"][0], 0) + elements(c)
    return counts


def dtype_text(counts: dict[str, int]) -> str:
    return ", ".join(f"{n:,} {dtype} elements" for dtype, n in sorted(counts.items())) or "nothing"


def accumulated_hint(ref: dict, got: dict, step: int) -> str:
    """If, from the first differing step on, each gradient is torch's summed over this and the earlier steps
    (plain sums per parameter, which add up), say so: something kept from one iteration to the next."""
    if step == 0 or any("grad_sums" not in s for s in ref["steps"][:step + 1] + got["steps"][step:step + 1]):
        return ""
    mine = got["steps"][step]["grad_sums"]
    total = {n: sum(s["grad_sums"].get(n, 0.0) for s in ref["steps"][:step + 1]) for n in mine}
    scale = {n: sum(s["grad_abs_sums"].get(n, 0.0) for s in ref["steps"][:step + 1]) for n in mine}
    if not mine or mine.keys() != ref["steps"][step]["grad_sums"].keys() or \
            any(abs(mine[n] - total[n]) > 1e-5 * scale[n] + 1e-12 for n in mine):
        return ""
    return (f" Step{'s 1 to' if step > 1 else ''} {step} matched torch DDP's bit for bit; in step {step + 1} each "
            f"of your gradients is the sum of torch's averaged gradients of steps 1 to {step + 1} (per-parameter "
            "sums agree): state kept across iterations, e.g. a bucket added to instead of overwritten (handout §3).")


def first_difference(theirs: dict | None, mine: dict | None, step: int) -> str:
    """No cause recognised: where the gradients first differ, and no more."""
    theirs, mine = theirs or {}, mine or {}
    differ = [n for n, v in theirs.items() if not all_close({n: v}, {n: mine.get(n, float("nan"))})]
    if differ:
        yours = f"{mine[differ[0]]:.6g}" if differ[0] in mine else "no gradient"
        where = (f" The first gradient that differs: {differ[0]} (sum of |grad|: yours {yours}, torch DDP's "
                 f"{theirs[differ[0]]:.6g}).")
    else:
        where = " The sums of |grad| agree with torch DDP's, but not every bit."
    return where + (f" Step{'s 1 to' if step > 1 else ''} {step} matched torch DDP's bit for bit: look at what "
                    "your code carries from one iteration to the next." if step > 0 else "")


def all_close(a: dict, b: dict, rtol: float = 1e-6) -> bool:
    return a.keys() == b.keys() and all(abs(a[k] - b[k]) <= rtol * max(abs(a[k]), abs(b[k]), 1e-30) for k in a)


def scaling_hint(theirs: dict | None, mine: dict | None, world_size: int, grouped: bool = False) -> str:
    """If every gradient is torch's times one constant (sums of |grad| per parameter), name the mistake."""
    pairs = [(mine[k], v) for k, v in (theirs or {}).items()
             if k in (mine or {}) and math.isfinite(mine[k]) and math.isfinite(v) and v > 0]  # inf, NaN: no ratio
    if not pairs:
        return ""
    ratios = [m / t for m, t in pairs]
    ratio = ratios[0]
    if ratio <= 0 or any(abs(r - ratio) > 1e-4 * ratio for r in ratios):
        return ""
    size = "the process group's size" if grouped else "the world size"
    if abs(ratio - world_size) < 1e-4 * world_size:
        return (f" Every gradient is {world_size} times torch's: they were summed across ranks but not divided by "
                f"{size} ({world_size}) (handout §3).")
    if abs(ratio * world_size - 1) < 1e-4:
        return f" Every gradient is 1/{world_size} of torch's: they were divided by {size} twice (handout §3)."
    divisor = world_size / ratio
    if abs(divisor - round(divisor)) < 1e-4 * divisor and round(divisor) != world_size:
        return (f" Every gradient is {ratio:.4g} times torch's: they were divided by {round(divisor)} instead of "
                f"{size} ({world_size})" + (", dist.get_world_size(process_group)" if grouped else "")
                + " (handout §3).")
    return ""


def close_training(o: Outcome, rtol: float = 1e-6, atol: float = 1e-7) -> None:
    """At 3 ranks x * (1/3) rounds and gloo's summation order depends on the buffer layout: ~1 ulp apart."""
    for rank, (r, g) in enumerate(zip(o.ref, o.got, strict=True)):
        for name, value in r["params"].items():
            mine = g["params"].get(name)
            if mine is None or mine.shape != value.shape or not np.allclose(mine, value, rtol=rtol, atol=atol):
                diff = (float(np.max(np.abs(mine.astype(np.float64) - value.astype(np.float64))))
                        if mine is not None and mine.shape == value.shape else float("nan"))
                first = [x["steps"][0].get("grad_abs_sums") for x in (r, g)]
                fail(f"rank {rank}, {name}: differs from torch DDP by up to {diff:.3g} after training "
                     f"(allowed: rtol {rtol}, atol {atol}); handout §3.{scaling_hint(first[0], first[1], len(o.ref))}")
    if len({g["steps"][-1]["params"] for g in o.got}) != 1:
        fail("the replicas diverged: every rank must end with bit-for-bit identical parameters (handout §3).")


def allreduces(record: dict, step: int, micro: int = -1) -> list[str]:
    """'elements dtype' of each all-reduce in one backward, in launch order."""
    return [collective_text(c) for c in record["steps"][step]["backward"][micro] if c["op"] == "all_reduce"]


def elements(collective: dict) -> int:
    """Elements of a recorded collective's (first) input."""
    sizes = collective["sizes"]
    return sizes[0][0] if sizes and sizes[0] else 0


def collective_text(collective: dict) -> str:
    """'elements dtype' of a recorded collective, as the messages show it."""
    return f"{elements(collective)} {collective['dtypes'][0] if collective['dtypes'] else ''}"


def same_allreduces(o: Outcome, rule: str, first_step: int = 1) -> None:
    """Every backward from iteration ``first_step + 1`` on launches torch's all-reduces (elements, dtype), in
    order, on every rank."""
    for rank, (ref, got) in enumerate(zip(o.ref, o.got, strict=True)):
        for step in range(first_step, len(ref["steps"])):
            for micro in range(len(ref["steps"][step]["backward"])):
                mine, theirs = allreduces(got, step, micro), allreduces(ref, step, micro)
                if mine != theirs:
                    order = (" They have torch's sizes but not its order: launch bucket i+1 only after bucket i, "
                             "strictly in index order (handout §3)." if sorted(mine) == sorted(theirs) else "")
                    fail(f"rank {rank}, step {step + 1}, backward {micro + 1}: {rule}.{order}\n"
                         + side_by_side(mine, theirs))


def as_planned(o: Outcome, section: str) -> None:
    """The first synchronised backward launches one all-reduce per bucket of the handout's assignment, in index
    order (what torch's run records as planned: its own DDP uses one bucket in its first iteration)."""
    if o.run.kwargs.get("subgroups"):
        return  # a process group's collectives are not recorded (only the default group's are)
    for rank, (r, g) in enumerate(zip(o.ref, o.got, strict=True)):
        mine, planned = allreduces(g, 0), r["planned_allreduces"]
        if mine != planned:
            order = " They have the right sizes but not the order." if sorted(mine) == sorted(planned) else ""
            fail(f"rank {rank}, step 1: the all-reduces of the first synchronised backward (elements, dtype) are not "
                 "one per bucket of torch's assignment, in index order, over every parameter that requires a "
                 f"gradient (empty ones included; handout §{section}).{order}\n"
                 + side_by_side(mine, planned, right_name="the buckets"))


def side_by_side(left: list, right: list, left_name: str = "yours", right_name: str = "torch DDP") -> str:
    width = max([len(left_name)] + [len(str(x)) for x in left]) + 2
    rows = [f"    {'#':>3}  {left_name:<{width}}{right_name}"]
    for i in range(max(len(left), len(right))):
        a = str(left[i]) if i < len(left) else "-"
        b = str(right[i]) if i < len(right) else "-"
        rows.append(f"    {i:>3}  {a:<{width}}{b}{'' if a == b else '   <- differs'}")
    return "\n".join(rows[:60])


def ascii_overlap(record: dict, step: int) -> str:
    """A one-line picture of when all-reduces were launched relative to the last gradient."""
    count = record["steps"][step]["allreduces_before_last_grad"]
    total = len([c for c in record["steps"][step]["backward"][-1] if c["op"] == "all_reduce"])
    return ("    backward |" + "#" * 20 + "|  <- last gradient computed here\n"
            f"    launched before it: {max(count, 0)} of {total} all-reduces")


# -- unit outcomes (Parts 1, 2, 5): {"value": ...} or {"error": ..., "message": ...} per case ---------------

def outcome_text(outcome: dict) -> str:
    if "error" in outcome:
        return f"raised {outcome['error']}: {outcome['message']}"
    return repr(_sorted_keys(outcome["value"]))


def _sorted_keys(value):
    """Dicts with their keys in order, so the reference's answer reads the same from expected.json or live."""
    if isinstance(value, dict):
        return {k: _sorted_keys(value[k]) for k in sorted(value, key=str)}
    if isinstance(value, list):
        return [_sorted_keys(v) for v in value]
    return value


def close(a, b, rtol: float = 1e-9) -> bool:
    """Equal, with floats within a relative tolerance (nested lists and dicts compared item by item)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(close(a[k], b[k], rtol) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(close(x, y, rtol) for x, y in zip(a, b, strict=True))
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return math.isclose(a, b, rel_tol=rtol, abs_tol=1e-15)
    return a == b


def in_index_order(values: list, order: list[int]) -> list:
    """``values`` listed in ``order`` (values[k] belongs to position order[k]), put back in index order."""
    result = [None] * len(order)
    for position, index in enumerate(order):
        result[index] = values[position]
    return result


def mistakes_in_index_order(o: Outcome, put_back) -> dict:
    """``o.mistakes``, each result of a case made with a ``reorder`` (a mistake run on its buckets in another
    order) put back in index order by ``put_back(result, order)``."""
    return {text: [[put_back(r, c["reorder"]) if "reorder" in c else r
                    for c, r in zip(o.run.mistakes[text]["cases"], results[0], strict=True)]]
            for text, results in o.mistakes.items()}


def same_outcomes(o: Outcome, describe, rule: str, rtol: float | None = None, cases: str = "cases",
                  edge=lambda case: "") -> None:
    """Every case's outcome equals the reference's (floats within ``rtol`` if given). The first failing case
    is shown, with the mistake that reproduces every one of your answers if one of the run's ``mistakes``
    does (the reference's results under each named mistake are in ``o.mistakes``), and the edge of the
    handout it is, if ``edge(case)`` names one."""
    def same(a: dict, b: dict) -> bool:
        if rtol is None:
            return a == b
        return "error" not in a and "error" not in b and close(a["value"], b["value"], rtol)

    inputs, got, ref = o.run.kwargs[cases], o.got[0], o.ref[0]
    for i, (case, r, g) in enumerate(zip(inputs, ref, got, strict=True)):
        if same(g, r):
            continue
        named = [text for text, results in o.mistakes.items()
                 if not same(results[0][i], r) and all(same(m, mine) for m, mine in zip(results[0], got, strict=True))]
        fail(f"{describe(case)}\n  yours:    {outcome_text(g)}\n  expected: {outcome_text(r)}\n"
             + (f"{edge(case)}\n" if edge(case) else "") + rule
             + (f"\nYour answers are exactly what you get when {named[0]}." if named else ""))
