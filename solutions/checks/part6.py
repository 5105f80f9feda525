"""Part 6 — the written questions (handout §6): the format of each answer here, its value on Gradescope.

Q1-Q7 and Q11: your copy checks the FORMAT (types, lengths, names) and, for the questions your own code can
answer (Q1, Q2, Q6, Q11: ``checks.written``), that your answer agrees with it; `make test` says which. The
values are graded by the autograder only, against the reference answers, integers and names exactly, floats
within a relative tolerance of 1e-3.

Q8-Q10 are about YOUR machine, so there is no reference answer: their checks (below ``answer_check``) are
consistency checks, and your copy runs them in full, exactly as Gradescope does. Q8's measurement must have
the shape ``make measure`` prints; Q9's α and β must be what the fit of the handout gives on that very
measurement (the check refits it) and physically plausible; Q10's predictions must be what the α-β model
gives with your own α and β (the check recomputes them). A wrong Q8 or Q9 is charged once: Q10 is judged
on your own Q9, whatever it is.
"""

from __future__ import annotations

import math
import numbers

from checks.check import NONE, Check, Failure, Outcome, Run, fail
from checks.written import FROM_CODE, Q2_PARAMS, USES

ANSWER_RTOL = 1e-3
INT, REAL, CAP, BUCKETS = "an int", "a number", "a cap in bytes (an int) or None", "buckets"
# (check number, function of answers.py, what it answers, points as the handout's heading gives them, the format)
QUESTIONS = [
    ("6.1", "q1_rank_layout", "Q1: rank layout", 0.5, (INT, INT, INT, INT)),
    ("6.2", "q2_buckets", "Q2: the buckets of eight parameters", 1.0, BUCKETS),
    ("6.3", "q3_overlap_ms", "Q3: an overlapped timeline", 1.0, (REAL, REAL, REAL)),
    ("6.4", "q4_cap_zero_ms", "Q4: why not one bucket per tensor", 1.0, (REAL, REAL, REAL)),
    ("6.5", "q5_skip_sync", "Q5: syncing every few steps", 1.0, (REAL, REAL, REAL)),
    ("6.6", "q6_bucket_size", "Q6: what your experiments found about bucket sizes", 1.0, (CAP, CAP, REAL, REAL, REAL)),
    ("6.7", "q7_collective_counts", "Q7: collectives with no_sync", 1.0, (INT, INT, INT, INT)),
    ("6.11", "q11_order_and_scale", "Q11: what your experiments found about order and scale", 1.0,
     (REAL, REAL, CAP, REAL)),
]
MEASURED = ["q8_measurements", "q9_alpha_beta", "q10_predictions"]  # Q8-Q10: graded by consistency
NAMES = [q[1] for q in QUESTIONS] + MEASURED
Q2_PARAMETERS = {name for name, _, _ in Q2_PARAMS}


def is_a(value, kind: str) -> bool:
    if isinstance(value, bool):
        return False
    if kind == CAP:
        return value is None or isinstance(value, numbers.Integral)
    return isinstance(value, numbers.Integral) if kind == INT else isinstance(value, numbers.Real)


def format_problem(name: str, value, kind) -> str | None:
    if kind == BUCKETS:
        if not (isinstance(value, list) and value and all(isinstance(b, list) and b for b in value)):
            return f"{name}() must return a list of non-empty lists of names, got {value!r}"
        names = [n for bucket in value for n in bucket]
        if not all(isinstance(n, str) for n in names) or sorted(names) != sorted(Q2_PARAMETERS):
            return f"{name}() must name each of {sorted(Q2_PARAMETERS)} exactly once, got {names}"
        return None
    if not (isinstance(value, (tuple, list)) and len(value) == len(kind)):
        return f"{name}() must return a tuple of {len(kind)} values, got {value!r}"
    for position, (item, k) in enumerate(zip(value, kind, strict=True)):
        if not is_a(item, k):
            return f"{name}()[{position}] must be {k}, got {item!r}"
    return None


def matches(mine, theirs) -> bool:
    if isinstance(theirs, (list, tuple)):
        return isinstance(mine, (list, tuple)) and len(mine) == len(theirs) and all(
            matches(a, b) for a, b in zip(mine, theirs, strict=True))
    if isinstance(theirs, float) or (isinstance(theirs, int) and isinstance(mine, float)):
        return is_a(mine, REAL) and math.isclose(mine, theirs, rel_tol=ANSWER_RTOL, abs_tol=1e-12)
    return type(mine) is type(theirs) and mine == theirs


def agreement_with_your_code(o: Outcome, name: str, title: str, value) -> None:
    """Locally (no reference answer): fail if your answer disagrees with what your own code gives for the
    question, else note what was checked; the value itself is graded on Gradescope only."""
    own = o.got[0].get(f"{name} from your code")
    if own is None:
        o.notes.append(f"{title}: only the format of your answer is checked here; its value is graded on Gradescope.")
    elif "error" in own:
        o.notes.append(f"{title}: the format of your answer is checked here; your {USES[name]} raised "
                       f"{own['error']}, so it could not be compared with your code. Its value is graded on Gradescope.")
    elif not matches(value, own["value"]):
        fail(f"{name}() returned {value!r}, but your own {USES[name]} give {own['value']!r} for this question's "
             "data (handout §6): one of the two is wrong. (The value is graded on Gradescope, against the reference.)")
    else:
        o.notes.append(f"{title}: your answer has the right format and agrees with your {USES[name]}; whether it is "
                       "right is graded on Gradescope.")


def answer_check(number: str, name: str, title: str, points: float, kind) -> Check:
    def compare(o: Outcome) -> None:
        mine = o.got[0][name]
        if "error" in mine:
            fail(f"{name}() raised {mine['error']}: {mine['message']} (handout §6)")
        problem = format_problem(name, mine["value"], kind)
        if problem:
            fail(problem + " (handout §6)")
        if o.ref is None:
            if o.run.kwargs.get("from_code") or name not in FROM_CODE:  # (those in FROM_CODE: their second run)
                agreement_with_your_code(o, name, title, mine["value"])
        elif not matches(mine["value"], o.ref[0][name]["value"]):
            fail(f"{name}() returned {mine['value']!r}: not the expected answer (numbers within a relative "
                 f"tolerance of {ANSWER_RTOL:g}; lists and tuples in the order the docstring gives; handout §6).")

    label = "your answers.py (format" + (", and agreement with your own code)" if name in FROM_CODE else " only)")
    # Your answers first, alone; then, as advice, beside what your own code gives (a run of your other files,
    # which must not cost Part 6 a check if they break it: the values are graded against the reference).
    return Check(number, title, weight=points, section="6", public_share=0.0, compare=compare,
                 runs=(Run("answers", {"names": NAMES}, ref=NONE, label=label),) + ((
                     Run("answers", {"names": NAMES, "from_code": True}, ref=NONE, label=label, advisory=True),)
                     if name in FROM_CODE else ()))


ANSWER_CHECKS = [answer_check(*q) for q in QUESTIONS]


# -- Q8-Q10: your machine's all-reduce, its α and β, and what they predict ----------------------------------
# No reference number exists for your machine: each check judges your answers against each other (your Q9
# against a refit of your Q8, your Q10 against the α-β model with your Q9), plus plausibility bounds.

MEASUREMENT_KEYS = ("world_size", "allreduce_s", "small_tensors", "small_tensor_bytes", "many_small_s", "one_flat_s")
MIN_SIZES, MIN_DECADES = 6, 3  # at least 6 sizes, the largest at least 10^3 times the smallest
FIT_RTOL = 0.02  # your α and β against the fit of your own measurements (the fit itself is exact arithmetic)
ALPHA_RANGE_S = (1e-7, 1e-1)  # 0.1 µs (a fast network card) .. 100 ms (a machine far too busy to measure on)
BETA_RANGE_BYTES_PER_S = (1e6, 1e13)  # 1 MB/s .. 10 TB/s: 1/β between 1e-13 and 1e-6 seconds per byte
FLOAT32_BYTES = 4
# Q10's model: the lecture's ResNet-50 on a ring of 16 ranks, 25 MB buckets or a cap of 0, without overlap.
# These are minddp.timeline's numbers (resnet50_model(); handout/tests checks them against it).
PREDICTION_WORLD_SIZE = 16
PREDICTION_CAP_MB = 25  # decimal MB, as the lecture's
RESNET50_BACKWARD_MS = 32.93
RESNET50_GRAD_BYTES = 25_557_032 * FLOAT32_BYTES
RESNET50_BUCKETS = 4  # at the 25 MB cap
RESNET50_TENSORS = 161  # a cap of 0: one bucket, so one all-reduce, per gradient tensor
PREDICTIONS = ("(a) the measured ratio many_small_s / one_flat_s of your Q8 dict",
               "(b) the ratio your α and β predict for the same all-reduces",
               f"(c) ResNet-50's step on {PREDICTION_WORLD_SIZE} ranks with {PREDICTION_CAP_MB} MB buckets, "
               "no overlap (ms)",
               f"(d) ResNet-50's step on {PREDICTION_WORLD_SIZE} ranks with a cap of 0, no overlap (ms)")
MEASURE_FIX = "run `make measure` and paste the whole dict it prints as the return value of q8_measurements()"


def positive(value) -> bool:
    return is_a(value, REAL) and math.isfinite(value) and value > 0


def ring_terms(nbytes: float, world_size: int) -> tuple[float, float]:
    """The model's ring all-reduce (handout §5.1) as its coefficients (of α, of 1/β)."""
    rounds = 2 * (world_size - 1)
    return float(rounds), rounds / world_size * nbytes


def fit_alpha_beta(allreduce_s: dict, world_size: int, relative: bool = True) -> tuple[float, float]:
    """(α in s, β in bytes/s) minimizing Σ ((model(n) − t) / t)² over the measured (n, t), the model's time of an
    all-reduce of n bytes being linear in α and 1/β (``ring_terms``).

    The model is linear in α and 1/β, so this is linear least squares. Dividing each equation by its time
    makes each size count alike: with absolute errors (``relative=False``, a mistake the messages name) the
    largest sizes alone would decide α. Solved by the 2x2 normal equations (Cramer's rule)."""
    rows = []
    for nbytes, seconds in allreduce_s.items():
        a, b = ring_terms(nbytes, world_size)
        weight = 1.0 / seconds if relative else 1.0
        rows.append((a * weight, b * weight, seconds * weight))
    saa, sab, sbb = (sum(r[i] * r[j] for r in rows) for i, j in ((0, 0), (0, 1), (1, 1)))
    say, sby = (sum(r[i] * r[2] for r in rows) for i in (0, 1))
    det = saa * sbb - sab * sab
    alpha, inverse_beta = (say * sbb - sby * sab) / det, (saa * sby - sab * say) / det
    return alpha, (1.0 / inverse_beta if inverse_beta else math.inf)


def read_measurements(value) -> dict:
    """Q8's dict with its sizes as ints (JSON turns them into strings on the way from the worker), or a
    Failure that says what to fix."""
    if not isinstance(value, dict):
        fail(f"q8_measurements() must return a dict, got {value!r:.200}: {MEASURE_FIX}")
    missing = [key for key in MEASUREMENT_KEYS if key not in value]
    if missing:
        fail(f"q8_measurements() has no key {', '.join(map(repr, missing))}: {MEASURE_FIX}")
    for key, least in (("world_size", 2), ("small_tensors", 2), ("small_tensor_bytes", 1)):
        if not (is_a(value[key], INT) and value[key] >= least):
            fail(f"q8_measurements()[{key!r}] must be an int of at least {least}, got {value[key]!r}: {MEASURE_FIX}")
    for key in ("many_small_s", "one_flat_s"):
        if not positive(value[key]):
            fail(f"q8_measurements()[{key!r}] must be a positive number of seconds, got {value[key]!r}: {MEASURE_FIX}")
    sizes = value["allreduce_s"]
    if not isinstance(sizes, dict):
        fail(f"q8_measurements()['allreduce_s'] must be a dict {{bytes: seconds}}, got {sizes!r:.200}: {MEASURE_FIX}")
    measured = {}
    for key, seconds in sizes.items():
        nbytes = int(key) if isinstance(key, int) or (isinstance(key, str) and key.isdigit()) else None
        if not nbytes or not positive(seconds):
            fail(f"q8_measurements()['allreduce_s'] maps {key!r} to {seconds!r}: each key must be a positive "
                 f"whole number of bytes and each value a positive number of seconds: {MEASURE_FIX}")
        measured[nbytes] = float(seconds)
    if len(measured) < MIN_SIZES or max(measured) < 10**MIN_DECADES * min(measured):
        fail(f"q8_measurements()['allreduce_s'] has {len(measured)} sizes from {min(measured, default=0)} to "
             f"{max(measured, default=0)} bytes: the fit needs at least {MIN_SIZES} sizes spanning at least "
             f"{MIN_DECADES} orders of magnitude (largest >= {10**MIN_DECADES} x smallest): {MEASURE_FIX}")
    return {**value, "allreduce_s": dict(sorted(measured.items()))}


def answer_of(o: Outcome, name: str):
    """What your ``name()`` returned, or a Failure naming what it raised."""
    mine = o.got[0][name]
    if "error" in mine:
        fail(f"{name}() raised {mine['error']}: {mine['message']} (handout §6)")
    return mine["value"]


def measurements_of(o: Outcome, question: str) -> dict:
    """Your Q8 dict, for the check of a later question (its failure says to fix Q8 first)."""
    try:
        return read_measurements(answer_of(o, "q8_measurements"))
    except Failure as failure:
        fail(f"{question} is computed from your Q8 measurements, which this check cannot use: {failure}")


def alpha_beta_of(o: Outcome) -> tuple[float, float]:
    value = answer_of(o, "q9_alpha_beta")
    problem = format_problem("q9_alpha_beta", value, (REAL, REAL))
    if problem:
        fail(problem + " (α in seconds, β in bytes per second, as plain floats: `.item()` of a tensor; handout §6, Q9)")
    return float(value[0]), float(value[1])


def fit_mistakes(m: dict) -> list[tuple[str, float, float]]:
    """(what went wrong, the α and β it gives) for the usual mistakes of Q9, on your measurements ``m``."""
    k = m["world_size"]
    alpha, beta = fit_alpha_beta(m["allreduce_s"], k)
    absolute = fit_alpha_beta(m["allreduce_s"], k, relative=False)
    return [
        ("the latency counted once per all-reduce instead of once per round",
         2 * (k - 1) * alpha, beta),
        ("β in float32 elements per second: n is the number of BYTES", alpha, beta / FLOAT32_BYTES),
        ("β in seconds per byte: β is a bandwidth, in bytes per second (as in minddp.timeline)", alpha, 1 / beta),
        ("absolute errors minimized: divide each equation by its measured time (relative errors)", *absolute),
        ("α in microseconds: give seconds", alpha * 1e6, beta),
        ("α in milliseconds: give seconds", alpha * 1e3, beta),
        ("β in GB/s: give bytes per second", alpha, beta / 1e9),
        ("β in MB/s: give bytes per second", alpha, beta / 1e6),
    ]


def deviation(value: float, fit: float) -> str:
    """How far ``value`` is from ``fit``: a percentage when close, else a factor ("1e+06 times the fit").
    The boundary is no round factor: the usual mistakes give exactly 2x or 1/2 (latency counted once at 2
    ranks), and rounding must not decide which words a student reads, locally or on Gradescope."""
    ratio = value / fit
    return f"off by {ratio - 1:+.1%}" if 0.6 <= ratio <= 1.6 else f"{ratio:.3g} times the fit"


def check_fit(o: Outcome) -> None:
    m = measurements_of(o, "Q9")
    alpha, beta = alpha_beta_of(o)
    fit_alpha, fit_beta = fit_alpha_beta(m["allreduce_s"], m["world_size"])
    low_a, high_a = ALPHA_RANGE_S
    low_b, high_b = BETA_RANGE_BYTES_PER_S
    if not (low_a <= fit_alpha <= high_a and low_b <= fit_beta <= high_b):
        fail(f"the fit of handout §6 (Q9) to your q8_measurements() gives α = {fit_alpha:.4g} s and β = "
             f"{fit_beta:.4g} bytes/s, outside what a real link does (α in [{low_a:g}, {high_a:g}] s, β in "
             f"[{low_b:g}, {high_b:g}] bytes/s): the measurement is not usable. Run `make measure` again on an idle "
             "machine (close other programs) and paste its new dict into q8_measurements().")
    off = [f"{name} is {deviation(value, fit)}" for name, value, fit in (("α", alpha, fit_alpha), ("β", beta, fit_beta))
           if not math.isclose(value, fit, rel_tol=FIT_RTOL)]
    if off:
        named = [text for text, a, b in fit_mistakes(m)
                 if math.isclose(alpha, a, rel_tol=FIT_RTOL) and math.isclose(beta, b, rel_tol=FIT_RTOL)]
        fail(f"q9_alpha_beta() returned α = {alpha:.4g} s, β = {beta:.4g} bytes/s; the least-squares fit of handout "
             f"§6 (Q9) to your own q8_measurements() gives α = {fit_alpha:.4g} s, β = {fit_beta:.4g} bytes/s: "
             f"{' and '.join(off)} (tolerance {FIT_RTOL:.0%}). "
             + (f"It looks like {named[0]}." if named else
                "Fit the time your model of handout §5.1 gives an all-reduce of n bytes on your world_size ranks "
                "(linear in α and 1/β) to every size, minimizing the sum of squared RELATIVE errors ((model - t) / "
                "t)², and compute it from q8_measurements()."))
    if not (low_a <= alpha <= high_a and low_b <= beta <= high_b):
        fail(f"q9_alpha_beta() returned α = {alpha:.4g} s, β = {beta:.4g} bytes/s: outside α in [{low_a:g}, "
             f"{high_a:g}] s, β in [{low_b:g}, {high_b:g}] bytes/s (handout §6, Q9).")


def predictions(m: dict, alpha: float, beta: float) -> tuple[float, float, float, float]:
    """Q10 from measurements ``m`` and α (s), β (bytes/s), by the α-β model of handout §5."""
    k, count, each = m["world_size"], m["small_tensors"], m["small_tensor_bytes"]

    def ring(nbytes: float, world_size: int) -> float:
        a, b = ring_terms(nbytes, world_size)
        return a * alpha + b / beta

    def no_overlap_ms(all_reduces: int) -> float:
        # Backward, then every bucket's all-reduce, one after another: the latency once per bucket, the
        # bandwidth term once for all the bytes (it is linear in n).
        a, b = ring_terms(RESNET50_GRAD_BYTES, PREDICTION_WORLD_SIZE)
        return RESNET50_BACKWARD_MS + 1e3 * (all_reduces * a * alpha + b / beta)

    return (m["many_small_s"] / m["one_flat_s"], count * ring(each, k) / ring(count * each, k),
            no_overlap_ms(RESNET50_BUCKETS), no_overlap_ms(RESNET50_TENSORS))


def check_predictions(o: Outcome) -> None:
    m = measurements_of(o, "Q10")
    alpha, beta = alpha_beta_of(o)
    if not (positive(alpha) and positive(beta)):
        fail(f"Q10 is computed from your Q9, whose α = {alpha!r} s and β = {beta!r} bytes/s are not positive "
             "numbers: fix q9_alpha_beta() first (handout §6, Q9).")
    value = answer_of(o, "q10_predictions")
    problem = format_problem("q10_predictions", value, (REAL,) * len(PREDICTIONS))
    if problem:
        fail(problem + " (handout §6, Q10)")
    expected = predictions(m, alpha, beta)
    for position, (mine, right, what) in enumerate(zip(value, expected, PREDICTIONS, strict=True)):
        if math.isclose(mine, right, rel_tol=ANSWER_RTOL):
            continue
        hint = ""
        if position >= 2 and math.isclose(mine * 1e3, right, rel_tol=ANSWER_RTOL):
            hint = " It looks like seconds: give milliseconds."
        elif position >= 2 and math.isclose(mine, right - RESNET50_BACKWARD_MS, rel_tol=ANSWER_RTOL):
            hint = f" It looks like the communication alone: the step includes the {RESNET50_BACKWARD_MS} ms backward."
        elif position == 1 and math.isclose(mine, 1 / right, rel_tol=ANSWER_RTOL):
            hint = " It looks like one flat over many small: give many small over one flat."
        fail(f"q10_predictions()[{position}], {what}, is {mine!r}; with your own Q8 dict and your Q9 α = {alpha:.4g} s, "
             f"β = {beta:.4g} bytes/s the α-β model gives {right:.6g} (relative tolerance {ANSWER_RTOL:g}).{hint} "
             "(handout §6, Q10)")


def check_measurements(o: Outcome) -> None:
    read_measurements(answer_of(o, "q8_measurements"))


def measured_check(number: str, title: str, points: float, compare) -> Check:
    """A check of Q8-Q10: all its points from your own answers, which your copy checks in full."""
    return Check(number, title, weight=points, section="6", public_share=1.0, compare=compare,
                 runs=(Run("answers", {"names": NAMES}, ref=NONE, label="your answers.py (your own measurements)"),))


MEASURED_CHECKS = [
    measured_check("6.8", "Q8: your all-reduce measurements", 0.5, check_measurements),
    measured_check("6.9", "Q9: alpha and beta fitted to your measurements", 1.0, check_fit),
    measured_check("6.10", "Q10: predictions from your alpha and beta", 1.0, check_predictions),
]
CHECKS = [c for c in ANSWER_CHECKS if c.number != "6.11"] + MEASURED_CHECKS + \
    [c for c in ANSWER_CHECKS if c.number == "6.11"]
