"""The grader's fork server and pool: every child is isolated before it can run a line of student code.

    python -m grader.zygote --fork-server FD [--network]

The server (root, trusted) imports torch and the harness once, optionally enters a network namespace of
its own (only 127.0.0.1, for the gloo workers of the student pass), and forks a child per request. The
child applies the request's ``setup`` (written by the trusted grader, never by student code):

* ``fsize_mb``: RLIMIT_FSIZE, so a log (a file the grader opened) cannot grow past it;
* ``jail``: ``sandbox.enter`` (own mounts and /tmp, the code to grade read-only, a uid of its own, no new
  processes);
* ``untrapped``: torch's DDP machinery is replaced by traps that raise, except these names (the
  stand-ins of this check call them);
* ``exec``: instead of the worker loop, exec this command (the torchrun launch of check 1.4).

``GradingPool`` adds what the grader needs to ``grading.pool.WorkerPool``: a memory cap per worker, and
failures worded by kind (memory, output flood).
"""

from __future__ import annotations

import os
import resource
import signal
import sys
from typing import Any

from grading.pool import RankFailure, WorkerPool, serve

# torch's DDP machinery: (module, attribute) pairs replaced by traps in student workers (handout §8).
TRAPPED = (("torch.nn.parallel", "DistributedDataParallel"), ("torch.nn.parallel.distributed", "DistributedDataParallel"),
           ("torch.distributed", "_compute_bucket_assignment_by_size"), ("torch.distributed", "_broadcast_coalesced"),
           ("torch.distributed", "Reducer"), ("torch.distributed", "_register_comm_hook"),
           ("torch._C._distributed_c10d", "Reducer"), ("torch._C._distributed_c10d", "_compute_bucket_assignment_by_size"),
           ("torch._C._distributed_c10d", "_broadcast_coalesced"), ("torch._C._distributed_c10d", "_register_comm_hook"))


# The server's own import path (the grader's source): never visible to a child.
SERVER_PATHS = tuple(p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p)


class BannedAPI(RuntimeError):
    pass


def install_traps(untrapped: list[str]) -> None:
    """Make torch's DDP machinery raise when called (a speed bump, not a wall: the static check and the
    integrity report are what catch a determined attempt; see SECURITY.md)."""
    for module_name, name in TRAPPED:
        module = sys.modules.get(module_name)
        if module is None or name in untrapped or not hasattr(module, name):
            continue

        def trap(*args: Any, _where: str = f"{module_name}.{name}", **kwargs: Any) -> None:
            raise BannedAPI(f"{_where} is not allowed in this homework (handout §8: allowed APIs)")
        setattr(module, name, trap)
    for name in [n for n in sys.modules if n.startswith("torch.distributed.algorithms.ddp_comm_hooks")]:
        del sys.modules[name]
    sys.modules["torch.distributed.algorithms.ddp_comm_hooks"] = None  # importing it raises ImportError


def child_setup(setup: dict) -> None:
    if setup.get("fsize_mb"):
        size = int(setup["fsize_mb"] * 2**20)
        resource.setrlimit(resource.RLIMIT_FSIZE, (size, size))
    code = [p for p in os.environ.get("MINDDP_PATHS", "").split(os.pathsep) if p]
    sys.path[:] = code + [p for p in sys.path if p not in code and p not in SERVER_PATHS]
    if setup.get("jail"):
        from grader import sandbox
        jail = setup["jail"]
        sandbox.enter(sandbox.Jail(**{k: tuple(tuple(x) if isinstance(x, list) else x for x in v)
                                       if isinstance(v, list) else v for k, v in jail.items()}))
    if "exec" in setup:
        os.execve(setup["exec"][0], setup["exec"], dict(os.environ))
    if setup.get("traps", True):
        install_traps(setup.get("untrapped", []))
    for name in [n for n in sys.modules if n == "minddp" or n.startswith("minddp.") or n == "answers"]:
        del sys.modules[name]  # the code under test is the one in this child's paths


def server_setup() -> None:
    if "--network" in sys.argv:
        from grader import sandbox
        sandbox.enter_network_namespace()


class GradingPool(WorkerPool):
    """A worker pool with a memory cap per worker and an output cap per log."""

    def __init__(self, *args: Any, max_rss_mb: float | None = None, max_output_mb: float | None = None, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.max_rss_mb, self.max_output_mb = max_rss_mb, max_output_mb
        self.setup.setdefault("fsize_mb", max_output_mb)

    def watch(self, rank: int) -> RankFailure | None:
        if self.max_rss_mb and rss_mb(self.pids[rank]) > self.max_rss_mb:
            return RankFailure(rank, "memory", message=f"used more than {self.max_rss_mb:.0f} MB of memory (at most "
                               f"{self.max_rss_mb:.0f} MB per process: Gradescope has 768 MB for everything)")
        return None

    def _reply(self, rank: int):
        reply = super()._reply(rank)
        if isinstance(reply, RankFailure) and reply.kind == "raised" and "[Errno 27] File too large" in reply.message:
            reply.kind, reply.message = "output", f"printed more than {self.max_output_mb:.0f} MB"  # RLIMIT_FSIZE
        return reply

    def _exited(self, rank: int) -> RankFailure:
        failure = super()._exited(rank)
        if failure.code == -signal.SIGXFSZ:
            failure.kind, failure.message = "output", f"printed more than {self.max_output_mb:.0f} MB"
        return failure


def rss_mb(pid: int) -> float:
    """Resident memory of a process in MB (0 if it is gone)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


if __name__ == "__main__":
    serve(int(sys.argv[2]), child_setup=child_setup, server_setup=server_setup)
