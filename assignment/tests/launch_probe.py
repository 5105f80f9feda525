# GENERATED from solutions/tests/launch_probe.py by tools/assign.py (staff: edit that file, then `make assignment`).
# Public tests: do not edit them by hand; the grader runs its own copy (and more tests).
"""A training-script-shaped probe for check 1.4: join the job from the torchrun environment, all-reduce one
number, leave (then call destroy_process_group() once more, with no group left), report what this rank learned.

    torchrun --standalone --nproc_per_node=2 tests/launch_probe.py OUT    # what `make test` runs: OUT/rank<r>.json

On Gradescope the same ``run`` runs in each rank of a launch with exactly the environment torchrun gives
(``MINDDP_PROBE_VALUE``: the number each rank contributes; by default rank + 1), and sends the same message
on the worker's channel that `make test` reads from OUT/rank<r>.json: so both print the same words.
"""

import json
import os
import sys


def probe(report) -> None:
    from datetime import timedelta

    import torch
    import torch.distributed as dist

    from checks.part1 import LAUNCH_TIMEOUT_S
    from minddp.process_group import destroy_process_group, init_process_group

    # gloo for CPU tensors, named so that a backend ignored shows; an unusual timeout, so that one ignored shows
    env = init_process_group(backend="cpu:gloo", timeout=timedelta(seconds=LAUNCH_TIMEOUT_S))
    total = torch.tensor([float(os.environ.get("MINDDP_PROBE_VALUE", env.rank + 1))])
    dist.all_reduce(total)
    learned = {"rank": env.rank, "world_size": env.world_size, "local_rank": env.local_rank,
               "node_rank": env.node_rank, "sum": total.item(), "dist_rank": dist.get_rank(),
               "backend": str(dist.get_backend()), "timeout_s": group_timeout_s()}
    destroy_process_group()
    learned["left"] = not dist.is_initialized()
    try:  # again, with no group left: it must do nothing
        destroy_process_group()
        learned["destroyed_twice"] = "did nothing"
    except Exception as error:
        learned["destroyed_twice"] = f"raised {type(error).__name__}: {error}"[:300]
    report(learned)


def group_timeout_s() -> float | None:
    """The timeout the default group's gloo backend was made with (what bounds every collective), if it says."""
    import torch
    import torch.distributed as dist
    try:
        backend = dist.distributed_c10d._get_default_group()._get_backend(torch.device("cpu"))
        return backend.options._timeout.total_seconds()
    except Exception:  # another backend, or another torch: nothing to compare
        return None


def run(send) -> None:
    """``probe``, and its outcome sent once as a worker's message: {"ok": true, "result": report}, or
    {"ok": false, "error": ...} if it raised (the traceback starts in ``probe``)."""
    from checks.pool import _error_report
    try:
        probe(lambda report: send({"ok": True, "result": report}))
    except BaseException as error:
        send({"ok": False, "error": _error_report(error.with_traceback(error.__traceback__.tb_next))})


def write_message(message: dict) -> None:
    with open(os.path.join(sys.argv[1], f"rank{os.environ['RANK']}.json"), "w") as f:
        json.dump(message, f)


if __name__ == "__main__":
    run(write_message)
    os._exit(0)  # skip interpreter teardown, where gloo sometimes aborts after the work is done
