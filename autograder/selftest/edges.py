"""The edges the handout states in words, each with the check and the input that call it (COVERAGE.md).

An edge is a sentence of the handout about a corner of the input space ("[] for 0", "a limit of 0 seals a
bucket after every tensor", "also under no_sync()"): a behaviour a submission can get wrong while every
ordinary input passes. Each is listed with the handout's own words (``says``: they must occur in the LaTeX,
as ``handout/contract.py`` reads it), the contract item or function that states it, and the check one of
whose inputs (public or hidden) calls it: ``calls`` is true of that input. ``coverage.py`` puts the table in
COVERAGE.md and its problems (words the handout no longer says, an edge no input calls) in ``make check``.
Parts 1-4, the bonus and the functions of Part 5.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from tools import student_side

student_side()
from checks.part5 import entry_size  # noqa: E402 (the release's checks, from solutions/)


@dataclass(frozen=True)
class Edge:
    item: str  # the contract item ("E1", "C3") or function ("backward_ready_times") whose text states it
    says: str  # the handout's words
    check: str  # the check an input of which calls it; "" if no input can (``why``)
    calls: Callable | None = None  # (Run) -> bool: the input that calls it
    why: str = ""  # why no input calls it


# -- what an input is: predicates on a Run -----------------------------------------------------------------

def train(**want) -> Callable:
    """A training run whose arguments include ``want`` (``ddp_kwargs`` entries checked one by one)."""
    def calls(run) -> bool:
        kwargs = run.kwargs
        return run.fn == "train" and all(
            all(kwargs.get("ddp_kwargs", {}).get(k) == v for k, v in value.items()) if key == "ddp_kwargs"
            else kwargs.get(key) == value for key, value in want.items())
    return calls


def scenario(fn: str, test: Callable = lambda kwargs: True) -> Callable:
    return lambda run: run.fn == fn and test(run.kwargs)


def holds(test: Callable, *args) -> bool:
    """``test(*args)``, false where it does not apply (a case without the variable or argument it reads)."""
    try:
        return bool(test(*args))
    except (KeyError, IndexError, TypeError, ValueError):
        return False


def timeline(fn: str, test: Callable) -> Callable:
    """A Part 5 run with a case of ``fn`` whose (args, kwargs) pass ``test``."""
    return scenario("timeline_cases", lambda kwargs: any(c["fn"] == fn and holds(test, c["args"], c.get("kwargs", {}))
                                                         for c in kwargs["cases"]))


def bucket_case(test: Callable) -> Callable:
    return scenario("bucket_cases", lambda kwargs: any(holds(test, c) for c in kwargs["cases"]))


def lands_on_limit(c: dict) -> bool:
    """One dtype, float32, and the first tensors in visiting order add up to the first limit exactly."""
    if set(c["dtypes"]) != {"float32"}:
        return False
    order = c.get("order") or list(range(len(c["sizes"]) - 1, -1, -1))
    total = 0
    for index in order:
        total += 4 * c["sizes"][index]
        if total >= c["limits"][0]:
            return total == c["limits"][0]
    return False


def invalid(test: Callable) -> Callable:
    return scenario("process_group_cases", lambda kwargs: any(holds(test, c["env"], c["variable"])
                                                              for c in kwargs.get("invalid", [])))


def valid(test: Callable) -> Callable:
    return scenario("process_group_cases", lambda kwargs: any(holds(test, e) for e in kwargs.get("envs", [])))


def both(first: Callable, second: Callable) -> Callable:
    """One input calls both."""
    return lambda run: first(run) and second(run)


EDGES = (
    # Part 1
    Edge("E1", 'set to "" counts as missing, for every variable including MASTER_ADDR', "1.2",
         invalid(lambda env, var: var == "MASTER_ADDR" and env.get("MASTER_ADDR") == "")),
    Edge("E3", "RANK = WORLD_SIZE is invalid", "1.2",
         invalid(lambda env, var: var == "RANK" and env["RANK"] == env["WORLD_SIZE"])),
    Edge("E6", "MASTER_PORT=0 and 65536 are invalid", "1.2",
         both(invalid(lambda env, var: env["MASTER_PORT"] == "0"), invalid(lambda env, var: env["MASTER_PORT"] == "65536"))),
    Edge("E6", "1 and 65535 valid", "1.1",
         both(valid(lambda env: env["MASTER_PORT"] == "65535"), valid(lambda env: env["MASTER_PORT"] == "1"))),
    Edge("E4", "LOCAL_WORLD_SIZE does not divide WORLD_SIZE (or exceeds it)", "1.2",
         invalid(lambda env, var: var == "LOCAL_WORLD_SIZE" and int(env["LOCAL_WORLD_SIZE"]) > int(env["WORLD_SIZE"]))),
    Edge("E2", "number of processes K ≥ 1", "1.1", valid(lambda env: env["WORLD_SIZE"] == "1")),
    Edge("global_rank", "for every r ≥ 0, L ≥ 1", "1.3",
         scenario("process_group_cases", lambda kwargs: any(lws == 1 for _, lws in kwargs.get("layouts", [])))),
    Edge("init_process_group", "A backend that is given is passed on unchanged, whatever it is", "1.4",
         scenario("launch")),
    Edge("init_process_group", "with this process's GPU (its local rank) made the current device before joining",
         "1.4", scenario("nccl_device", lambda kwargs: kwargs["environ"]["RANK"] != kwargs["environ"]["LOCAL_RANK"])),
    Edge("destroy_process_group", "Safe to call when no group is initialised (then it does nothing)", "1.4",
         scenario("launch")),
    # Part 2
    Edge("reverse_order", "[] for 0", "2.1", scenario("reverse_orders", lambda kwargs: 0 in kwargs["counts"])),
    Edge("R3", "every limit (0 included)", "2.5", bucket_case(lambda c: 0 in c["limits"])),
    Edge("R3", "for every size", "2.4", bucket_case(lambda c: 0 in c["sizes"])),
    Edge("R3", "Exactly where torch draws the line", "2.2", bucket_case(lands_on_limit)),
    Edge("R4", "the last limit repeating for every later bucket", "2.3", bucket_case(lambda c: len(c["limits"]) > 2)),
    Edge("R4", "Which bucket is ``the first'' when several groups fill buckets", "2.3",
         bucket_case(lambda c: len(c["limits"]) > 1 and len(set(c["dtypes"])) > 1)),
    Edge("R6", "the checks' cases with two devices seal every bucket", "2.4",
         bucket_case(lambda c: len(set(c.get("devices", []))) > 1)),
    Edge("R1", "Tensors are visited in order", "2.4", bucket_case(lambda c: "order" in c)),
    Edge("overlap_bytes", "[] when there are none", "2.6",
         scenario("overlap_cases", lambda kwargs: any(not c["buckets"] for c in kwargs["cases"]))),
    Edge("overlap_bytes", "any partition of the indices into non-empty lists, torch's assignment or another", "2.6",
         scenario("overlap_cases", lambda kwargs: any(len(b) > 1 and sorted(b, reverse=True) != b
                                                      for c in kwargs["cases"] for b in c["buckets"]))),
    # Part 3
    Edge("C1", "a transposed (non-contiguous) one, a 0-dim one or one with no elements, has its slot", "3.3",
         train(impl="reducer", model="edges")),
    Edge("C1", "a transposed parameter lies in the buffer in its memory order, not row by row", "3.11",
         train(impl="reducer", model="edges", hook="record")),
    Edge("C2", "on ranks whose buckets fill out of index order too", "3.9", train(impl="reducer", model="twobranch")),
    Edge("C3", "(set_to_none true and false)", "3.1", train(impl="reducer", set_to_none=True)),
    Edge("C3", "A parameter used twice in forward is one gradient", "3.4", train(impl="reducer", model="tied")),
    Edge("C3", "at 3 ranks, where the order of dividing and summing changes the last bit, within rtol=1e-6", "3.10",
         lambda run: run.fn == "train" and run.world_size == 3 and not run.kwargs.get("subgroups")),
    Edge("C4", "is_last() is true for the bucket with the highest index and for no other (whichever bucket fills last)",
         "3.11", train(impl="reducer", model="edges", hook="record")),
    Edge("C5", "under no_sync() or torch.no_grad()", "4.3", train(no_grad_forward=True)),
    Edge("C5", "after a synchronised forward whose output got no backward", "4.3",
         train(dropped_forward=True)),
    Edge("C6", "and works in any order", "3.2", train(impl="reducer", backend="late")),
    Edge("C7", "none to the world group; K is the group's size", "3.10", lambda run: run.fn == "train" and run.kwargs.get("subgroups") is not None
         and run.kwargs.get("impl") == "reducer"),
    Edge("C8", "what it leaves in .grad is torch's", "4.8", train(catch=True, ddp_kwargs={"bucket_cap_mb": 0})),
    # Part 4
    Edge("W1", "frozen ones included", "4.1", train(model="frozen", seed_per_rank=True)),
    Edge("W1", "With broadcast_buffers=False torch's DDP never broadcasts a buffer, not even here", "4.2",
         train(buffers_per_rank=True, ddp_kwargs={"broadcast_buffers": False})),
    Edge("W1", "a view taken before wrapping sees", "4.1", train(impl="minddp", model="edges")),
    Edge("broadcast_tensors", "Overwrite tensors, in place", "4.1", scenario("broadcast_values")),
    Edge("broadcast_tensors", "where src is a rank of process_group", "4.1",
         scenario("broadcast_values", lambda kwargs: bool(kwargs.get("subgroups")))),
    Edge("W2", "parameters and buffers together or apart", "4.1", train(impl="minddp", model="convbn")),
    Edge("W3", "a parameter shared by two modules is listed once", "4.7", train(impl="minddp", model="tied")),
    Edge("W4", "Torch skips this broadcast in some forwards", "4.3", train(model="convbn", accumulate=4)),
    Edge("W5", "The module runs on the forward's arguments, positional and keyword, as given", "4.8",
         train(model="branchy", use_b="none")),
    Edge("W5", "the module's mode (ddp.eval(), ddp.train())", "4.2",
         train(eval_mode=True)),
    Edge("W6", "Blocks nest, and a block whose body raises", "4.3", train(no_sync="nested")),
    Edge("W6", "Whether a backward all-reduces is decided where torch decides it", "4.4", train(no_sync="backward")),
    Edge("W7", "An unused parameter without the flag", "4.8", train(use_b="none", catch=True)),
    # Bonus
    Edge("find_used_parameters", "outputs may be a tensor or nested lists, tuples and dicts of them", "A.2",
         scenario("used_parameters")),
    Edge("find_used_parameters", "an output that is itself a leaf requiring grad counts as used", "A.2",
         scenario("used_parameters")),
    Edge("A1", "bucket_cap_mb=0 included (where a rank may hold a bucket with no gradient at all to write back", "A.2",
         train(use_b="rank0", ddp_kwargs={"find_unused_parameters": True, "bucket_cap_mb": 0})),
    Edge("A1", "When torch counts them ready", "A.2",
         train(model="edges", use_b="rank0", ddp_kwargs={"find_unused_parameters": True, "bucket_cap_mb": 0})),
    Edge("A1", "what their slots then hold", "A.2", train(use_b="no_sync")),
    Edge("A2", "None included", "A.1", train(use_b="none", ddp_kwargs={"find_unused_parameters": True})),
    Edge("A3", "does a micro-batch under no_sync() count?", "A.2",
         train(use_b="no_sync")),
    Edge("A4", "on 3 ranks, a parameter that 2 of them used gives 2", "A.3",
         lambda run: run.fn == "usage_counts" and run.world_size == 3),
    Edge("all_reduce_usage", "the sums over the group's ranks", "A.3",
         lambda run: run.fn == "train" and bool(run.kwargs.get("subgroups"))),
    Edge("B1", "under no_sync() or not", "B.1", train(accumulate=2, ddp_kwargs={"rebuild_buckets": True})),
    Edge("B1", "under torch.no_grad() or not", "B.1",
         train(no_grad_forward=True, ddp_kwargs={"rebuild_buckets": True})),
    Edge("B1", "never without rebuild_buckets=True", "4.2", train(impl="minddp", model="convbn", steps=3)),
    Edge("B2", "The order is one rank's", "B.1",
         lambda run: run.fn == "train" and bool(run.kwargs.get("subgroups"))
         and run.kwargs.get("ddp_kwargs", {}).get("rebuild_buckets")),
    Edge("B2", "also when the ranks observed", "B.1",
         lambda run: run.fn == "train" and run.kwargs.get("model") == "twobranch"
         and run.kwargs.get("ddp_kwargs", {}).get("rebuild_buckets")),
    Edge("B2", "followed by any parameter never seen, in ascending index order", "",
         why="no run torch's DDP finishes has one: without find_unused_parameters a parameter without a gradient "
             "leaves the first backward unfinished (C8), and with it torch does not rebuild"),
    # Part 5
    Edge("backward_ready_times", "If all sizes are 0, every gradient is ready at 0", "5.2",
         timeline("backward_ready_times", lambda args, kwargs: args[0] and not any(entry_size(e) for e in args[0]))),
    Edge("backward_ready_times", "a (name, shape) row or a number", "5.2",
         timeline("backward_ready_times", lambda args, kwargs: any(isinstance(e, list) and e and isinstance(e[0], str)
                                                                   for e in args[0]))),
    Edge("simulate_step", "(0 without tensors)", "5.3", timeline("simulate_step", lambda args, kwargs: not args[0])),
    Edge("ddp_step", "their bytes count dtype's element size", "5.4",
         timeline("ddp_step", lambda args, kwargs: kwargs.get("dtype") == "float64")),
    Edge("ddp_step", "Every argument counts: a check changes each of them alone", "5.4",
         timeline("ddp_step", lambda args, kwargs: "order" in kwargs)),
    Edge("ddp_step", "If all sizes are 0, every gradient is ready at 0", "5.4",
         timeline("ddp_step", lambda args, kwargs: not any(entry_size(e) for e in kwargs.get("compute_costs") or args[0]))),
    Edge("bucket_cap_sweep", "None: a single bucket holding the whole model; 0: every tensor its own bucket", "5.5",
         timeline("bucket_cap_sweep", lambda args, kwargs: None in kwargs["caps"] and 0 in kwargs["caps"])),
    Edge("best_bucket_plan", "order, default reverse registration order", "5.10",
         timeline("best_bucket_plan", lambda args, kwargs: "order" in kwargs)),
    Edge("weak_scaling", "the throughput (samples per second) of K ranks divided by K times the throughput of one rank",
         "5.8", timeline("weak_scaling", lambda args, kwargs: len(kwargs["world_sizes"]) > 1)),
)
