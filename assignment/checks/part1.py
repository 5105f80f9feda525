# GENERATED from solutions/checks/part1.py by tools/assign.py (staff: edit that file, then `make assignment`).
# Provided code: do not edit it by hand; the grader uses its own copy.
"""Part 1 — the process group (handout §1): the checks and their public inputs."""

from __future__ import annotations

import re

from checks.check import NONE, Check, Outcome, Run, fail
from checks.compare import outcome_text


def env(rank: int, world_size: int, local_rank: int, local_world_size: int, addr: str = "10.0.0.1",
        port: int = 29500) -> dict:
    return {"RANK": str(rank), "WORLD_SIZE": str(world_size), "LOCAL_RANK": str(local_rank),
            "LOCAL_WORLD_SIZE": str(local_world_size), "MASTER_ADDR": addr, "MASTER_PORT": str(port)}


GOOD = env(5, 8, 1, 4)


def env_run(envs: list[dict], label: str) -> Run:
    return Run("process_group_cases", {"envs": envs}, label=label)


def invalid_run(cases: list[tuple[dict, str]], valid: list[dict], label: str) -> Run:
    """Each case: an environment and the variable the error must name; ``valid`` environments must not raise."""
    return Run("process_group_cases", {"invalid": [{"env": e, "variable": v} for e, v in cases], "envs": valid},
               ref=NONE, label=label)


def layout_run(layouts: list[list[int]], torchrun: list[list], label: str) -> Run:
    return Run("process_group_cases", {"layouts": layouts, "torchrun": torchrun}, label=label)


def compare_envs(o: Outcome) -> None:
    for environ, r, g in zip(o.run.kwargs["envs"], o.ref[0]["envs"], o.got[0]["envs"], strict=True):
        if g != r:
            fail(f"read_torchrun_env({environ})\n  yours:    {outcome_text(g)}\n  expected: {outcome_text(r)}\n"
                 "(handout §1)")


def compare_errors(o: Outcome) -> None:
    for environ, g in zip(o.run.kwargs["envs"], o.got[0]["envs"], strict=True):
        if "error" in g:
            fail(f"read_torchrun_env({environ}) raised {g['error']}: {g['message']}; a valid environment must not "
                 "raise (handout §1)")
    for case, g in zip(o.run.kwargs["invalid"], o.got[0]["invalid"], strict=True):
        environ, variable = case["env"], case["variable"]
        if "error" not in g:
            fail(f"read_torchrun_env({environ}) returned {g['value']!r}; it must raise DistEnvError naming "
                 f"{variable} (handout §1)")
        if g["error"] == "NotImplementedError" or not g.get("value_error"):
            fail(f"read_torchrun_env({environ}) raised {g['error']}: {g['message']}; expected DistEnvError "
                 f"(a ValueError) naming {variable} (handout §1)")
        if not names(g["message"], variable):
            fail(f"read_torchrun_env({environ}) raised {g['error']}: {g['message']!r}, which does not name "
                 f"{variable}, the variable to fix (handout §1)")


def names(message: str, variable: str) -> bool:
    """Whether ``message`` names ``variable`` as a whole word: "LOCAL_RANK=1" does not name RANK."""
    return re.search(rf"(?<![A-Za-z0-9_]){re.escape(variable)}(?![A-Za-z0-9_])", message) is not None


def compare_layouts(o: Outcome) -> None:
    for (rank, lws), r, g in zip(o.run.kwargs["layouts"], o.ref[0]["layouts"], o.got[0]["layouts"], strict=True):
        if g != r:
            swapped = "value" in g and "value" in r and g["value"][0] == r["value"][0][::-1] != r["value"][0]
            inverse = "value" in g and "value" in r and g["value"][0] == r["value"][0]  # only global_rank is wrong
            fail(f"rank {rank} with {lws} processes per node: node_and_local_rank, global_rank gave "
                 f"{outcome_text(g)}; expected {outcome_text(r)} (handout §1)"
                 + ("\nYour node index and local rank are swapped: node_and_local_rank returns (node, local rank), "
                    "ranks laid out node by node." if swapped else "")
                 + (f"\nYour global_rank{(*r['value'][0], lws)} is {g['value'][1]!r}, not {rank}: global_rank must "
                    "invert node_and_local_rank, global_rank(*node_and_local_rank(r, L), L) == r." if inverse else ""))
    for args, r, g in zip(o.run.kwargs["torchrun"], o.ref[0]["torchrun"], o.got[0]["torchrun"], strict=True):
        if g != r:
            fail(f"torchrun_env{tuple(args)}\n  yours:    {outcome_text(g)}\n  expected: {outcome_text(r)}\n"
                 "(handout §1: all six variables, values as strings)" + env_differences(args[0], g, r))


def env_differences(rank: int, got: dict, ref: dict) -> str:
    """Each variable of torchrun_env's answer that differs from the expected one, said in words."""
    mine, expected = got.get("value"), ref["value"]
    if not isinstance(mine, dict):
        return ""
    lines = [f"{name} is missing" for name in expected if name not in mine]
    lines += [f"{name} is not one of the six variables" for name in mine if name not in expected]
    for name in sorted(expected, key=lambda n: list(GOOD).index(n) if n in GOOD else len(GOOD)):  # the table's order
        value = expected[name]
        if name not in mine or mine[name] == value:
            continue
        line = f"{name} is {mine[name]!r}, expected {value!r}"
        if not isinstance(mine[name], str):
            line += f": {type(mine[name]).__name__}, not str (environment values are strings)"
        elif name == "LOCAL_RANK" and mine[name] == str(rank):
            line += ": that is the global rank; the local rank is the rank on its node, RANK mod LOCAL_WORLD_SIZE"
        lines.append(line)
    return "".join(f"\n{line}" for line in lines)


def compare_nccl(o: Outcome) -> None:
    """init_process_group() on a node with GPUs: nccl, and the device of the process's LOCAL rank made current."""
    environ, seen = o.run.kwargs["environ"], o.got[0]
    where = (f"init_process_group() under RANK={environ['RANK']}, LOCAL_RANK={environ['LOCAL_RANK']} "
             f"(LOCAL_WORLD_SIZE={environ['LOCAL_WORLD_SIZE']}), where torch.cuda.is_available() is True")
    local = int(environ["LOCAL_RANK"])
    if seen.get("error"):
        fail(f"{where}: raised {seen['error']}: {seen['message']} (handout §1)")
    if seen["backend"] != "nccl":
        fail(f"{where}: asked torch.distributed.init_process_group for backend {seen['backend']!r}; with no backend "
             "given and CUDA available, it is \"nccl\" (handout §1)")
    chosen = [d for d in seen["devices"] + [seen["device_id"]] if d is not None]
    if chosen[-1:] != [local] or local not in chosen:
        fail(f"{where}: made device {chosen[-1] if chosen else 'none'} current"
             + (" (torch.cuda.set_device was never called)" if not chosen else "")
             + f"; expected {local}: each process drives the GPU of its LOCAL rank on its node (there are "
             f"LOCAL_WORLD_SIZE of them), not of its global rank: torch.cuda.set_device(local_rank) before joining "
             "(handout §1)")


def compare_launch(o: Outcome) -> None:
    if o.run.fn == "nccl_device":
        return compare_nccl(o)
    nproc = o.run.kwargs["nproc"]
    values = o.kwargs.get("values") or [rank + 1 for rank in range(nproc)]
    if len(o.got) != nproc:
        fail(f"{len(o.got)} ranks reported, not {nproc}")
    for rank, report in enumerate(o.got):
        # On Gradescope the rendezvous store is hosted outside the ranks, as torchrun's agent hosts it, and says
        # which ranks met there as a process group: a sum the ranks worked out some other way is not one.
        met = report.pop("rendezvous", None) if isinstance(report, dict) else None
        if met is not None and met != list(range(nproc)):
            fail(f"rank {rank} reported the sum, but only ranks {met} of {nproc} joined a process group through "
                 "the rendezvous store: the sum must come from torch.distributed's all_reduce in a group that "
                 "init_process_group made (handout §1)")
        # What nproc processes on one node must see: their place in the job, and a working all-reduce (of
        # numbers each rank only learns when it starts, on Gradescope).
        expected = {"rank": rank, "world_size": nproc, "local_rank": rank, "node_rank": 0,
                    "sum": float(sum(values)), "dist_rank": rank, "backend": LAUNCH_BACKEND,
                    "timeout_s": float(LAUNCH_TIMEOUT_S) if isinstance(report, dict) and report.get("timeout_s")
                    is not None else None,  # None: this torch does not say
                    "left": True, "destroyed_twice": "did nothing"}
        if isinstance(report, dict) and report.get("timeout_s") not in (None, float(LAUNCH_TIMEOUT_S)):
            fail(f"rank {rank}: init_process_group(timeout={LAUNCH_TIMEOUT_S} s) joined a group whose collectives time "
                 f"out after {report['timeout_s']:g} s: the timeout must be passed on to "
                 "torch.distributed.init_process_group (handout §1)")
        if isinstance(report, dict) and report.get("backend") != LAUNCH_BACKEND:
            fail(f"rank {rank}: init_process_group(backend={LAUNCH_BACKEND!r}) joined a group whose backend is "
                 f"{report.get('backend')!r}: a given backend must be passed on unchanged to "
                 "torch.distributed.init_process_group; only backend=None picks nccl or gloo (handout §1)")
        if isinstance(report, dict) and report.get("left") is False:
            fail(f"rank {rank}: after destroy_process_group(), torch.distributed.is_initialized() is still True: "
                 "destroy_process_group() must leave the job (torch.distributed.destroy_process_group()) "
                 "(handout §1)")
        if isinstance(report, dict) and str(report.get("destroyed_twice", "")).startswith("raised"):
            fail(f"rank {rank}: destroy_process_group() called again after leaving, with no process group "
                 f"initialised, {report['destroyed_twice']}; with no group it must do nothing (handout §1)")
        if report != expected:
            fail(f"under `torchrun --standalone --nproc_per_node={nproc}`, rank {rank}'s script reported\n  {report}\n"
                 f"expected\n  {expected}\n(handout §1; the script is tests/launch_probe.py)")


MISSING = [({k: v for k, v in GOOD.items() if k != name}, name) for name in GOOD]
# Each environment has a single fault (handout §1): every other rule holds, so only one variable can be named.
INVALID = [({**GOOD, "RANK": "two"}, "RANK"), ({**GOOD, "WORLD_SIZE": "0"}, "WORLD_SIZE"),
           ({**GOOD, "RANK": "-1"}, "RANK"),
           (env(8, 8, 0, 4), "RANK"),  # local rank 0 is right for rank 8: only RANK is wrong
           ({**GOOD, "LOCAL_RANK": "4"}, "LOCAL_RANK"),
           ({**GOOD, "LOCAL_RANK": "2"}, "LOCAL_RANK"),  # rank 5 with 4 per node is local rank 1
           (env(5, 8, 2, 3), "LOCAL_WORLD_SIZE"),  # 3 does not divide 8 (rank 5 with 3 per node is local rank 2)
           (env(1, 2, 1, 4), "LOCAL_WORLD_SIZE"),  # 4 per node in a world of 2
           ({**GOOD, "MASTER_PORT": "70000"}, "MASTER_PORT"), ({**GOOD, "MASTER_PORT": "http"}, "MASTER_PORT")]
# The edges of the contract: a variable set but empty counts as missing; ports are 1..65535 (0 and 65536 are
# not; 65535 is, see the valid environments of 1.1 and 1.2); RANK == WORLD_SIZE is one too many (above: 8 of 8).
EDGES = [({**GOOD, name: ""}, name) for name in GOOD] + [({**GOOD, "MASTER_PORT": "0"}, "MASTER_PORT"),
                                                       ({**GOOD, "MASTER_PORT": "65536"}, "MASTER_PORT")]
LAUNCH_TIMEOUT_S = 97  # what the probe asks init_process_group for: unlike any default, so that one ignored shows
LAUNCH_BACKEND = "cpu:gloo"  # what the probe passes to init_process_group: not what None would choose ("gloo")

CHECKS = [
    Check("1.1", "read_torchrun_env reads valid torchrun environments", weight=3, section="1",
          runs=(env_run([GOOD, env(0, 1, 0, 1, "127.0.0.1", 1), env(7, 12, 3, 4), env(3, 4, 3, 4, "localhost", 65535)],
                        "valid environments (one node of 4, a single process, the lecture's 3 nodes x 4 GPUs, "
                        "the largest port)"),),
          compare=compare_envs),
    Check("1.2", "invalid environments raise DistEnvError naming the variable to fix", weight=3, section="1",
          runs=(invalid_run(MISSING + INVALID + EDGES, [GOOD, env(0, 1, 0, 1, "127.0.0.1", 65535)],
                            "each variable missing, invalid values, each variable set but empty, ports 0 and "
                            "65536 (and two valid environments)"),),
          compare=compare_errors),
    Check("1.3", "rank layout, and the environment torchrun gives each rank", weight=2, section="1",
          runs=(layout_run([[7, 4]] + [[r, lws] for lws in (1, 2, 4, 8) for r in range(4 * lws)],
                           [[r, 12, 4, "127.0.0.1", 1234] for r in range(12)],
                           "the lecture's exercise 1 (rank 7, 4 per node), 4 nodes of 1, 2, 4, 8"),),
          compare=compare_layouts),
    Check("1.4", "init_process_group joins a job started by a real torchrun", weight=2, section="1",
          runs=(Run("launch", {"nproc": 2}, ref=NONE, label="torchrun --standalone --nproc_per_node=2",
                    feed=("values",)),
                Run("nccl_device", {"environ": GOOD}, ref=NONE, label="rank 5 of 8, 4 per node, on a node with GPUs "
                    "(CUDA and torch.distributed's init stood in for)")),
          compare=compare_launch, public_share=1.0),
]
