"""Worker side of the grader: load one variant of minddp, run a scenario on it, report.

This file is readable by the student's workers (it says HOW we test, not what the answers are; those
stay in the grading process). ``run`` is the only entry point the grader calls:

    pool.run("grader_scenarios:run", code_dir=..., scenario="train", kwargs={...}, trap=True)

``code_dir`` holds a ``minddp/`` package: the student's files, the reference's, or a mix (a part is
graded with the reference version of the parts it builds on when the student's version failed).
With ``trap=True`` (always, for student code) torch's own DDP machinery raises if anything calls it.
"""

from __future__ import annotations

import sys
import traceback
from typing import Any

BANNED = []  # (where, name) of every banned API called in this worker


def use_code(code_dir: str) -> None:
    """Make ``import minddp.X`` load from ``code_dir`` (fresh modules, nothing left from the last variant)."""
    for name in [n for n in sys.modules if n in ("minddp", "scenarios", "answers") or n.startswith("minddp.")]:
        if name != "minddp.workers":  # the running worker loop itself
            del sys.modules[name]
    sys.path[:] = [code_dir] + [p for p in sys.path if p != code_dir]


def install_traps() -> None:
    """Replace torch's DDP machinery by functions that record the call and raise."""
    import torch
    import torch.distributed as dist
    import torch.nn.parallel

    def trap(where: str, name: str):
        def banned(*args: Any, **kwargs: Any):
            BANNED.append(f"{where}.{name}")
            raise RuntimeError(f"{where}.{name} is not allowed in this homework (handout: allowed APIs)")
        return banned

    targets = [(torch.nn.parallel, "torch.nn.parallel", "DistributedDataParallel"),
               (dist, "torch.distributed", "_compute_bucket_assignment_by_size"),
               (dist, "torch.distributed", "_broadcast_coalesced"),
               (dist, "torch.distributed", "Reducer"),
               (torch._C._distributed_c10d, "torch._C._distributed_c10d", "Reducer"),
               (torch._C._distributed_c10d, "torch._C._distributed_c10d", "_compute_bucket_assignment_by_size"),
               (torch._C._distributed_c10d, "torch._C._distributed_c10d", "_broadcast_coalesced")]
    for module, where, name in targets:
        if hasattr(module, name):
            setattr(module, name, trap(where, name))
    parallel_module = sys.modules.get("torch.nn.parallel.distributed")
    if parallel_module is not None:
        parallel_module.DistributedDataParallel = trap("torch.nn.parallel", "DistributedDataParallel")
    for name in [n for n in sys.modules if n.startswith("torch.distributed.algorithms.ddp_comm_hooks")]:
        del sys.modules[name]
    sys.modules["torch.distributed.algorithms.ddp_comm_hooks"] = None  # importing it raises ImportError


def run(code_dir: str, scenario: str, kwargs: dict, trap: bool = False) -> dict:
    """Run ``scenario`` (from grader_scenarios or the public tests' scenarios) on ``code_dir``'s minddp."""
    use_code(code_dir)
    if trap:
        install_traps()
    import scenarios  # the public tests' scenarios, re-imported against this variant
    function = globals().get(scenario) or getattr(scenarios, scenario)
    result = function(**kwargs)
    return {"result": result, "banned": list(BANNED)}


# -- unit scenarios: call one part's functions on many inputs, report outputs or errors ------------------

def _outcome(call) -> dict:
    try:
        return {"value": call()}
    except NotImplementedError as error:
        return {"error": "NotImplementedError", "message": str(error)}
    except Exception as error:  # report, don't crash: the next case still runs
        return {"error": type(error).__name__, "message": str(error)[:500],
                "value_error": isinstance(error, ValueError),
                "where": traceback.format_exc(limit=-3)[-1500:]}


def process_group_cases(envs: list[dict], layouts: list[list[int]], torchrun: list[list]) -> dict:
    from minddp import process_group as pg

    def env_fields(environ: dict) -> dict:
        env = pg.read_torchrun_env(environ)
        return {k: getattr(env, k) for k in ("rank", "world_size", "local_rank", "local_world_size",
                                             "master_addr", "master_port", "node_rank", "num_nodes")}

    return {
        "envs": [_outcome(lambda e=e: env_fields(e)) for e in envs],
        "layouts": [_outcome(lambda r=r, lws=lws: [list(pg.node_and_local_rank(r, lws)),
                                                   pg.global_rank(*pg.node_and_local_rank(r, lws), lws)])
                    for r, lws in layouts],
        "torchrun": [_outcome(lambda a=a: pg.torchrun_env(*a)) for a in torchrun],
    }


def bucket_cases(cases: list[dict], reference: bool = False) -> list[dict]:
    """Each case: sizes (elements), dtypes, limits (bytes), optional order. ``reference``: torch's answer."""
    import torch

    from minddp import bucketing

    outcomes = []
    for case in cases:
        tensors = [torch.empty(n, dtype=getattr(torch, d), device="meta") for n, d in zip(case["sizes"], case["dtypes"])]
        order = case.get("order") or list(range(len(tensors) - 1, -1, -1))
        if reference:
            import torch.distributed as dist
            outcomes.append(_outcome(lambda t=tensors, o=order, c=case: dist._compute_bucket_assignment_by_size(
                [t[i] for i in o], c["limits"], [], o)[0]))
        elif case.get("order"):
            outcomes.append(_outcome(lambda t=tensors, o=order, c=case:
                                     bucketing.compute_bucket_assignment(t, c["limits"], o)))
        else:
            outcomes.append(_outcome(lambda t=tensors, c=case: bucketing.compute_bucket_assignment(t, c["limits"])))
    return outcomes


def timeline_cases(cases: list[dict]) -> list[dict]:
    """Each case names a timeline function and its arguments; the result is reduced to plain numbers."""
    from minddp import timeline

    def call(case: dict):
        if case["fn"] == "simulate_step":
            tl = timeline.simulate_step(*case["args"])
            return {"step_time": tl.step_time, "comm_start": list(tl.comm_start), "comm_end": list(tl.comm_end),
                    "bucket_ready": list(tl.bucket_ready), "backward_end": tl.backward_end}
        value = getattr(timeline, case["fn"])(*case["args"], **case.get("kwargs", {}))
        if hasattr(value, "step_time"):
            return {"step_time": value.step_time, "comm_start": list(value.comm_start),
                    "comm_end": list(value.comm_end)}
        return value

    return [_outcome(lambda c=c: call(c)) for c in cases]


def answers(names: list[str]) -> dict:
    try:
        import answers as module  # noqa: F811 - the student's answers file, top level of code_dir
    except Exception as error:
        return {name: {"error": type(error).__name__, "message": str(error)[:300]} for name in names}
    return {name: _outcome(getattr(module, name)) if hasattr(module, name) else
            {"error": "AttributeError", "message": f"answers.py has no function {name}"} for name in names}
