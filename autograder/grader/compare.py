"""Comparisons of a student's scenario records with the reference's, with feedback that teaches.

Runs in the trusted grading process, which never imports torch or student code: tensors arrive as
numpy arrays (``WorkerPool(as_numpy=True)``).
"""

from __future__ import annotations

import numpy as np

PHASES = (("buffers", "buffers after forward"), ("grads", "gradients when backward returned"),
          ("params", "parameters after optimizer.step()"))


def fail(message: str) -> None:
    raise AssertionError(message)


def largest_difference(ref: dict, got: dict) -> str:
    """Where the final parameters differ most, from per-parameter sums (cheap to send)."""
    diffs = {name: abs(value - got["param_sums"].get(name, float("nan")))
             for name, value in ref["param_sums"].items()}
    name = max(diffs, key=lambda n: (diffs[n] == diffs[n], diffs[n]))  # NaN (missing) sorts first
    return f"after the last step, the sum of {name} differs by {diffs[name]:.3g}"


def same_training(ref: list, got: list, section: str = "§3") -> None:
    """Bit-for-bit equality of every step's buffers, gradients and parameters on every rank."""
    for rank, (r, g) in enumerate(zip(ref, got)):
        if g["params_at_start"] != r["params_at_start"] or g["buffers_at_start"] != r["buffers_at_start"]:
            fail(f"rank {rank}: parameters or buffers right after construction differ from torch DDP's: "
                 "broadcast every parameter and buffer from rank 0 in the constructor (handout §4).")
    for step in range(len(ref[0]["steps"])):  # step by step, every rank: the first divergence is the cause
        for rank, (r, g) in enumerate(zip(ref, got)):
            rs, gs = r["steps"][step], g["steps"][step]
            for key, what in PHASES:
                if rs[key] != gs[key]:
                    fail(f"rank {rank}, step {step + 1}: {what} differ from torch DDP's (handout {section}); "
                         f"{largest_difference(r, g)}.{hint_for(key, ref, got, rank, step)}")


def hint_for(key: str, ref: list, got: list, rank: int, step: int) -> str:
    """What the difference in ``key`` at (rank, step) most likely means (ranks before ``rank`` matched)."""
    if key == "buffers":
        return " Buffers are broadcast from rank 0 at the START of each forward, before the module runs (handout §4)."
    if key != "grads":
        return ""
    rs, gs = ref[rank]["steps"][step], got[rank]["steps"][step]
    hint = (f" Rank 0's values match torch DDP's at this step but rank {rank}'s do not: does some of your code "
            "run on rank 0 only (if rank == 0)?" if rank > 0 else "")
    if not any(c["op"] == "all_reduce" for phase in gs["backward"] for c in phase):
        if step > 0 and any(c["op"] == "all_reduce" for phase in got[rank]["steps"][0]["backward"] for c in phase):
            return hint + (f" Iteration 1 launched all-reduces but iteration {step + 1} launched none: reset the "
                           "per-iteration state (each bucket's pending count, the next bucket to launch) in "
                           "prepare_for_backward (handout §3).")
        return hint + " Your backward launched no collective at all: the gradients were never averaged."
    mine, theirs, local = gs.get("grad_abs_sums"), rs.get("grad_abs_sums"), gs.get("local_abs_sums")
    if mine and local and _all_close(mine, local) and not _all_close(theirs, local):
        if rs["params"] == gs["params"]:
            return hint + (" When loss.backward() returned, .grad still held this rank's local gradients, yet "
                           "the parameters after optimizer.step() are right: you average too late. Wait for the "
                           "buckets and copy the averaged gradients back in finalize_backward, so backward "
                           "returns with them (handout §3).")
        return hint + (" When loss.backward() returned, .grad still held this rank's local gradients: copy the "
                       "averaged bucket back into .grad in finalize_backward (handout §3).")
    return hint + (scaling_hint(theirs, mine, len(ref)) or
                   " When loss.backward() returns, every gradient must already be averaged: scale by "
                   "1/world_size, all-reduce (SUM), and copy the result back in finalize_backward (handout §3).")


def _all_close(a: dict, b: dict, rtol: float = 1e-6) -> bool:
    return a.keys() == b.keys() and all(abs(a[k] - b[k]) <= rtol * max(abs(a[k]), abs(b[k]), 1e-30) for k in a)


def scaling_hint(theirs: dict | None, mine: dict | None, world_size: int) -> str:
    """If every gradient is torch's times one constant (sums of |grad| per parameter), name the mistake."""
    pairs = [(mine[k], v) for k, v in (theirs or {}).items() if v > 0 and k in (mine or {})]
    if not pairs:
        return ""
    ratios = [m / t for m, t in pairs]
    ratio = ratios[0]
    if ratio <= 0 or any(abs(r - ratio) > 1e-4 * ratio for r in ratios):
        return ""
    if abs(ratio - world_size) < 1e-4 * world_size:
        return (f" Every gradient is {world_size} times torch's: they were summed across ranks but not divided by "
                f"the world size ({world_size}) (handout §3).")
    if abs(ratio * world_size - 1) < 1e-4:
        return (f" Every gradient is 1/{world_size} of torch's: they were divided by the world size twice "
                "(handout §3).")
    divisor = world_size / ratio
    if abs(divisor - round(divisor)) < 1e-4 * divisor and round(divisor) != world_size:
        return (f" Every gradient is {ratio:.4g} times torch's: they were divided by {round(divisor)} instead of "
                f"the world size ({world_size}); use dist.get_world_size() (handout §3).")
    return ""


def close_training(ref: list, got: list, rtol: float = 1e-6, atol: float = 1e-7) -> None:
    for rank, (r, g) in enumerate(zip(ref, got)):
        for name, value in r["params"].items():
            mine = g["params"][name]
            if not np.allclose(mine, value, rtol=rtol, atol=atol):
                diff = float(np.max(np.abs(mine.astype(np.float64) - value.astype(np.float64))))
                first = [x["steps"][0].get("grad_abs_sums") for x in (r, g)]  # same parameters: exact ratios
                fail(f"rank {rank}, {name}: differs from torch DDP by up to {diff:.3g} after training "
                     f"(allowed: rtol {rtol}, atol {atol}); handout §3.{scaling_hint(first[0], first[1], len(ref))}")
    digests = {g["steps"][-1]["params"] for g in got}
    if len(digests) != 1:
        fail("the replicas diverged: every rank must end with bit-for-bit identical parameters (handout §3).")


def allreduces(record: dict, step: int, micro: int = -1) -> list[str]:
    """'size dtype' of each all-reduce in one backward, in launch order."""
    return [f"{c['sizes'][0][0] if c['sizes'] and c['sizes'][0] else 0} {c['dtypes'][0] if c['dtypes'] else ''}"
            for c in record["steps"][step]["backward"][micro] if c["op"] == "all_reduce"]


def same_allreduces(ref: dict, got: dict, rule: str) -> None:
    """Every backward from iteration 2 on (rank 0) launches torch's all-reduces (elements, dtype), in order."""
    for step in range(1, len(ref["steps"])):
        for micro in range(len(ref["steps"][step]["backward"])):
            mine, theirs = allreduces(got, step, micro), allreduces(ref, step, micro)
            if mine != theirs:
                fail(f"step {step + 1}, backward {micro + 1}: {rule}:\n" + side_by_side(mine, theirs))


def side_by_side(left: list, right: list, left_name: str = "yours", right_name: str = "torch DDP") -> str:
    width = max([len(left_name)] + [len(str(x)) for x in left]) + 2
    rows = [f"    {'#':>3}  {left_name:<{width}}{right_name}"]
    for i in range(max(len(left), len(right))):
        a = str(left[i]) if i < len(left) else "-"
        b = str(right[i]) if i < len(right) else "-"
        mark = "" if a == b else "   <- differs"
        rows.append(f"    {i:>3}  {a:<{width}}{b}{mark}")
    return "\n".join(rows[:60])


def ascii_overlap(record: dict, step: int) -> str:
    """A one-line picture of when all-reduces were launched relative to the last gradient."""
    count = record["steps"][step]["allreduces_before_last_grad"]
    total = len([c for c in record["steps"][step]["backward"][-1] if c["op"] == "all_reduce"])
    return ("    backward |" + "#" * 20 + "|  <- last gradient computed here\n"
            f"    launched before it: {count} of {total} all-reduces")
