# GENERATED from solutions/checks/part2.py by tools/assign.py (staff: edit that file, then `make assignment`).
# Provided code: do not edit it by hand; the grader uses its own copy.
"""Part 2 — gradient bucketing (handout §2): the checks and their public inputs.

The reference is torch's own ``_compute_bucket_assignment_by_size``, run beside yours on the same meta
tensors. Common mistakes are named by running torch's assignment on inputs that make the same mistake
(forward order, limits one byte higher, the first limit dropped, one dtype for all).
"""

from __future__ import annotations

import random

from checks.check import NONE, Check, Outcome, Run, fail
from checks.compare import in_index_order, mistakes_in_index_order, outcome_text, same_outcomes

ELEMENT_BYTES = {"float64": 8, "float32": 4, "float16": 2, "bfloat16": 2, "uint8": 1}
MIB_F32 = 262144  # float32 elements in one MiB


def case(sizes: list[int], limits: list[int], dtypes: list[str] | None = None, order: list[int] | None = None,
         devices: list[str] | None = None) -> dict:
    """Tensors of ``sizes`` elements (float32 unless ``dtypes``; on the "meta" device unless ``devices``), byte
    ``limits``, optional visiting order."""
    c = {"sizes": sizes, "dtypes": dtypes or ["float32"] * len(sizes), "limits": limits}
    if order:
        c["order"] = order
    if devices:
        c["devices"] = devices
    return c


def random_cases(seed: int, count: int) -> list[dict]:
    """Seeded random cases, small ones first (so a failure shows a small counterexample)."""
    rng = random.Random(seed)
    kinds = ["float32", "float64", "float16", "bfloat16"]
    cases = []
    for i in range(count):
        n = rng.randint(1, 2 + i // 100)
        dtypes = kinds[:rng.randint(1, 4)]
        cases.append(case([rng.randint(1, 64) if rng.random() > 0.05 else 0 for _ in range(n)],  # empty ones too
                          [rng.choice([0, 1, 2, 4, 8, 32, 64, 100, 256, 1000]) for _ in range(rng.randint(1, 3))],
                          [rng.choice(dtypes) for _ in range(n)]))
    return cases


# Each mistake as the inputs under which torch's assignment makes it.
def _forward_order(c: dict) -> dict:
    return c if "order" in c else {**c, "order": list(range(len(c["sizes"])))}


def _seal_above(c: dict) -> dict:
    return {**c, "limits": [limit + 1 for limit in c["limits"]]}


def _first_limit_ignored(c: dict) -> dict:
    return {**c, "limits": c["limits"][-1:]}


def _dtypes_mixed(c: dict) -> dict:
    sizes = [n * ELEMENT_BYTES[d] for n, d in zip(c["sizes"], c["dtypes"], strict=True)]
    return {**c, "sizes": sizes, "dtypes": ["uint8"] * len(sizes)}


PROBE = "ask torch with `make probe-buckets` (handout §2.4)"
MISTAKES = {
    "parameters are visited in registration (forward) order instead of reverse order: see reason (a) of handout "
    "§2.2": _forward_order,
    f"buckets are sealed only when their bytes go above the limit: on a bucket that lands exactly on its limit, "
    f"{PROBE} what torch does": _seal_above,
    f"every bucket gets the last limit: {PROBE} how it applies a list of limits": _first_limit_ignored,
    "dtypes are mixed in one bucket: see reason (b) of handout §2.2": _dtypes_mixed,
}
OLDEST_FIRST = "unfinished buckets are closed oldest group first instead of the most recently first-seen group first (R6)"


def bucket_run(cases: list[dict], label: str) -> Run:
    return Run("bucket_cases", {"cases": cases}, ref={"reference": True}, label=label,
               mistakes={text: {"cases": [make(c) for c in cases]} for text, make in MISTAKES.items()})


def visiting_order(c: dict) -> list[int]:
    return c.get("order") or list(range(len(c["sizes"]) - 1, -1, -1))


def sealed_flags(c: dict, buckets: list[list[int]]) -> list[bool]:
    """Which of ``buckets`` (torch's, in its numbering) were sealed at their limit, not left unfinished."""
    sealed_count: dict[str, int] = {}
    flags = []
    for bucket in buckets:
        dtype = c["dtypes"][bucket[0]]
        k = sealed_count.get(dtype, 0)
        limit = c["limits"][min(k, len(c["limits"]) - 1)]
        flags.append(sum(c["sizes"][i] * ELEMENT_BYTES[c["dtypes"][i]] for i in bucket) >= limit)
        if flags[-1]:
            sealed_count[dtype] = k + 1
    return flags


def oldest_group_first(c: dict, buckets: list[list[int]]) -> list[list[int]]:
    """``buckets`` (torch's) with the groups' unfinished buckets closed oldest group first (the mistake)."""
    first_seen = {}
    for index in visiting_order(c):
        first_seen.setdefault(c["dtypes"][index], len(first_seen))
    unfinished = [position for position, sealed in enumerate(sealed_flags(c, buckets)) if not sealed]
    ordered = sorted(unfinished, key=lambda p: first_seen[c["dtypes"][buckets[p][0]]])
    result = list(buckets)
    for position, source in zip(unfinished, ordered, strict=True):
        result[position] = buckets[source]
    return result


def numbered_by_group(c: dict, buckets: list[list[int]], groups_by: str) -> list[list[int]]:
    """``buckets`` (torch's) with the sealed ones numbered group by group instead of in the order they were
    sealed (the mistake): groups in the order they were first seen (``groups_by`` "seen") or first sealed a
    bucket ("sealed"); the unfinished buckets stay last, in torch's order."""
    flags = sealed_flags(c, buckets)
    sealed = [b for b, f in zip(buckets, flags, strict=True) if f]
    dtypes = [c["dtypes"][i] for i in visiting_order(c)] if groups_by == "seen" else \
        [c["dtypes"][b[0]] for b in sealed]
    rank = {dtype: dtypes.index(dtype) for dtype in dtypes}
    return sorted(sealed, key=lambda b: rank[c["dtypes"][b[0]]]) + \
        [b for b, f in zip(buckets, flags, strict=True) if not f]


BY_GROUP = {"seen": "sealed buckets are numbered group by group (all of the first-seen dtype's, then the next "
                    f"dtype's): {PROBE} how it numbers buckets that different dtypes seal in turn",
            "sealed": "sealed buckets are numbered group by group (all of the dtype that sealed a bucket first, "
                      f"then the next dtype's): {PROBE} how it numbers buckets that different dtypes seal in turn"}


def reverse_order_run(counts: list[int], label: str) -> Run:
    return Run("reverse_orders", {"counts": counts}, ref=NONE, label=label)


def compare_reverse_orders(o: Outcome) -> None:
    for n, g in zip(o.run.kwargs["counts"], o.got[0], strict=True):
        expected = list(range(n - 1, -1, -1))
        if g != {"value": expected}:
            forward = g == {"value": list(range(n))}
            fail(f"reverse_order({n})\n  yours:    {outcome_text(g)}\n  expected: {expected!r}\n"
                 "Handout §2: reverse_order(n) is [n-1, ..., 1, 0], every index once; [] for 0."
                 + ("\nYours is the registration (forward) order instead of reverse order: backward produces the "
                    "gradients roughly in reverse registration order." if forward else ""))


def describe(c: dict) -> str:
    return (f"sizes (elements) {c['sizes']}, dtypes {c['dtypes']}, limits (bytes) {c['limits']}"
            + (f", order {c['order']}" if "order" in c else "") + (f", devices {c['devices']}" if "devices" in c else ""))


def compare_buckets(rule: str):
    def compare(o: Outcome) -> None:
        if o.run.fn == "reverse_orders":
            return compare_reverse_orders(o)
        mistakes = dict(o.mistakes)
        cases = o.run.kwargs["cases"]
        mistakes[OLDEST_FIRST] = [[{"value": oldest_group_first(c, r["value"])} if "value" in r else r
                                   for c, r in zip(cases, o.ref[0], strict=True)]]
        for groups_by, text in BY_GROUP.items():
            mistakes[text] = [[{"value": numbered_by_group(c, r["value"], groups_by)} if "value" in r else r
                               for c, r in zip(cases, o.ref[0], strict=True)]]
        # The rule is what the check's cases are built to test; the difference shown may break another one of §2.
        same_outcomes(Outcome(o.run, o.got, o.ref, mistakes), describe,
                      f"(expected: torch's own assignment) What this check's cases test: {rule}")
    return compare


BASIC = [case([n * MIB_F32 for n in (10, 2, 8, 20, 4)], [12 * 2**20]),  # the lecture's exercise 3: {p4,p3},{p2,p1,p0}
         case([3, 1, 4, 1, 5], [12]), case([100], [4])]
REVERSE_ORDERS = [0, 1, 2, 5]
SEALING = [case([2, 2, 2], [8]), case([1, 1, 1, 1], [4])]  # each tensor reaches the limit exactly / in pairs
FIRST_LIMIT = [case([1] * 10, [4, 16]), case([2, 2, 2, 2], [8, 100]),
               case([1, 1, 1, 1, 1, 1], [4, 100], ["float32", "float16"] * 3)]  # whose first bucket: each dtype's?
DTYPES = [case([2, 1, 2, 1], [16], ["float32", "float64", "float32", "float64"]),
          case([1, 1], [100], ["float64", "float32"]),  # nothing sealed: the float64 bucket (seen last) comes first
          case([4, 4, 4, 4], [16], order=[1, 3, 0, 2]),
          case([4, 2, 4], [16], ["float32", "float64", "float32"]),  # sealed float32, float64, float32: [[2], [1], [0]]
          case([1, 1, 1, 1], [8], devices=["meta", "cpu", "meta", "cpu"]),  # one dtype, two devices: two groups (all
          # sealed: with two devices, unfinished buckets close in the order of torch's hash map, which §2 leaves open)
          case([3, 0, 2, 0], [8])]  # empty tensors are bucketed like any other (0 bytes)

# -- overlap_bytes: what each bucket's all-reduce can overlap with ------------------------------------------------
def random_buckets(rng: random.Random, n: int, order: list[int] | None = None) -> list[list[int]]:
    """Tensors 0..n-1 in ``order`` (default: a random one), cut into non-empty buckets at random places (none for
    n = 0): any partition, as ``overlap_bytes`` and Part 5's simulator take them."""
    indices = list(order) if order is not None else list(range(n))
    if order is None:
        rng.shuffle(indices)
    cuts = sorted(rng.sample(range(1, n), rng.randint(0, n - 1))) if n > 1 else []
    return [indices[a:b] for a, b in zip([0, *cuts], [*cuts, n], strict=True)] if n else []


def overlap_case(sizes: list[int], buckets: list[list[int]], ready_order: list[int],
                 dtypes: list[str] | None = None) -> dict:
    """Tensors of ``sizes`` elements (float32 unless ``dtypes``), any partition into ``buckets``, and the order
    backward produces their gradients."""
    return {"sizes": sizes, "dtypes": dtypes or ["float32"] * len(sizes), "buckets": buckets,
            "ready_order": ready_order}


def random_overlap_cases(seed: int, count: int) -> list[dict]:
    """Seeded random cases, small ones first: buckets cut from the guessed (reverse) order as torch cuts them, or
    any partition; gradients ready in the guessed order, nearly so, or in any order."""
    rng = random.Random(seed)
    kinds = ["float32", "float64", "float16", "uint8"]
    cases = []
    for i in range(count):
        n = rng.randint(0, min(14, 2 + i // 25))  # 0: no tensors, no buckets
        sizes = [rng.randint(1, 64) if rng.random() > 0.1 else 0 for _ in range(n)]
        ready = list(range(n - 1, -1, -1))
        shape = rng.choice(["guess", "swapped", "any"])
        if shape == "swapped":  # the guess is nearly right: a few neighbours swapped
            for _ in range(rng.randint(1, 3)):
                k = rng.randrange(n - 1) if n > 1 else 0
                ready[k:k + 2] = ready[k:k + 2][::-1]
        elif shape == "any":
            rng.shuffle(ready)
        visit = list(range(n - 1, -1, -1)) if rng.random() < 0.6 else rng.sample(range(n), n)
        buckets = random_buckets(rng, n, visit)
        cases.append(overlap_case(sizes, buckets, ready, [rng.choice(kinds) for _ in range(n)]))
    return cases


# Each mistake as the inputs under which the reference makes it.
def _positions(c: dict) -> dict[int, int]:
    return {index: k for k, index in enumerate(c["ready_order"])}


def _launched_when_complete(c: dict) -> dict:
    """Each bucket launched as soon as it is complete: the reference on the buckets sorted that way; ``reorder``
    puts the results back in index order (``compare_overlap``)."""
    position = _positions(c)
    order = sorted(range(len(c["buckets"])), key=lambda b: max(position[i] for i in c["buckets"][b]))
    return {**c, "buckets": [c["buckets"][b] for b in order], "reorder": order}


def _first_gradient(c: dict) -> dict:
    position = _positions(c)
    return {**c, "buckets": [[min(bucket, key=position.__getitem__)] for bucket in c["buckets"]]}


def _counted_in_gradients(c: dict) -> dict:
    return {**c, "sizes": [1] * len(c["sizes"]), "dtypes": ["uint8"] * len(c["sizes"])}


def _completing_counted(c: dict) -> dict:
    """The gradient that completes a bucket counted as still to come: each tensor i becomes an empty tensor 2i,
    produced just before tensor 2i + 1 of i's bytes, and the buckets wait for the empty ones."""
    sizes, dtypes = [], []
    for n, d in zip(c["sizes"], c["dtypes"], strict=True):
        sizes += [0, n]
        dtypes += [d, d]
    return {**c, "sizes": sizes, "dtypes": dtypes, "buckets": [[2 * i for i in b] for b in c["buckets"]],
            "ready_order": [j for i in c["ready_order"] for j in (2 * i, 2 * i + 1)]}


OVERLAP_MISTAKES = {
    "each bucket is launched as soon as it is complete: DDP launches the buckets in index order (handout §2.5)":
        _launched_when_complete,
    "a bucket is taken as launched when its FIRST gradient is produced: its all-reduce needs all of them":
        _first_gradient,
    "what is left is counted in gradients, not in bytes": _counted_in_gradients,
    "the gradient that completes a bucket is counted as still to be produced: it is produced before the launch":
        _completing_counted,
}


def overlap_run(cases: list[dict], label: str) -> Run:
    return Run("overlap_cases", {"cases": cases}, label=label,
               mistakes={text: {"cases": [make(c) for c in cases]} for text, make in OVERLAP_MISTAKES.items()})


def describe_overlap(c: dict) -> str:
    dtypes = "" if set(c["dtypes"]) <= {"float32"} else f", dtypes {c['dtypes']}"
    return (f"overlap_bytes on sizes (elements) {c['sizes']}{dtypes}, buckets {c['buckets']}, "
            f"ready_order {c['ready_order']}")


def compare_overlap(o: Outcome) -> None:
    mistakes = mistakes_in_index_order(o, _in_index_order)
    same_outcomes(Outcome(o.run, o.got, o.ref, mistakes), describe_overlap,
                  "(expected: the reference's answer) Handout §2.5: for each bucket, the bytes of the gradients "
                  "backward produces after DDP launches that bucket's all-reduce.")


def _in_index_order(result: dict, order: list[int]) -> dict:
    return {"value": in_index_order(result["value"], order)} if isinstance(result.get("value"), list) else result


EXERCISE3 = [n * MIB_F32 for n in (10, 2, 8, 20, 4)]
OVERLAP = [overlap_case(EXERCISE3, [[4, 3], [2, 1, 0]], [4, 3, 2, 1, 0]),  # the lecture's exercise 3: the guess holds
           overlap_case(EXERCISE3, [[0, 1], [2, 3], [4]], [4, 3, 2, 1, 0]),  # filled in forward order
           overlap_case(EXERCISE3, [[4, 3], [2, 1, 0]], [3, 4, 1, 0, 2]),  # the guess is wrong
           overlap_case([2, 2, 2, 2], [[3], [2], [1], [0]], [2, 3, 0, 1]),  # a complete bucket waits its turn
           overlap_case([], [], []), overlap_case([5], [[0]], [0]),
           overlap_case([3, 0, 1], [[2, 1], [0]], [1, 2, 0], ["float64", "float32", "float16"])]

CHECKS = [
    Check("2.1", "the visiting order, the lecture's exercise 3 and small cases", weight=3, section="2",
          runs=(reverse_order_run(REVERSE_ORDERS, "reverse_order of 0, 1, 2 and 5 parameters"),
                bucket_run(BASIC, "the lecture's exercise 3 and small cases")),
          compare=compare_buckets("Handout §2: the visiting order (R1), and where torch seals a bucket (R3).")),
    Check("2.2", "buckets whose bytes land exactly on their limit", weight=2, section="2",
          runs=(bucket_run(SEALING, "tensors that reach the limit exactly"),),
          compare=compare_buckets(f"Handout §2 (R3): when torch seals a bucket; {PROBE}.")),
    Check("2.3", "a list of limits", weight=2, section="2",
          runs=(bucket_run(FIRST_LIMIT, "two limits, one and two dtypes"),),
          compare=compare_buckets(f"Handout §2 (R4): which bucket gets which limit of the list; {PROBE}.")),
    Check("2.4", "several dtypes and devices, empty tensors, a given order", weight=2, section="2",
          runs=(bucket_run(DTYPES, "mixed dtypes, two devices, empty tensors and a given order"),),
          compare=compare_buckets("Handout §2: what may share a bucket (R2), a tensor with no elements (R3), how "
                                  "buckets are numbered when several groups seal in turn (R5), the unfinished buckets "
                                  "(R6), and a given `order` (R1).")),
    Check("2.5", "agrees with torch's assignment on 5,000 random cases", weight=6, section="2",
          runs=(bucket_run(random_cases(seed=2026, count=5000), "5,000 seeded random cases (smallest first)"),),
          compare=compare_buckets("Handout §2 (the first, smallest failing case is shown).")),
    Check("2.6", "what each bucket's all-reduce can overlap with (overlap_bytes)", weight=3, section="2",
          runs=(overlap_run(OVERLAP + random_overlap_cases(seed=2026, count=300),
                            "the lecture's exercise 3, small cases and 300 seeded random ones (smallest first)"),),
          compare=compare_overlap),
]
