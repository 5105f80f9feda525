"""Provided — a pool of gloo worker processes that runs scenarios (used by `make test` and by the grader).

Importing torch costs a second per process, so a *fork server* imports it once and forks a fresh worker
per request; a pool of ``world_size`` such workers joins one gloo process group and runs scenarios::

    server = ForkServer(warm_up="my_scenarios:warm_up")
    with WorkerPool(server, world_size=2, paths=["."]) as pool:
        per_rank = pool.run("my_scenarios:train", impl="minddp", model="mlp", steps=3)

The caller names the module of its scenarios; the pool imports nothing of it (``warm_up``: a function the
fork server runs once, so every worker starts with that module loaded and warm). A scenario is a
module-level function ``f(**kwargs)`` run on every rank at once; it returns JSON-like data
in which tensors are allowed (they arrive as numpy arrays, bit for bit). Nothing can hang the caller:

* no fixed ports (the OS picks one); every collective has a timeout;
* every ``run`` has a deadline; a rank that misses it has its Python stack dumped (so the failure says
  where it was stuck), then the whole pool is killed and the next ``run`` starts fresh workers;
* a failure is data, not text: ``ScenarioError.failures`` holds one ``RankFailure`` per failed rank
  (raised, timed out, exited, ...), and ``feedback.py``-style code words it;
* only JSON crosses the channel (never pickle), so a worker cannot run code in the caller, and a reply
  that is not well formed is a failure of that rank, never a crash of the caller.

The pieces, one file each: ``wire.py`` (what crosses between processes: tensors, messages, replies read
as results or ``RankFailure``), ``fork_server.py`` (the process that imports torch and forks the workers),
``worker_loop.py`` (a worker's side: its setup, the loop that runs scenarios, its error reports); this file
is the pool itself, and what the rest imports.

The grader subclasses ``WorkerPool`` (memory and output caps) and starts its own fork server whose
children isolate themselves before running any student code; these files are what both sides share.
"""

from __future__ import annotations

import json
import os
import select
import shutil
import signal
import socket
import tempfile
import time
from typing import Any

from checks.fork_server import START_TIMEOUT_S, ForkServer, serve
from checks.wire import (
    MAX_REPLY_BYTES,
    Inbox,
    RankFailure,
    decode,
    encode,
    encode_arrays,
    recv_message,
    reply_outcome,
    send_message,
    tail_of,
)
from checks.worker_loop import _error_report

# What the checks, the grader and the tests import from here: the pool, and the pieces it is made of.
__all__ = ["COLLECTIVE_TIMEOUT_S", "START_TIMEOUT_S", "STACK_END", "ForkServer", "RankFailure", "ScenarioError",
           "WorkerPool", "_error_report", "_free_port", "decode", "encode", "encode_arrays", "recv_message",
           "reply_outcome", "send_message", "serve", "tail_of"]

COLLECTIVE_TIMEOUT_S = 20.0
# A stuck rank's stack: faulthandler writes it frame by frame, the main thread last (the newest thread comes
# first), and the main thread's outermost frame is runpy's, which started the fork server: once that line is
# in the file the dump is whole. Read earlier, on a loaded machine, it may hold a frame or two.
STACK_END = " in _run_module_as_main"
STACK_WAIT_S = 10.0  # at most, for a rank whose dump never completes (say, it blocked the signal)


# -- failures, as data (one RankFailure per failed rank: wire.py) --------------------------------------------

class ScenarioError(RuntimeError):
    """A scenario failed on some rank(s): ``failures`` says how, per rank; ``finished`` lists the ranks
    that returned normally."""

    def __init__(self, what: str, failures: list[RankFailure], finished: list[int], deadline_s: float = 0.0):
        self.what, self.failures, self.finished, self.deadline_s = what, failures, finished, deadline_s
        super().__init__(f"{what}: " + "; ".join(f"rank {f.rank} {f.kind} {f.error} {f.message}".strip()
                                                 for f in failures))

    @property
    def timed_out(self) -> bool:
        return any(f.kind == "timeout" for f in self.failures)


# -- the caller's side ----------------------------------------------------------------------------------------

PENDING = object()  # a reply still on its way

class WorkerPool:
    """``world_size`` gloo workers forked by ``server``, reused across scenarios until one fails.

    ``paths``: folders put first on the workers' ``sys.path`` (the code under test, the harness).
    ``setup``: handed to the server's child hook (the grader's isolation settings).
    """

    def __init__(self, server: ForkServer, world_size: int, paths: list[str] | None = None,
                 env: dict[str, str] | None = None, setup: dict | None = None,
                 collective_timeout_s: float = COLLECTIVE_TIMEOUT_S):
        self.server, self.world_size = server, world_size
        self.paths = [os.path.abspath(p) for p in (paths or [])]
        self.env, self.setup = dict(env or {}), dict(setup or {})
        self.collective_timeout_s = collective_timeout_s
        self.pids: list[int] = []
        self.inboxes: list[Inbox] = []
        self.logdir = ""  # a fresh folder per start, removed by close()
        self.starts = 0  # how many times workers were started

    def __enter__(self) -> WorkerPool:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def log_path(self, rank: int, kind: str) -> str:
        return os.path.join(self.logdir, f"rank{rank}.{kind}")

    def worker_env(self, rank: int, port: int) -> dict[str, str]:
        """Everything a worker's environment holds: torchrun's variables and the pool's settings."""
        return {**self.env, "RANK": str(rank), "WORLD_SIZE": str(self.world_size), "LOCAL_RANK": str(rank),
                "LOCAL_WORLD_SIZE": str(self.world_size), "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port),
                "MINDDP_COLLECTIVE_TIMEOUT_S": str(self.collective_timeout_s), "OMP_NUM_THREADS": "1",
                "PYTHONUNBUFFERED": "1", "PYTHONDONTWRITEBYTECODE": "1", "TORCH_FR_BUFFER_SIZE": "2000",
                "MINDDP_PATHS": os.pathsep.join(self.paths)}

    def start(self) -> None:
        self.fork_workers()
        self._collect(START_TIMEOUT_S, "starting the workers")

    def fork_workers(self) -> None:
        self.close()
        self.starts += 1
        self.logdir = tempfile.mkdtemp(prefix="minddp-pool-")
        port = _free_port()
        for rank in range(self.world_size):
            ours, theirs = socket.socketpair()
            # The caller opens every file a worker writes: a worker running as another user needs no write
            # access anywhere, and cannot swap the file for something else.
            with open(self.log_path(rank, "out"), "wb") as out, open(self.log_path(rank, "stack"), "wb") as stack:
                try:
                    self.pids.append(self.server.fork(self.worker_env(rank, port), self.setup,
                                                      [theirs.fileno(), stack.fileno(), out.fileno()]))
                finally:
                    theirs.close()
            self.inboxes.append(Inbox(ours))

    def run(self, fn: str, deadline_s: float = 60.0, **kwargs: Any) -> list[Any]:
        """Run ``fn`` ("module:function") with ``kwargs`` on every rank; return each rank's result."""
        if not self.pids:
            self.start()
        message = json.dumps({"fn": fn, "kwargs": kwargs}).encode()
        for rank, inbox in enumerate(self.inboxes):
            try:
                inbox.sock.setblocking(True)
                send_message(inbox.sock, message)
                inbox.sock.setblocking(False)
            except OSError:
                self.close(graceful=False)
                raise ScenarioError(fn, [RankFailure(rank, "exited", message="gone before the scenario started")], []) from None
        return self._collect(deadline_s, fn.split(":")[-1])

    def _collect(self, deadline_s: float, what: str) -> list[Any]:
        """One result per rank, or ScenarioError; on a deadline, dump the stuck ranks' stacks first. Every rank
        is watched until the last one is done (one that replied may still misbehave meanwhile)."""
        deadline = time.monotonic() + deadline_s
        results: dict[int, Any] = {}
        failures: dict[int, RankFailure] = {}
        while len(results) + len(failures) < self.world_size:
            waiting = [r for r in range(self.world_size) if r not in results and r not in failures]
            if failures:  # the others get a short grace to fail too (their collectives broke), then count as stuck
                deadline = min(deadline, time.monotonic() + 5.0)
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                for failure in self._stuck(waiting):
                    failures[failure.rank] = failure
                break
            for rank in range(self.world_size):
                failure = self.watch(rank) if rank not in failures else None
                if failure is not None:
                    results.pop(rank, None)
                    failures[rank] = failure
            readable, _, _ = select.select([self.inboxes[r] for r in waiting if r not in failures], [], [],
                                           min(remaining, 0.05))
            for inbox in readable:
                rank = self.inboxes.index(inbox)
                reply = self._reply(rank)
                if isinstance(reply, RankFailure):
                    failures[rank] = reply
                elif reply is not PENDING:
                    results[rank] = reply
            for rank in waiting:
                if rank not in results and rank not in failures and self.server.exit_code(self.pids[rank]) is not None:
                    reply = self._last_words(rank)  # it may have replied after select() looked, then exited
                    if isinstance(reply, RankFailure):
                        failures[rank] = reply
                    else:
                        results[rank] = reply
        if failures:
            self.close(graceful=False)  # a failed rank may leave collectives half done: never reuse the group
            raise ScenarioError(what, [failures[r] for r in sorted(failures)], sorted(results), deadline_s)
        return [results[r] for r in range(self.world_size)]

    def _reply(self, rank: int) -> Any:
        """A rank's result, a RankFailure, or PENDING (its message is not complete yet). A reply must be
        ``{"ok": true, "result": ...}`` or ``{"ok": false, "error": {"error", "message", "where"}}``."""
        status, payload = self.inboxes[rank].read()
        if status == "more":
            return PENDING
        if status == "closed":
            return self._exited(rank)
        if status == "too large":
            return RankFailure(rank, "garbled", message=f"its reply was larger than {MAX_REPLY_BYTES >> 20} MB",
                               log=self.log_tail(rank))
        return reply_outcome(rank, payload, self.log_tail(rank))

    def _last_words(self, rank: int) -> Any:
        """A rank that has exited: the reply it sent before it went, if the whole of it is here; else how it
        failed. Reads only while bytes arrive (a child of the rank may hold its end of the channel open)."""
        inbox = self.inboxes[rank]
        while True:
            before = len(inbox.buffer)
            reply = self._reply(rank)
            if reply is not PENDING:
                return reply
            if len(inbox.buffer) == before:
                return self._exited(rank)

    def _exited(self, rank: int) -> RankFailure:
        deadline = time.monotonic() + 5.0  # its channel closed first; the exit code follows shortly
        while self.server.exit_code(self.pids[rank]) is None and time.monotonic() < deadline:
            self.server.collect(0.1)
        return RankFailure(rank, "exited", code=self.server.exit_code(self.pids[rank]), log=self.log_tail(rank))

    def _stuck(self, ranks: list[int]) -> list[RankFailure]:
        for rank in ranks:
            try:
                os.kill(self.pids[rank], signal.SIGUSR1)  # faulthandler dumps every thread's stack
            except ProcessLookupError:
                pass
        until = time.monotonic() + STACK_WAIT_S
        while time.monotonic() < until and not all(STACK_END in tail_of(self.log_path(r, "stack")) for r in ranks):
            time.sleep(0.02)  # bounded polling for the whole dump to appear (STACK_END), not synchronisation
        return [RankFailure(r, "timeout", where=tail_of(self.log_path(r, "stack")) or "(no stack could be taken)",
                            log=self.log_tail(r)) for r in ranks]

    def log_tail(self, rank: int) -> str:
        return tail_of(self.log_path(rank, "out"))

    def watch(self, rank: int) -> RankFailure | None:
        """Called while waiting for ``rank``: a subclass may stop it (memory, output) by returning a failure."""
        return None

    def close(self, graceful: bool = True, reap: bool = False) -> None:
        """Stop every worker: idle workers leave on their own, the rest are killed (``reap``: and gone)."""
        if graceful:
            for inbox in self.inboxes:
                try:
                    inbox.sock.setblocking(True)
                    send_message(inbox.sock, b'{"fn": null}')
                except OSError:
                    pass
            deadline = time.monotonic() + 2.0
            while time.monotonic() < deadline and any(self.server.exit_code(p) is None for p in self.pids):
                self.server.collect(0.05)
        for pid in self.pids:
            if self.server.exit_code(pid) is None:
                try:
                    os.killpg(pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
        # With ``reap``, wait until the server has reaped them: a killed process keeps its sockets (an abstract
        # one, say) until it is gone. (Bounded: a server that died reports nothing; its workers died with it.)
        deadline = time.monotonic() + 10.0
        while reap and time.monotonic() < deadline and self.server.alive() and \
                any(self.server.exit_code(p) is None for p in self.pids):
            self.server.collect(0.05)
        for inbox in self.inboxes:
            inbox.close()
        self.pids, self.inboxes = [], []
        if self.logdir:
            shutil.rmtree(self.logdir, ignore_errors=True)
            self.logdir = ""


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]

