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
* ``launch``: instead of the worker loop, run check 1.4's probe once (``launch_main``).

``GradingPool`` adds what the grader needs to ``checks.pool.WorkerPool``: a memory cap per worker, and
failures worded by kind (memory, output flood).
"""

from __future__ import annotations

import os
import resource
import signal
import sys
from collections.abc import Callable
from typing import Any

from checks.pool import START_TIMEOUT_S, RankFailure, ScenarioError, WorkerPool, _free_port, serve

# torch's DDP machinery (handout §8): the functions are replaced wherever a loaded module holds them, and the
# classes are disabled in place (their methods raise), so finding them another way (a module's __dict__,
# __subclasses__, gc) gives nothing usable.
TRAPPED_FUNCTIONS = (("torch._C._distributed_c10d", "_compute_bucket_assignment_by_size"),
                     ("torch._C._distributed_c10d", "_broadcast_coalesced"),
                     ("torch._C._distributed_c10d", "_register_comm_hook"),
                     ("torch._C._distributed_c10d", "_register_builtin_comm_hook"))
TRAPPED_CLASSES = (("torch.nn.parallel.distributed", "DistributedDataParallel"),
                   ("torch._C._distributed_c10d", "Reducer"))

# What check 1.4's store host may allocate beyond what it inherits: the ranks write it a few keys (bytes), but
# they can write it anything, and it shares Gradescope's 768 MB with the grader (a rank once pushed 600 MB).
STORE_HEADROOM_MB = 64

# The server's own import paths (its PYTHONPATH: the harness and the grader, host paths): a child drops them,
# so the code under test resolves imports from the child's own paths only, the same in a jail or not.
SERVER_PATHS = tuple(p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p)


# What a child changes in the modules it inherits, found once by the fork server after its last import
# (``scan_modules``): a child that read every loaded module's namespace itself would touch, and so copy from the
# server, the memory pages of all they hold (~47 MB per worker, more than a scenario needs).
TRAP_SITES: list[tuple[dict, str]] = []  # (a module's namespace, a name in it) holding one of TRAPPED_FUNCTIONS
HOOK_MODULES: list[str] = []  # the loaded modules of torch's comm hooks: a child with traps drops them
CODE_MODULES: list[str] = []  # loaded modules of code under test (minddp, answers): every child drops them


def scan_modules() -> None:
    """In the fork server, once, before its first fork: TRAP_SITES, HOOK_MODULES and CODE_MODULES (no module is
    imported between this and a child's setup: tests/test_zygote.py finds no alias left untrapped)."""
    trapped = {id(getattr(sys.modules[m], n)) for m, n in TRAPPED_FUNCTIONS if hasattr(sys.modules.get(m), n)}
    for module in list(sys.modules.values()):
        namespace = getattr(module, "__dict__", None)
        if isinstance(namespace, dict):
            TRAP_SITES.extend((namespace, name) for name, value in namespace.items() if id(value) in trapped)
    HOOK_MODULES[:] = [n for n in sys.modules if n.startswith("torch.distributed.algorithms.ddp_comm_hooks")]
    CODE_MODULES[:] = [n for n in sys.modules if n == "minddp" or n.startswith("minddp.") or n == "answers"]


class BannedAPI(RuntimeError):
    pass


def _trap(where: str):
    def trap(*args: Any, **kwargs: Any) -> None:
        raise BannedAPI(f"{where} is not allowed in this homework (handout §8: allowed APIs)")
    return trap


def install_traps(untrapped: list[str]) -> None:
    """Make torch's DDP machinery raise when used: a speed bump, not a wall (the static check and the
    integrity report catch a determined attempt; SECURITY.md), but one that no lookup gets around."""
    originals = {}
    for module_name, name in TRAPPED_FUNCTIONS:
        module = sys.modules.get(module_name)
        if module is not None and name not in untrapped and hasattr(module, name):
            originals[id(getattr(module, name))] = _trap(f"torch.distributed.{name}")
    for namespace, name in TRAP_SITES:  # every alias: torch.distributed.X, distributed_c10d.X, ...
        trap = originals.get(id(namespace.get(name)))
        if trap is not None:
            namespace[name] = trap
    for module_name, name in TRAPPED_CLASSES:
        cls = getattr(sys.modules.get(module_name), name, None)
        if cls is None or name in untrapped:
            continue
        for attribute, value in list(vars(cls).items()):
            if callable(value) and attribute not in ("__class__", "__subclasshook__", "__init_subclass__"):
                try:
                    setattr(cls, attribute, _trap(f"{cls.__module__}.{name}"))
                except (TypeError, AttributeError):
                    pass
    for name in HOOK_MODULES:
        sys.modules.pop(name, None)
    sys.modules["torch.distributed.algorithms.ddp_comm_hooks"] = None  # importing it raises ImportError


def child_setup(setup: dict) -> None:
    if setup.get("fsize_mb"):
        size = int(setup["fsize_mb"] * 2**20)
        resource.setrlimit(resource.RLIMIT_FSIZE, (size, size))
    code = [p for p in os.environ.get("MINDDP_PATHS", "").split(os.pathsep) if p]
    sys.path[:] = code + [p for p in sys.path if p not in code and p not in SERVER_PATHS]
    if setup.get("store_host"):  # (before the jail: a chroot has no /proc to read what it holds)
        cap_data(STORE_HEADROOM_MB)
    if setup.get("jail"):
        from grader import sandbox
        jail = setup["jail"]
        sandbox.enter(sandbox.Jail(**{k: tuple(tuple(x) if isinstance(x, list) else x for x in v)
                                       if isinstance(v, list) else v for k, v in jail.items()}))
    if setup.get("traps", True):
        install_traps(setup.get("untrapped", []))
    for name in CODE_MODULES:
        sys.modules.pop(name, None)  # the code under test is the one in this child's paths
    if setup.get("store_host"):
        return store_main
    return launch_main if setup.get("launch") else None


def cap_data(headroom_mb: float) -> None:
    """RLIMIT_DATA: the data this process holds now (inherited from the fork server) plus ``headroom_mb``; the
    kernel refuses more (malloc fails), whoever asks for it."""
    with open("/proc/self/status") as f:
        data_kb = next(int(line.split()[1]) for line in f if line.startswith("VmData:"))
    limit = data_kb * 1024 + int(headroom_mb * 2**20)
    resource.setrlimit(resource.RLIMIT_DATA, (limit, limit))


def store_main(fd: int, stack_fd: int) -> None:
    """Check 1.4's rendezvous store, hosted outside the ranks as torchrun's agent hosts it (a jailed process of
    a uid of its own): it says ready, then answers every request with the keys the ranks wrote in it. A
    process group's ranks meet there; ranks that fake the sum some other way never do."""
    import json
    import socket
    from datetime import timedelta

    import torch.distributed as dist

    from checks.pool import COLLECTIVE_TIMEOUT_S, recv_message, send_message
    sock = socket.socket(fileno=fd)
    store = dist.TCPStore("localhost", int(os.environ["MASTER_PORT"]), is_master=True, wait_for_workers=False,
                          timeout=timedelta(seconds=COLLECTIVE_TIMEOUT_S))
    send_message(sock, json.dumps({"ok": True, "result": None}).encode())
    while True:
        message = recv_message(sock)
        if message is None or json.loads(message).get("fn") is None:
            os._exit(0)
        send_message(sock, json.dumps({"ok": True, "result": sorted(store.list_keys())}).encode())


def launch_main(fd: int, stack_fd: int) -> None:
    """A rank of check 1.4's launch: tests/launch_probe.py's ``run`` (the student's init_process_group, with
    torchrun's environment) sends its message, once, on the channel; then leave."""
    import faulthandler
    import json
    import socket

    from checks.pool import send_message
    sock = socket.socket(fileno=fd)
    faulthandler.register(signal.SIGUSR1, file=os.fdopen(stack_fd, "w"), all_threads=True)
    import launch_probe
    launch_probe.run(lambda message: send_message(sock, json.dumps(message).encode()))
    os._exit(0)


def server_setup() -> None:
    if "--network" in sys.argv:
        from grader import sandbox
        sandbox.enter_network_namespace()
    scan_modules()


class LaunchPool:
    """Mixin for check 1.4: ranks with torchrun's environment (``torchrun_env.json``) that run the probe
    instead of the pool's loop; the student's init_process_group makes the process group. Like torchrun's
    agent, a process outside the ranks (``store``, a ``StorePool``) hosts the rendezvous store at MASTER_PORT:
    what the ranks wrote there is evidence no rank's report can stand in for."""

    torchrun_envs: list[dict] = []
    values: list[int] = []
    store: StorePool | None = None

    def worker_env(self, rank: int, port: int) -> dict[str, str]:
        env = super().worker_env(rank, port)
        for name in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"):
            del env[name]
        port = self.store.port if self.store else port
        torchrun = {k: v.format(port=port, run_id=f"minddp-{port}") for k, v in self.torchrun_envs[rank].items()}
        return {**env, **torchrun, "MINDDP_PROBE_VALUE": str(self.values[rank])}

    def run_launch(self, deadline_s: float) -> list:
        if self.store is not None:
            self.store.start()
        self.fork_workers()
        results = self._collect(deadline_s, "the torchrun launch")
        if self.store is not None:
            try:
                met = self.store.ranks_met(len(results))
            except ScenarioError:  # the store host died (its memory cap, say): no rank met anyone there
                met = []
            for result in results:
                if isinstance(result, dict):
                    result["rendezvous"] = met  # the store's word, whatever the rank's report said
        return results


class StorePool(WorkerPool):
    """The one process that hosts check 1.4's rendezvous store (``store_main``), on a free port."""

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.setup["store_host"] = True
        self.port = _free_port()

    def worker_env(self, rank: int, port: int) -> dict[str, str]:
        return {**super().worker_env(rank, port), "MASTER_PORT": str(self.port)}

    def ranks_met(self, nproc: int) -> list[int]:
        """The ranks whose process group wrote its address in the store (gloo's ``default_pg/.../<rank>``)."""
        keys = [k for k in self.run("store:keys", deadline_s=START_TIMEOUT_S)[0] if isinstance(k, str) and "default_pg/" in k]
        return [rank for rank in range(nproc) if any(k.rsplit("/", 1)[-1] == str(rank) for k in keys)]


class GradingPool(WorkerPool):
    """A worker pool with a memory cap per worker and an output cap per log."""

    def __init__(self, *args: Any, max_rss_mb: float | None = None, max_output_mb: float | None = None,
                 on_start: Callable[[], None] | None = None, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.max_rss_mb, self.max_output_mb, self.on_start = max_rss_mb, max_output_mb, on_start
        self.setup.setdefault("fsize_mb", max_output_mb)

    def fork_workers(self) -> None:
        self.close()
        if self.on_start is not None:  # e.g. a fresh folder to write in: nothing of earlier workers reaches these
            self.on_start()
        super().fork_workers()

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
