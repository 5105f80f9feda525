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
        for step, (rs, gs) in enumerate(zip(r["steps"], g["steps"])):
            for key, what in PHASES:
                if rs[key] != gs[key]:
                    fail(f"rank {rank}, step {step + 1}: {what} differ from torch DDP's (handout {section}); "
                         f"{largest_difference(r, g)}.{hint_for(key, rs, gs)}")


def hint_for(key: str, rs: dict, gs: dict) -> str:
    if key == "buffers":
        return " Buffers are broadcast from rank 0 at the START of each forward (handout §4)."
    if key == "grads":
        ops = [c["op"] for phase in gs["backward"] for c in phase]
        if not ops:
            return " Your backward launched no collective at all: the gradients were never averaged."
        return (" When loss.backward() returns, every gradient must already be averaged: scale by "
                "1/world_size, all-reduce (SUM), and copy the result back in finalize_backward (handout §3).")
    return ""


def close_training(ref: list, got: list, rtol: float = 1e-6, atol: float = 1e-7) -> None:
    for rank, (r, g) in enumerate(zip(ref, got)):
        for name, value in r["params"].items():
            mine = g["params"][name]
            if not np.allclose(mine, value, rtol=rtol, atol=atol):
                diff = float(np.max(np.abs(mine.astype(np.float64) - value.astype(np.float64))))
                fail(f"rank {rank}, {name}: differs from torch DDP by up to {diff:.3g} after training "
                     f"(allowed: rtol {rtol}, atol {atol}); handout §3.")
    digests = {g["steps"][-1]["params"] for g in got}
    if len(digests) != 1:
        fail("the replicas diverged: every rank must end with bit-for-bit identical parameters (handout §3).")


def allreduces(record: dict, step: int, micro: int = -1) -> list[str]:
    """'size dtype' of each all-reduce in one backward, in launch order."""
    return [f"{c['sizes'][0][0] if c['sizes'] and c['sizes'][0] else 0} {c['dtypes'][0] if c['dtypes'] else ''}"
            for c in record["steps"][step]["backward"][micro] if c["op"] == "all_reduce"]


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
