"""The hidden checks, in handout order. Each follows from a sentence of the handout (section in its message).

Parts: 1 process group (10 points), 2 bucketing (15), 3 Reducer (30), 4 wrapper (20), 5 timeline (15),
6 written answers (10, added by answers_checks when the answers file exists); bonus A and B: +5 each.
"""

from __future__ import annotations

import ast
import math
import os
import random

from gradescope_utils.autograder_utils.decorators import number, tags, weight

from .check import LAUNCH, hint, scenario, train
from .compare import allreduces, ascii_overlap, close_training, fail, same_allreduces, same_training, side_by_side

# -- Part 1: the process group ----------------------------------------------------------------------------

GOOD_ENV = {"RANK": "6", "WORLD_SIZE": "12", "LOCAL_RANK": "2", "LOCAL_WORLD_SIZE": "4",
            "MASTER_ADDR": "node0.cluster", "MASTER_PORT": "29400"}
VALID_ENVS = [GOOD_ENV, {**GOOD_ENV, "RANK": "0", "LOCAL_RANK": "0"},
              {**GOOD_ENV, "RANK": "11", "LOCAL_RANK": "3"},
              {"RANK": "0", "WORLD_SIZE": "1", "LOCAL_RANK": "0", "LOCAL_WORLD_SIZE": "1",
               "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "1"}]
# (environment, the variable the error message must name)
INVALID_ENVS = [({k: v for k, v in GOOD_ENV.items() if k != name}, name) for name in GOOD_ENV] + [
    ({**GOOD_ENV, "RANK": "six"}, "RANK"), ({**GOOD_ENV, "RANK": "12"}, "RANK"),
    ({**GOOD_ENV, "WORLD_SIZE": "0"}, "WORLD_SIZE"), ({**GOOD_ENV, "LOCAL_RANK": "4"}, "LOCAL_RANK"),
    ({**GOOD_ENV, "LOCAL_RANK": "1"}, "LOCAL_RANK"), ({**GOOD_ENV, "LOCAL_WORLD_SIZE": "5"}, "LOCAL_WORLD_SIZE"),
    ({**GOOD_ENV, "MASTER_PORT": "65536"}, "MASTER_PORT"), ({**GOOD_ENV, "MASTER_PORT": "x"}, "MASTER_PORT")]
LAYOUTS = [[rank, lws] for lws in (1, 2, 3, 4, 8) for rank in range(0, 3 * lws)]
TORCHRUN = [[rank, 12, 4, "10.1.2.3", 29500 + rank] for rank in range(12)] + [[0, 1, 1, "localhost", 80]]
PG_CASES = dict(envs=VALID_ENVS + [env for env, _ in INVALID_ENVS], layouts=LAYOUTS, torchrun=TORCHRUN)


def _outcome_text(outcome: dict) -> str:
    if "error" in outcome:
        return f"raised {outcome['error']}: {outcome['message']}"
    return repr(outcome["value"])


@weight(3)
@number("1.1")
@scenario(part=1, fn="process_group_cases", **PG_CASES)
def check_read_env(ref, got):
    """Part 1: read_torchrun_env reads valid torchrun environments"""
    for env, r, g in zip(VALID_ENVS, ref[0]["envs"], got[0]["envs"]):
        if g != r:
            fail(f"read_torchrun_env({env})\n  yours:    {_outcome_text(g)}\n  expected: {_outcome_text(r)}\n"
                 "(handout §1)")


@weight(3)
@number("1.2")
@scenario(part=1, fn="process_group_cases", **PG_CASES)
def check_env_errors(ref, got):
    """Part 1: invalid environments raise DistEnvError naming the variable to fix"""
    for (env, variable), g in zip(INVALID_ENVS, got[0]["envs"][len(VALID_ENVS):]):
        if "error" not in g:
            fail(f"read_torchrun_env({env}) returned {g['value']!r}; it must raise DistEnvError naming "
                 f"{variable} (handout §1)")
        if g["error"] == "NotImplementedError" or not g.get("value_error"):
            fail(f"read_torchrun_env({env}) raised {g['error']}: {g['message']}; expected DistEnvError "
                 f"(a ValueError) naming {variable} (handout §1)")
        if variable not in g["message"]:
            fail(f"read_torchrun_env({env}) raised {g['error']}: {g['message']!r}, which does not name "
                 f"{variable}, the variable to fix (handout §1)")


@weight(2)
@number("1.3")
@scenario(part=1, fn="process_group_cases", **PG_CASES)
def check_rank_layout(ref, got):
    """Part 1: rank layout and the environment torchrun gives each rank"""
    for (rank, lws), r, g in zip(LAYOUTS, ref[0]["layouts"], got[0]["layouts"]):
        if g != r:
            swapped = "value" in g and g["value"][0] == r["value"][0][::-1]
            fail(f"rank {rank} with {lws} processes per node: node_and_local_rank, global_rank gave "
                 f"{_outcome_text(g)}; expected {_outcome_text(r)} (handout §1)"
                 + ("\nYour node index and local rank are swapped: node_and_local_rank returns (node, local rank), "
                    "ranks laid out node by node." if swapped else ""))
    for args, r, g in zip(TORCHRUN, ref[0]["torchrun"], got[0]["torchrun"]):
        if g != r:
            fail(f"torchrun_env{tuple(args)}\n  yours:    {_outcome_text(g)}\n  expected: {_outcome_text(r)}\n"
                 "(handout §1: all six variables, values as strings)")


@weight(2)
@number("1.4")
@hint("a training script calls init_process_group() with no arguments under torchrun: read the torchrun "
      "environment, initialise the default process group (gloo without CUDA), return the DistEnv; "
      "destroy_process_group() leaves it.")
@scenario(part=1, fn=LAUNCH, world_size=0, nproc=2)
def check_torchrun_launch(ref, got):
    """Part 1: init_process_group joins a job started by a real torchrun (2 processes)"""
    for rank, report in enumerate(got):
        # What 2 processes on one node must see (the same expectation as the public launch test).
        expected = {"rank": rank, "world_size": 2, "local_rank": rank, "node_rank": 0, "sum": 3.0, "dist_rank": rank}
        if report != expected:
            fail(f"under `torchrun --standalone --nproc_per_node=2`, rank {rank}'s script reported\n  {report}\n"
                 f"expected\n  {expected}\n(handout §1; the probe is tests/launch_probe.py)")


# -- Part 2: bucketing -------------------------------------------------------------------------------------

def _case(sizes, limits, dtypes=None, order=None):
    case = {"sizes": sizes, "dtypes": dtypes or ["float32"] * len(sizes), "limits": limits}
    if order:
        case["order"] = order
    return case


MIB_F32 = 262144  # float32 elements in one MiB
BASIC_CASES = [_case([n * MIB_F32 for n in (6, 3, 9, 14, 2)], [10 * 1048576]),
               _case([5, 7, 1, 9, 4, 4, 2], [32]), _case([100], [4]), _case([1, 1, 1, 1], [1000])]
SEALING_CASES = [_case([4, 4, 4, 4], [16]), _case([2, 2, 2, 2, 2, 2], [8]), _case([3, 1, 4, 4], [16])]
FIRST_BUCKET_CASES = [_case([1] * 12, [4, 16]), _case([8, 2, 2, 8, 1, 1], [4, 24]),
                      _case([5] * 9, [20, 40, 60]), _case([3] * 5, [0, 100])]
DTYPE_CASES = [_case([2, 1, 2, 1, 3], [16], ["float32", "float64", "float32", "float64", "float16"]),
               _case([1, 1], [100], ["float64", "float32"]),
               _case([4, 4, 4, 4, 4, 4], [8, 24], ["bfloat16", "float32"] * 3)]
ORDER_CASES = [_case([4, 4, 4, 4], [16], order=[1, 3, 0, 2]), _case([2, 3, 5, 7], [20], order=[0, 1, 2, 3])]


def random_bucket_cases(seed: int, count: int) -> list[dict]:
    rng = random.Random(seed)
    dtypes = ["float32", "float64", "float16", "bfloat16"]
    cases = []
    for i in range(count):
        n = rng.randint(1, 3 + i // 40)
        kinds = dtypes[:rng.randint(1, 4)]
        cases.append(_case([rng.randint(1, 64) for _ in range(n)],
                           [rng.choice([0, 1, 4, 8, 32, 64, 100, 256, 1000]) for _ in range(rng.randint(1, 3))],
                           [rng.choice(kinds) for _ in range(n)]))
    return cases


ELEMENT_BYTES = {"float64": 8, "float32": 4, "float16": 2, "bfloat16": 2}
# Common mistakes, each as a change to the rules: feedback names the one that reproduces a student's answer.
BUCKET_MISTAKES = {
    "reverse": "parameters visited in registration (forward) order instead of reverse order",
    "seal": "buckets sealed at > instead of >= the limit",
    "first": "the first bucket's limit ignored (every bucket used the last limit)",
    "dtypes": "dtypes mixed in one bucket (each dtype must fill its own buckets)",
    "close": "unfinished buckets closed oldest group first instead of the most recently first-seen group first",
}


def bucket_rules(case: dict, mistake: str = "") -> list[list[int]]:
    """The bucketing rules of handout §2 in plain Python (no torch here), optionally with one mistake."""
    n = len(case["sizes"])
    order = case.get("order") or (list(range(n)) if mistake == "reverse" else list(range(n - 1, -1, -1)))
    limits = case["limits"][-1:] if mistake == "first" else case["limits"]
    open_, nbytes, sealed, buckets = {}, {}, {}, []
    for index in order:
        group = "all" if mistake == "dtypes" else case["dtypes"][index]
        if group not in open_:
            open_[group], nbytes[group], sealed[group] = [], 0, 0
        open_[group].append(index)
        nbytes[group] += case["sizes"][index] * ELEMENT_BYTES[case["dtypes"][index]]
        limit = limits[min(sealed[group], len(limits) - 1)]
        if nbytes[group] > limit if mistake == "seal" else nbytes[group] >= limit:
            buckets.append(open_[group])
            open_[group], nbytes[group], sealed[group] = [], 0, sealed[group] + 1
    groups = list(open_) if mistake == "close" else list(reversed(list(open_)))
    return buckets + [open_[g] for g in groups if open_[g]]


def bucket_diagnosis(cases: list[dict], got: list[dict]) -> str:
    """The one mistake that reproduces every answer of the student (if there is one)."""
    answers = [g.get("value") for g in got]
    for key, text in BUCKET_MISTAKES.items():
        if any(a != bucket_rules(c) for c, a in zip(cases, answers)) and \
                all(a == bucket_rules(c, key) for c, a in zip(cases, answers)):
            return f"\nYour buckets are exactly what the rules give with one mistake: {text}."
    return ""


def _bucket_check(cases, ref, got, rule: str) -> None:
    for case, r, g in zip(cases, ref[0], got[0]):
        if g != r:
            fail(f"sizes (elements) {case['sizes']}, dtypes {case['dtypes']}, limits (bytes) {case['limits']}"
                 f"{', order ' + str(case['order']) if 'order' in case else ''}\n"
                 f"  yours:  {_outcome_text(g)}\n  torch's: {_outcome_text(r)}\n{rule}"
                 + bucket_diagnosis(cases, got[0]))


BUCKET_REF = {"reference": True}  # the reference is torch's own _compute_bucket_assignment_by_size


@weight(3)
@number("2.1")
@scenario(part=2, fn="bucket_cases", ref=BUCKET_REF, cases=BASIC_CASES)
def check_buckets_basic(ref, got):
    """Part 2: parameters visited in reverse order, sealed at the limit"""
    _bucket_check(BASIC_CASES, ref, got, "handout §2: visit parameters in reverse registration order; a bucket "
                  "is sealed as soon as its bytes reach the limit")


@weight(2)
@number("2.2")
@scenario(part=2, fn="bucket_cases", ref=BUCKET_REF, cases=SEALING_CASES)
def check_buckets_sealing(ref, got):
    """Part 2: a bucket is sealed when its bytes are >= the limit"""
    _bucket_check(SEALING_CASES, ref, got, "handout §2: seal when bytes >= limit (not >)")


@weight(2)
@number("2.3")
@scenario(part=2, fn="bucket_cases", ref=BUCKET_REF, cases=FIRST_BUCKET_CASES)
def check_buckets_first_limit(ref, got):
    """Part 2: the first bucket uses the first limit; the last limit repeats"""
    _bucket_check(FIRST_BUCKET_CASES, ref, got, "handout §2: the k-th bucket of a group uses limits[k], the last "
                  "limit repeating")


@weight(2)
@number("2.4")
@scenario(part=2, fn="bucket_cases", ref=BUCKET_REF, cases=DTYPE_CASES + ORDER_CASES)
def check_buckets_dtypes(ref, got):
    """Part 2: each dtype fills its own buckets; unfinished buckets close newest group first; given order"""
    _bucket_check(DTYPE_CASES + ORDER_CASES, ref, got, "handout §2: one bucket holds one dtype; when all tensors "
                  "are placed, close unfinished buckets starting with the most recently first-seen group")


RANDOM_BUCKET_CASES = random_bucket_cases(seed=868, count=1500)


@weight(6)
@number("2.5")
@scenario(part=2, fn="bucket_cases", ref=BUCKET_REF, cases=RANDOM_BUCKET_CASES)
def check_buckets_random(ref, got):
    """Part 2: agrees with torch's assignment on 1,500 random cases"""
    _bucket_check(RANDOM_BUCKET_CASES, ref, got, "handout §2 (the smallest failing case is shown)")


# -- Part 3: the Reducer (graded with the reference wrapper) ------------------------------------------------

@weight(4)
@number("3.1")
@train(part=3, model="mlp", steps=4, ddp_kwargs={"bucket_cap_mb": 1})
def check_mlp_per_layer(ref, got):
    """Part 3: 6 x Linear(512, 512), one bucket per layer: bit for bit equal to torch DDP"""
    same_training(ref, got)


@weight(2)
@number("3.2")
@train(part=3, model="mlp", steps=3, ddp_kwargs={"bucket_cap_mb": 0})
def check_mlp_per_tensor(ref, got):
    """Part 3: one bucket per tensor: bit for bit equal to torch DDP"""
    same_training(ref, got)


@weight(1)
@number("3.3")
@train(part=3, model="mlp", steps=3, ddp_kwargs={"bucket_cap_mb": 100})
def check_mlp_single_bucket(ref, got):
    """Part 3: a single bucket: bit for bit equal to torch DDP"""
    same_training(ref, got)


@weight(2)
@number("3.4")
@hint("the tied weight is ONE parameter used twice in forward: its gradient is accumulated once, so it is "
      "counted once (one hook call) and sits in one bucket slot.")
@train(part=3, model="tied", steps=4, ddp_kwargs={"bucket_cap_mb": 0.005})
def check_tied(ref, got):
    """Part 3: a parameter used twice (tied embedding) is counted once per backward"""
    same_training(ref, got)


@weight(1)
@number("3.5")
@train(part=3, model="mixed", steps=4, ddp_kwargs={"bucket_cap_mb": 0.01})
def check_mixed(ref, got):
    """Part 3: float32 and float64 parameters in their own buckets"""
    same_training(ref, got)


SIZE_MODELS = {"model": "many_small", "steps": 3, "ddp_kwargs": {"bucket_cap_mb_list": [0.005, 0.02]}}


@weight(3)
@number("3.6")
@train(part=3, **SIZE_MODELS)
def check_launch_order(ref, got):
    """Part 3: from iteration 2 on, buckets are launched in index order, as torch DDP does"""
    for step in (1, 2):
        mine, theirs = allreduces(got[0], step), allreduces(ref[0], step)
        if sorted(mine) == sorted(theirs) and mine != theirs:
            fail("your all-reduces have torch's sizes but not its order: launch bucket i+1 only after bucket i, "
                 f"strictly in index order (handout §3). Iteration {step + 1}, rank 0:\n"
                 + side_by_side(mine, theirs))
        if mine != theirs:
            fail(f"iteration {step + 1}, rank 0: the all-reduces of backward (elements, dtype) differ from torch "
                 "DDP's, whose buckets follow reverse registration order from iteration 2 (handout §2, §3):\n"
                 + side_by_side(mine, theirs))


@weight(3)
@number("3.7")
@train(part=3, model="mlp", steps=3, ddp_kwargs={"bucket_cap_mb_list": [1, 2]})
def check_one_allreduce_per_bucket(ref, got):
    """Part 3: exactly one all-reduce per bucket per backward, first bucket small"""
    for rank, (r, g) in enumerate(zip(ref, got)):
        mine, theirs = allreduces(g, 2), allreduces(r, 2)
        if mine != theirs:
            fail(f"rank {rank}, iteration 3: expected one all-reduce per bucket (first limit 1 MiB, then 2 MiB; "
                 f"handout §2, §3):\n" + side_by_side(mine, theirs))
    same_training(ref, got)


@weight(4)
@number("3.8")
@train(part=3, model="mlp", steps=2, ddp_kwargs={"bucket_cap_mb": 1}, hold_back=True)
def check_overlap(ref, got):
    """Part 3: communication overlaps backward (a bucket is launched before the last gradient exists)"""
    if got[1]["steps"][1]["backward_blocked"]:
        fail("your all-reduce blocks backward: while rank 1 held back its first all-reduce, rank 0 could not "
             "compute its remaining gradients, so rank 0 was waiting for communication inside backward. Launch "
             "each bucket with async_op=True, keep the Work (or future), and wait only in finalize_backward "
             "(handout §3).")
    for rank, g in enumerate(got):
        if g["steps"][1]["allreduces_before_last_grad"] < 1:
            fail(f"rank {rank}: no all-reduce was launched before the last gradient of backward was computed. "
                 "Launch each bucket from inside backward, asynchronously (async_op=True), as soon as it and "
                 "every lower-index bucket are ready; wait only in finalize_backward (handout §3).\n"
                 + ascii_overlap(g, 1))


@weight(3)
@number("3.9")
@hint("here rank 0 and rank 1 produce gradients in different orders, so their buckets fill in different "
      "orders. Collectives pair up by call order: launch buckets strictly in index order (bucket i+1 waits for "
      "bucket i's launch), never in the order they fill.")
@train(part=3, model="twobranch", steps=4, ddp_kwargs={"bucket_cap_mb": 0.01})
def check_ready_order_differs(ref, got):
    """Part 3: ranks whose gradients become ready in different orders still agree (ordered launch)"""
    same_training(ref, got)


@weight(3)
@number("3.10")
@train(part=3, world_size=3, model="many_small", steps=4, ddp_kwargs={"bucket_cap_mb_list": [0.005, 0.02]},
       tensors=True)
def check_world_size_3(ref, got):
    """Part 3: 3 ranks, many buckets: within 1e-6 relative of torch DDP, replicas identical"""
    close_training(ref, got)


@weight(2)
@number("3.11")
@hint("the comm hook here returns a NEW tensor (the averaged copy), not the bucket's buffer: copy back the "
      "tensor the future returns.")
@train(part=3, model="mlp", steps=3, hook="record", ddp_kwargs={"bucket_cap_mb": 1})
def check_comm_hook_buckets(ref, got):
    """Part 3: a comm hook sees torch's buckets (index, parameters) and its result is used"""
    for step in (1, 2):
        mine, theirs = got[0]["steps"][step]["buckets"], ref[0]["steps"][step]["buckets"]
        if mine != theirs:
            fail(f"iteration {step + 1}: the GradBuckets passed to the comm hook differ from torch's "
                 "(handout §3, comm hooks):\n" + side_by_side(mine, theirs))
    same_training(ref, got)


@weight(2)
@number("3.12")
@train(part=3, model="mlp", steps=3, hook="fp16", ddp_kwargs={"bucket_cap_mb": 1})
def check_fp16_hook(ref, got):
    """Part 3: the fp16 compression hook gives torch's results bit for bit"""
    same_training(ref, got, "§3 (comm hooks: the buffer holds raw gradients; the hook's result is copied back)")


# -- Part 4: the wrapper (graded with your Reducer if Part 3 passed, else the reference) --------------------

@weight(3)
@number("4.1")
@train(part=4, model="convbn", steps=3, seed_per_rank=True)
def check_construction_broadcast(ref, got):
    """Part 4: every rank starts from rank 0's parameters and buffers"""
    if len({g["params_at_start"] for g in got}) != 1:
        fail("ranks start from different parameters: broadcast rank 0's parameters and buffers in the "
             "constructor (handout §4)")
    same_training(ref, got, "§4")


@weight(4)
@number("4.2")
@hint("broadcast rank 0's buffers at the START of each forward, before the module runs. After it is too late: "
      "BatchNorm has already used this rank's statistics, and overwriting them in place breaks the tensors "
      "autograd saved for backward (\"modified by an inplace operation\").")
@train(part=4, model="convbn", steps=3)
def check_buffers(ref, got):
    """Part 4: rank 0's buffers are broadcast at the start of every forward"""
    theirs = ref[0]["steps"][0]["forward"][0]
    for step, entry in enumerate(got[0]["steps"]):
        if entry["forward"][0] != theirs:
            mine = [c["op"] for c in entry["forward"][0]]
            fail(f"step {step + 1}: your forward launched {mine if mine else 'no broadcast'}; torch DDP "
                 f"broadcasts rank 0's buffers, one broadcast per dtype: {[c['op'] for c in theirs]} (handout §4)")
    same_training(ref, got, "§4")


@weight(5)
@number("4.3")
@hint("inside no_sync() each backward only accumulates into .grad (nothing zeroes or overwrites it); the next "
      "synchronised backward then averages the accumulated sum.")
@train(part=4, model="convbn", steps=2, accumulate=4, no_sync="forward")
def check_no_sync(ref, got):
    """Part 4: no_sync accumulates locally with no collective, then the next synced backward averages all"""
    for rank, g in enumerate(got):
        for step, entry in enumerate(g["steps"]):
            if entry["backward"][:3] != [[], [], []]:
                fail(f"rank {rank}, step {step + 1}: a backward whose forward ran inside no_sync() launched "
                     f"collectives {[[c['op'] for c in b] for b in entry['backward'][:3]]}; it must launch none "
                     "(handout §4)")
    same_training(ref, got, "§4")


@weight(3)
@number("4.4")
@train(part=4, model="mlp", steps=2, accumulate=3, no_sync="backward", ddp_kwargs={"bucket_cap_mb": 1})
def check_no_sync_read_in_forward(ref, got):
    """Part 4: the no_sync switch is read in forward (wrapping only backward still syncs)"""
    for entry in got[0]["steps"]:
        if not all(entry["backward"]):
            fail("a forward outside no_sync() must still synchronise its backward, even if the backward runs "
                 "inside no_sync(): the switch is read in forward (handout §4)")
    same_training(ref, got, "§4")


@weight(2)
@number("4.5")
@hint("a frozen parameter (requires_grad=False) never gets a gradient: it must not be in any bucket, or its "
      "bucket never becomes ready.")
@train(part=4, model="frozen", steps=3, ddp_kwargs={"bucket_cap_mb": 0.01})
def check_frozen(ref, got):
    """Part 4: frozen parameters (requires_grad=False) are not synchronised"""
    same_training(ref, got, "§4")


@weight(2)
@number("4.6")
@train(part=4, model="convbn", steps=2, accumulate=2, no_sync="never")
def check_every_backward_syncs(ref, got):
    """Part 4: without no_sync every backward averages, buffers broadcast before every forward"""
    same_allreduces(ref[0], got[0], "expected one all-reduce per bucket, as torch DDP (elements, dtype; "
                    "handout §2, §4)")
    same_training(ref, got, "§4")


@weight(1)
@number("4.7")
@hint("a weight shared by two modules (the tied embedding) is ONE parameter: hand it to the bucketing and the "
      "Reducer once (module.parameters() lists it once; walking the submodules lists it twice).")
@train(part=4, model="tied", steps=3, ddp_kwargs={"bucket_cap_mb": 0.005})
def check_tied_listed_once(ref, got):
    """Part 4: a weight shared by two modules is bucketed and all-reduced once"""
    same_allreduces(ref[0], got[0], "the all-reduces of backward (elements, dtype) differ from torch DDP's "
                    "(handout §2, §4)")
    same_training(ref, got, "§4")


# -- Part 5: the timeline model ------------------------------------------------------------------------------

def timeline_cases(seed: int = 5) -> list[dict]:
    rng = random.Random(seed)
    cases = []
    for _ in range(12):
        cases.append({"fn": "ring_allreduce_time", "args": [rng.choice([0, 1e3, 4e6, 1e8]), rng.choice([1, 2, 3, 16, 256]),
                                                           rng.choice([1e-6, 1e-5, 5e-5]), rng.choice([1e9, 1e10, 5e10])]})
    for _ in range(8):
        n = rng.randint(1, 12)
        sizes = [rng.randint(1, 10_000) for _ in range(n)]
        order = rng.sample(range(n), n) if rng.random() < 0.5 else None
        cases.append({"fn": "backward_ready_times", "args": [sizes, rng.uniform(1e-3, 1e-1), order]})
    for _ in range(12):
        n = rng.randint(1, 10)
        ready = [round(rng.uniform(0, 10), 3) for _ in range(n)]
        indices = list(range(n))
        rng.shuffle(indices)
        cut = sorted(rng.sample(range(1, n), rng.randint(0, n - 1))) if n > 1 else []
        buckets = [indices[a:b] for a, b in zip([0] + cut, cut + [n])]
        durations = [round(rng.uniform(0.1, 3), 3) for _ in buckets]
        cases.append({"fn": "simulate_step", "args": [ready, buckets, durations, rng.random() < 0.7]})
    for _ in range(6):
        n = rng.randint(2, 20)
        shapes = [[rng.randint(1, 512), rng.randint(1, 512)] for _ in range(n)]
        cases.append({"fn": "ddp_step", "args": [shapes, rng.uniform(0.01, 0.1), rng.choice([2, 8, 64]), 1e-5, 1e10,
                                                 [rng.choice([0, 65536, 262144, 1 << 20])]],
                      "kwargs": {"overlap": rng.random() < 0.7}})
    for _ in range(4):
        cases.append({"fn": "skip_sync_step_time", "args": [rng.uniform(0.05, 0.2), rng.uniform(0.01, 0.05),
                                                            rng.randint(1, 16)]})
    return cases


TIMELINE_CASES = timeline_cases()


def _close(a, b, rtol: float = 1e-9) -> bool:
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_close(a[k], b[k], rtol) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_close(x, y, rtol) for x, y in zip(a, b))
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return math.isclose(a, b, rel_tol=rtol, abs_tol=1e-15)
    return a == b


def _ring(n, k, alpha, beta, latency=True, fraction=True):
    return (2 * (k - 1) * alpha if latency else 0) + (2 * (k - 1) / k if fraction else 2) * n / beta


def _ready(sizes, total, order):
    ready, done = [0.0] * len(sizes), 0
    for index in order:
        done += sizes[index]
        ready[index] = total * done / sum(sizes) if sum(sizes) else 0.0
    return ready


def _simulate(ready, buckets, durations, overlap, launch_order=None):
    end, bucket_ready = max(ready, default=0.0), [max(ready[i] for i in b) for b in buckets]
    starts, ends, free = [0.0] * len(buckets), [0.0] * len(buckets), 0.0
    for b in launch_order or range(len(buckets)):
        starts[b] = max(bucket_ready[b] if overlap else end, free)
        ends[b] = free = starts[b] + durations[b]
    return {"step_time": max([end, *ends]), "comm_start": starts, "comm_end": ends, "bucket_ready": bucket_ready,
            "backward_end": end}


def timeline_mistakes(case: dict) -> dict:
    """{mistake: what a function returns with it} for the common mistakes of handout §5 (plain Python)."""
    args = case["args"]
    if case["fn"] == "ring_allreduce_time" and args[1] > 1:
        return {"the latency term 2(K-1)α is missing": _ring(*args, latency=False),
                "the bandwidth term lacks the (K-1)/K factor (it must be 2(K-1)/K · n/β)": _ring(*args, fraction=False)}
    if case["fn"] == "backward_ready_times" and args[2] is None:
        return {"gradients taken in registration order; the default is reverse registration order":
                _ready(args[0], args[1], list(range(len(args[0]))))}
    if case["fn"] == "simulate_step":
        ready, buckets, durations, overlap = args
        bucket_ready = [max(ready[i] for i in b) for b in buckets]
        by_ready = sorted(range(len(buckets)), key=lambda b: bucket_ready[b])
        return {"buckets launched in the order they become ready instead of bucket index order":
                _simulate(ready, buckets, durations, overlap, by_ready),
                "overlap=False ignored (without overlap no bucket may start before backward ends)":
                _simulate(ready, buckets, durations, True)}
    return {}


def _timeline_check(function: str, ref, got, rule: str) -> None:
    for case, r, g in zip(TIMELINE_CASES, ref[0], got[0]):
        if case["fn"] != function:
            continue
        ok = "error" not in g and "error" not in r and _close(g["value"], r["value"])
        if not ok:
            named = [m for m, value in timeline_mistakes(case).items()
                     if "error" not in g and not _close(value, r["value"]) and _close(g["value"], value)]
            fail(f"{function}(*{case['args']}{', **' + str(case['kwargs']) if 'kwargs' in case else ''})\n"
                 f"  yours:    {_outcome_text(g)}\n  expected: {_outcome_text(r)}\n{rule} (relative tolerance 1e-9)"
                 + (f"\nYours is exactly what you get when {named[0]}." if named else ""))


@weight(3)
@number("5.1")
@scenario(part=5, fn="timeline_cases", cases=TIMELINE_CASES)
def check_ring_cost(ref, got):
    """Part 5: ring all-reduce cost 2(K-1)a + 2(K-1)/K n/b"""
    _timeline_check("ring_allreduce_time", ref, got, "handout §5: ring all-reduce cost; 0 for one rank")


@weight(3)
@number("5.2")
@scenario(part=5, fn="timeline_cases", cases=TIMELINE_CASES)
def check_ready_times(ref, got):
    """Part 5: gradient-ready times of the compute stream"""
    _timeline_check("backward_ready_times", ref, got, "handout §5: gradients one at a time in the given order, "
                    "time proportional to size")


@weight(5)
@number("5.3")
@scenario(part=5, fn="timeline_cases", cases=TIMELINE_CASES)
def check_simulator(ref, got):
    """Part 5: the two-stream simulator (buckets strictly in index order, with and without overlap)"""
    _timeline_check("simulate_step", ref, got, "handout §5: bucket b starts at max(ready_b, end_(b-1)); without "
                    "overlap every bucket waits for the end of backward")


@weight(3)
@number("5.4")
@scenario(part=5, fn="timeline_cases", cases=TIMELINE_CASES)
def check_ddp_step(ref, got):
    """Part 5: ddp_step buckets a model and simulates one step"""
    _timeline_check("ddp_step", ref, got, "handout §5: bucket with compute_bucket_assignment, then simulate")


@weight(1)
@number("5.5")
@scenario(part=5, fn="timeline_cases", cases=TIMELINE_CASES)
def check_skip_sync(ref, got):
    """Part 5: amortised step time when syncing every n steps"""
    _timeline_check("skip_sync_step_time", ref, got, "handout §5: ((n-1) no-sync steps + 1 sync step) / n")


# -- Part 6: written answers ---------------------------------------------------------------------------------

def _answers_file() -> str | None:
    """The reference answers: beside the grader in the autograder source, or in the repository."""
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    for path in (os.path.join(here, "reference", "answers.py"),
                 os.path.join(os.path.dirname(here), "solutions", "answers.py")):
        if os.path.exists(path):
            return path
    return None


def _questions() -> list[tuple[str, str]]:
    """(function name, first docstring line) of every question, in file order."""
    path = _answers_file()
    if path is None:
        return []
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read())
    return [(node.name, (ast.get_docstring(node) or node.name).splitlines()[0]) for node in tree.body
            if isinstance(node, ast.FunctionDef) and node.name.startswith("q")]


QUESTIONS = _questions()
ANSWER_RTOL = 1e-3  # handout §6: floats within a relative tolerance of 1e-3; everything else exactly


def _answer_matches(mine, theirs) -> bool:
    if isinstance(theirs, (list, tuple)):
        return isinstance(mine, (list, tuple)) and len(mine) == len(theirs) and all(
            _answer_matches(a, b) for a, b in zip(mine, theirs))
    if isinstance(theirs, float) or (isinstance(theirs, int) and isinstance(mine, float)):
        return isinstance(mine, (int, float)) and not isinstance(mine, bool) and math.isclose(
            mine, theirs, rel_tol=ANSWER_RTOL, abs_tol=1e-12)
    return type(mine) is type(theirs) and mine == theirs


# Points per question, as the handout's headings give them (handout/tests checks the two agree).
QUESTION_POINTS = {"q1": 1.0, "q2": 2.0, "q3": 1.5, "q4": 1.5, "q5": 1.0, "q6": 1.0, "q7": 2.0}


def _answer_check(name: str, title: str, index: int):
    names = [q for q, _ in QUESTIONS]

    @weight(QUESTION_POINTS[name.split("_")[0]])
    @number(f"6.{index}")
    @scenario(part=6, fn="answers", names=names)
    def check(ref, got):
        mine, theirs = got[0][name], ref[0][name]
        if "error" in mine:
            fail(f"{name}() {_outcome_text(mine)} (handout §6)")
        if not _answer_matches(mine["value"], theirs["value"]):
            fail(f"{name}() returned {mine['value']!r}: not the expected answer (numbers within a relative "
                 f"tolerance of {ANSWER_RTOL}; lists and tuples in the order the docstring gives; handout §6).")
    check.__doc__ = f"Part 6: {title}"
    check.__name__ = f"check_answer_{name}"
    return check


for _index, (_name, _title) in enumerate(QUESTIONS, start=1):
    globals()[f"check_answer_{_name}"] = _answer_check(_name, _title, _index)


# -- Bonus A: unused parameters; Bonus B: bucket rebuild (extra credit) ------------------------------------

@weight(2)
@number("A.1")
@tags("bonus")
@train(part=4, bonus="A", model="branchy", steps=3, use_b="none", ddp_kwargs={"find_unused_parameters": True})
def check_unused_everywhere(ref, got):
    """Bonus A: a parameter unused on every rank keeps grad=None, nothing hangs"""
    for name, none in ref[0]["grad_is_none"].items():
        if got[0]["grad_is_none"][name] != none:
            fail(f"{name}: grad is {'None' if got[0]['grad_is_none'][name] else 'a tensor'}; torch leaves it "
                 f"{'None' if none else 'a tensor'} (handout, bonus A)")
    same_training(ref, got, "bonus A")


@weight(2)
@number("A.2")
@tags("bonus")
@train(part=4, bonus="A", model="branchy", steps=3, use_b="rank0", ddp_kwargs={"find_unused_parameters": True})
def check_unused_on_some_ranks(ref, got):
    """Bonus A: a parameter used on rank 0 only ends as (g0 + 0) / 2 on both ranks"""
    same_training(ref, got, "bonus A")


@weight(1)
@number("A.3")
@tags("bonus")
@train(part=4, bonus="A", model="branchy", steps=2, use_b="all", ddp_kwargs={"find_unused_parameters": True})
def check_usage_bitmap(ref, got):
    """Bonus A: one extra int32 all-reduce of the usage bitmap per backward"""
    usage = [c for c in got[0]["steps"][1]["backward"][0] if c["dtypes"] == ["Int"]]
    if len(usage) != 1:
        fail(f"expected exactly one int32 all-reduce (the usage bitmap) per backward, saw {len(usage)} (bonus A)")
    same_training(ref, got, "bonus A")


@weight(5)
@number("B.1")
@tags("bonus")
@train(part=4, bonus="B", model="convbn", steps=3, hook="record",
       ddp_kwargs={"bucket_cap_mb_list": [0.001, 0.01], "rebuild_buckets": True})
def check_rebuild(ref, got):
    """Bonus B: buckets rebuilt in the observed gradient-ready order match torch's from iteration 2"""
    for step in (1, 2):
        mine, theirs = got[0]["steps"][step]["buckets"], ref[0]["steps"][step]["buckets"]
        if mine != theirs:
            fail(f"iteration {step + 1}: buckets (index, parameters) differ from torch's rebuilt ones (bonus B):\n"
                 + side_by_side(mine, theirs))
    same_training(ref, got, "bonus B")


def _order(check) -> list[int]:
    """"3.10" after "3.9"; bonus A and B last."""
    return [int(x) for x in check.__number__.replace("A", "7").replace("B", "8").split(".")]


ALL_CHECKS = sorted((value for name, value in globals().items() if name.startswith("check_")), key=_order)
