"""Provided — a pool of gloo worker processes that runs test scenarios (used by tests and the grader).

Starting processes and importing torch costs seconds, so the pool starts ``world_size`` workers once,
initialises their process group once, and then runs many scenarios on them::

    with WorkerPool(world_size=2, pythonpath=["tests"]) as pool:
        per_rank = pool.run("scenarios:train", model="mlp", steps=5)

A scenario is a module-level function ``f(**kwargs)`` run on every rank at the same time; it returns
JSON-like data in which tensors are allowed. The pool is built so that nothing can hang the caller:

* no fixed ports (the OS picks one); every collective has a timeout;
* every scenario has a deadline; when a rank misses it, each stuck rank's Python stack is dumped (so the
  error says where it was stuck), the whole pool is killed and reaped, and the next ``run`` restarts it;
* a worker reports its result before any teardown, and only JSON crosses the channel (never pickle), so a
  worker cannot run code in the caller;
* worker output goes to log files whose tails (bounded) appear in error messages;
* workers are forked by a fork server that imported torch once (no student code ever runs in it): a
  restart after a failure takes milliseconds instead of seconds, and the workers share its memory pages.

This module deliberately does not import torch or any student code: the caller stays light and trusted.
"""

from __future__ import annotations

import base64
import importlib
import json
import os
import resource
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import traceback
from multiprocessing.connection import Connection
from typing import Any

COLLECTIVE_TIMEOUT_S = 20.0
START_TIMEOUT_S = 60.0
MAX_TAIL_CHARS = 2000
MAX_MESSAGE_BYTES = 256 * 1024 * 1024
LOST_EXIT = -1000  # the exit code of a worker whose fork server died before it could report it  # a reply larger than this is refused, not read into memory


class ScenarioError(RuntimeError):
    """A scenario raised on some rank, or missed its deadline (``timed_out``)."""

    def __init__(self, message: str, timed_out: bool = False):
        super().__init__(message)
        self.timed_out = timed_out


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _rss_mb(pid: int) -> float:
    """Resident memory of a process in MB (0 if it is gone)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def output_limiter(max_output_mb: float | None):
    """A ``preexec_fn`` capping every file the child writes (its log) at ``max_output_mb``. It runs in the
    child, so it needs no privilege (prlimit on another user's process would need CAP_SYS_RESOURCE, which
    Gradescope's root lacks)."""
    def limit() -> None:
        if max_output_mb:
            size = int(max_output_mb * 2**20)
            resource.setrlimit(resource.RLIMIT_FSIZE, (size, size))
    return limit


def kill_session(proc: Any) -> None:
    """Kill a process started in its own session, and everything it started there; reap it."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    proc.wait()


def tail_of(path: str, limit: int = MAX_TAIL_CHARS) -> str:
    try:
        with open(path, "rb") as f:
            f.seek(max(0, os.path.getsize(path) - limit))
            return f.read().decode("utf-8", "replace")
    except OSError:
        return ""


# -- encoding: JSON with tensors ------------------------------------------------------------------------

def encode(obj: Any) -> Any:
    """JSON-ready copy of ``obj``; tensors become {"__tensor__": dtype, shape, base64 bytes} (bit-exact)."""
    torch = sys.modules.get("torch")  # a tensor can only exist if torch was imported
    if torch is not None and isinstance(obj, torch.Tensor):
        t = obj.detach().cpu().contiguous()
        raw = t.view(-1).view(_UINT_OF_SIZE[t.element_size()]).numpy().tobytes() if t.numel() else b""
        return {"__tensor__": str(t.dtype).replace("torch.", ""), "shape": list(t.shape),
                "data": base64.b64encode(raw).decode("ascii")}
    if isinstance(obj, dict):
        return {str(k): encode(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [encode(v) for v in obj]
    if obj is None or isinstance(obj, (bool, int, float, str)):
        return obj
    raise TypeError(f"a scenario returned {type(obj).__name__}, which cannot be sent to the caller")


def encode_numpy(obj: Any) -> Any:
    """``encode`` for results decoded ``as_numpy`` (so a grader can store them without torch)."""
    np = sys.modules.get("numpy")
    if np is not None and isinstance(obj, np.ndarray):
        return {"__tensor__": str(obj.dtype), "shape": list(obj.shape),
                "data": base64.b64encode(np.ascontiguousarray(obj).tobytes()).decode("ascii")}
    if isinstance(obj, dict):
        return {str(k): encode_numpy(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [encode_numpy(v) for v in obj]
    return obj


def decode(obj: Any, as_numpy: bool = False) -> Any:
    """Inverse of ``encode``; tensors come back as torch tensors, or as numpy arrays when ``as_numpy``
    (so a trusted grader can compare results without importing torch: bfloat16 becomes float32, exactly)."""
    if isinstance(obj, dict):
        if "__tensor__" in obj and as_numpy:
            return _numpy_array(obj)
        if "__tensor__" in obj:
            import torch
            dtype = getattr(torch, obj["__tensor__"])
            raw = bytearray(base64.b64decode(obj["data"]))
            if not raw:
                return torch.empty(obj["shape"], dtype=dtype)
            bits = torch.frombuffer(raw, dtype=_UINT_OF_SIZE[torch.empty(0, dtype=dtype).element_size()])
            return bits.view(dtype).reshape(obj["shape"])
        return {k: decode(v, as_numpy) for k, v in obj.items()}
    if isinstance(obj, list):
        return [decode(v, as_numpy) for v in obj]
    return obj


def _numpy_array(obj: dict):
    import numpy as np
    raw = base64.b64decode(obj["data"])
    if obj["__tensor__"] == "bfloat16":  # numpy has no bfloat16: widen the bits to float32, exactly
        return (np.frombuffer(raw, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32).reshape(obj["shape"])
    return np.frombuffer(raw, dtype=np.dtype(obj["__tensor__"])).reshape(obj["shape"])


class _UintOfSize(dict):
    """Element size -> an integer dtype of that size (bit-exact reinterpretation); torch loaded lazily."""

    def __missing__(self, size: int):
        import torch
        self.update({1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64})
        return self[size]


_UINT_OF_SIZE = _UintOfSize()


# -- the caller's side -------------------------------------------------------------------------------------

class _Forked:
    """A worker forked by a ``_ForkServer``: the part of ``subprocess.Popen`` the pool uses."""

    def __init__(self, server: "_ForkServer", pid: int):
        self.server, self.pid = server, pid

    @property
    def returncode(self) -> int | None:
        return self.server.exits.get(self.pid)

    def poll(self) -> int | None:
        self.server.collect(0.0)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.returncode is None:
            remaining = 1.0 if deadline is None else deadline - time.monotonic()
            if remaining <= 0:
                raise subprocess.TimeoutExpired(f"worker {self.pid}", timeout or 0)
            self.server.collect(min(remaining, 1.0))
        return self.returncode


def _gone(pid: int) -> bool:
    """True if ``pid`` no longer runs (it does not exist, or it is a zombie nobody reaped yet)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except OSError:
        return True


class _ForkServer:
    """A process that imported torch once and forks a fresh worker per request (the workers' parent).

    It reports each worker's exit code when it reaps it. Requests carry the worker's environment and its
    three file descriptors (channel, stack dump, log), passed over a Unix socket (SCM_RIGHTS).
    """

    def __init__(self, env: dict[str, str], log: str, popen_kwargs: dict):
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        with open(log, "ab") as out:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "minddp.workers", "--fork-server", str(theirs.fileno())], env=env,
                stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, pass_fds=[theirs.fileno()],
                start_new_session=True, **popen_kwargs)
        theirs.close()
        self.sock, self.log = ours, log
        self.workers: list[int] = []  # every pid it forked for us
        self.forked: list[int] = []  # pids the server reported, not yet claimed by ``fork``
        self.exits: dict[int, int] = {}  # pid -> exit code (negative: killed by that signal)

    def alive(self) -> bool:
        return self.proc.poll() is None

    def fork(self, env: dict[str, str], fds: list[int], timeout_s: float) -> _Forked:
        try:
            socket.send_fds(self.sock, [json.dumps(env).encode()], fds)
        except OSError:
            raise ScenarioError("the fork server is gone") from None
        deadline = time.monotonic() + timeout_s
        while not self.forked:
            if time.monotonic() > deadline or not self.alive():
                self.stop()  # a late report must never be taken for the next request's worker
                raise ScenarioError(f"the fork server did not start a worker within {timeout_s:.0f} s; its "
                                    f"output ends with:\n{tail_of(self.log)}")
            self.collect(min(1.0, max(deadline - time.monotonic(), 0.0)))
        pid = self.forked.pop(0)
        self.workers.append(pid)
        return _Forked(self, pid)

    def collect(self, timeout_s: float) -> None:
        """Read the server's reports (forks and exits) for up to ``timeout_s``."""
        readable, _, _ = select.select([self.sock], [], [], timeout_s)
        while readable:
            try:
                message = self.sock.recv(4096, socket.MSG_DONTWAIT)
            except BlockingIOError:
                break
            except OSError:
                message = b""
            if not message:  # the server died: its workers were re-parented and reaped elsewhere
                for pid in self.workers:
                    if pid not in self.exits and _gone(pid):
                        self.exits[pid] = LOST_EXIT
                break
            try:  # the server runs as the workers' user: trust nothing but well-formed reports
                report = json.loads(message)
                if "forked" in report:
                    self.forked.append(int(report["forked"]))
                else:
                    self.exits[int(report["exited"])] = int(report["code"])
            except (ValueError, TypeError, KeyError):
                continue

    def stop(self) -> None:
        kill_session(self.proc)


class WorkerPool:
    """``world_size`` gloo workers on this machine, reused across scenarios."""

    def __init__(self, world_size: int, pythonpath: list[str] | None = None, env: dict[str, str] | None = None,
                 collective_timeout_s: float = COLLECTIVE_TIMEOUT_S, user: str | None = None,
                 as_numpy: bool = False, package_root: str | None = None, max_rss_mb: float | None = None,
                 max_output_mb: float | None = None, recycle_above_mb: float | None = None):
        self.world_size = world_size
        self.pythonpath = [os.path.abspath(p) for p in (pythonpath or [])]
        self.extra_env = dict(env or {})
        self.collective_timeout_s = collective_timeout_s
        self.user = user  # run the workers as this (unprivileged) user, e.g. when grading as root
        self.as_numpy = as_numpy  # results' tensors as numpy arrays: the caller need not import torch
        # The folder holding the minddp package the workers start from (default: this one's).
        self.package_root = package_root or os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        self.max_rss_mb = max_rss_mb  # a worker using more memory is killed and the scenario fails
        self.max_output_mb = max_output_mb  # cap on what a worker may write to its log (RLIMIT_FSIZE)
        self.recycle_above_mb = recycle_above_mb  # restart idle workers that grew past this (leaky code)
        self.procs: list[_Forked] = []
        self.conns: list[Connection] = []
        self.server: _ForkServer | None = None
        self.logdir = tempfile.mkdtemp(prefix="minddp-pool-")
        self.starts = 0  # how many times the pool was (re)started

    def __enter__(self) -> "WorkerPool":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
        if self.server is not None:
            self.server.stop()
            self.server = None
        shutil.rmtree(self.logdir, ignore_errors=True)

    def _log(self, rank: int, kind: str) -> str:
        return os.path.join(self.logdir, f"rank{rank}.{kind}")


    def start(self) -> None:
        self.close()
        self.starts += 1
        if self.server is None or not self.server.alive():
            env = {**os.environ, **self.extra_env, "OMP_NUM_THREADS": "1", "PYTHONUNBUFFERED": "1",
                   "PYTHONPATH": os.pathsep.join([self.package_root, *self.pythonpath]),
                   "TORCH_FR_BUFFER_SIZE": "4000"}  # the flight recorder lets scenarios see every collective
            user = {"user": self.user, "group": self.user, "extra_groups": []} if self.user else {}
            self.server = _ForkServer(env, os.path.join(self.logdir, "fork-server.out"),
                                      {"preexec_fn": output_limiter(self.max_output_mb), **user})
        port = _free_port()
        for rank in range(self.world_size):
            ours, theirs = socket.socketpair()
            env = {"RANK": str(rank), "WORLD_SIZE": str(self.world_size), "LOCAL_RANK": str(rank),
                   "LOCAL_WORLD_SIZE": str(self.world_size), "MASTER_ADDR": "127.0.0.1",
                   "MASTER_PORT": str(port), "MINDDP_COLLECTIVE_TIMEOUT_S": str(self.collective_timeout_s)}
            # The caller opens every file the worker writes, so a worker running as another user needs no
            # write access anywhere (and cannot touch the caller's files).
            with open(self._log(rank, "out"), "ab") as out, open(self._log(rank, "stack"), "wb") as stack:
                try:
                    proc = self.server.fork(env, [theirs.fileno(), stack.fileno(), out.fileno()], START_TIMEOUT_S)
                finally:
                    theirs.close()
            self.procs.append(proc)
            self.conns.append(Connection(ours.detach()))
        replies = self._collect(START_TIMEOUT_S, "starting the workers")
        errors = [f"rank {rank}: {r['error']}" for rank, r in enumerate(replies) if not r["ok"]]
        if errors:
            self.close(graceful=False)
            raise ScenarioError("the workers could not start:\n" + "\n".join(errors))

    def run(self, fn: str, deadline_s: float = 60.0, **kwargs: Any) -> list[Any]:
        """Run ``fn`` ("module:function") with ``kwargs`` on every rank; return each rank's result."""
        if not self.procs:
            self.start()
        message = json.dumps({"fn": fn, "kwargs": encode(kwargs)}).encode()
        try:
            for conn in self.conns:
                conn.send_bytes(message)
        except OSError:
            self.close(graceful=False)
            raise ScenarioError(f"{fn}: the workers were gone before it started")
        replies = self._collect(deadline_s, fn)
        errors = [(rank, r["error"]) for rank, r in enumerate(replies) if not r["ok"]]
        if errors:
            self.close(graceful=False)  # a failed rank may leave collectives half done: never reuse the group
            raise ScenarioError(f"{fn} failed on rank " + "\n\n".join(f"{rank}:\n{err}" for rank, err in errors))
        if self.recycle_above_mb and max(_rss_mb(p.pid) for p in self.procs) > self.recycle_above_mb:
            self.close()  # the next run starts fresh workers
        return [decode(r["result"], self.as_numpy) for r in replies]

    def _collect(self, deadline_s: float, what: str) -> list[dict]:
        """Wait for one reply per rank; on deadline, dump the stuck ranks' stacks and kill the pool."""
        deadline = time.monotonic() + deadline_s
        replies: list[dict | None] = [None] * self.world_size
        while any(r is None for r in replies):
            waiting = [rank for rank, r in enumerate(replies) if r is None]
            if any(r is not None and not r.get("ok", True) for r in replies):
                # One rank failed: the others get a short grace to fail too, then count as stuck.
                deadline = min(deadline, time.monotonic() + 5.0)
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                self._fail_stuck(waiting, replies, what, deadline_s)
            for rank in waiting:
                conn, proc = self.conns[rank], self.procs[rank]
                if self.max_rss_mb and _rss_mb(proc.pid) > self.max_rss_mb:
                    self.close(graceful=False)
                    raise ScenarioError(f"{what}: rank {rank} used more than {self.max_rss_mb:.0f} MB of memory "
                                        "and was stopped")
                if conn.poll(min(0.05, max(remaining, 0.0))):
                    try:
                        replies[rank] = json.loads(conn.recv_bytes(MAX_MESSAGE_BYTES))
                    except (EOFError, OSError, ValueError):
                        replies[rank] = {"ok": False, "error": self._death_note(rank)}
                elif proc.poll() is not None:
                    replies[rank] = {"ok": False, "error": self._death_note(rank)}
        return replies  # type: ignore[return-value]

    def _death_note(self, rank: int) -> str:
        proc = self.procs[rank]
        try:  # its channel closed first; give the kernel a moment to hand us the exit code
            proc.wait(timeout=5.0)
        except subprocess.TimeoutExpired:
            pass
        code = proc.returncode
        if code == LOST_EXIT:
            how = "exit code unknown: its fork server was gone"
        elif code is not None and code < 0:
            how = f"killed by {signal.Signals(-code).name}"
        else:
            how = f"code {code}"
        if code == -signal.SIGXFSZ:
            how += f", it printed more than {self.max_output_mb:.0f} MB"
        return (f"worker exited ({how}) before reporting a result; its output ends with:\n"
                f"{tail_of(self._log(rank, 'out'))}")

    def _fail_stuck(self, stuck: list[int], replies: list, what: str, deadline_s: float) -> None:
        for rank in stuck:
            try:
                os.kill(self.procs[rank].pid, signal.SIGUSR1)  # faulthandler dumps every thread's stack
            except ProcessLookupError:
                pass
        wait_until = time.monotonic() + 2.0
        while time.monotonic() < wait_until and not all(tail_of(self._log(r, "stack")) for r in stuck):
            time.sleep(0.02)  # polling for the dump to appear, bounded; not synchronisation
        parts = []
        for rank in stuck:
            stack = tail_of(self._log(rank, "stack"), MAX_TAIL_CHARS)
            parts.append(f"rank {rank} was stuck here:\n{stack or '(no stack could be taken)'}")
        done = [rank for rank, r in enumerate(replies) if r is not None]
        self.close(graceful=False)
        raise ScenarioError(f"{what} did not finish within {deadline_s:.0f} s on rank(s) {stuck} "
                            f"(finished: {done}); a common cause is ranks launching different collectives "
                            f"or the same collectives in a different order.\n\n" + "\n\n".join(parts),
                            timed_out=True)

    def close(self, graceful: bool = True) -> None:
        """Stop every worker and reap it: idle workers may leave on their own, the rest are killed."""
        if graceful:
            for conn in self.conns:
                try:
                    conn.send_bytes(b'{"fn": null}')
                except OSError:
                    pass
            for proc in self.procs:
                try:
                    proc.wait(timeout=2.0)
                except subprocess.TimeoutExpired:
                    pass
        for proc in self.procs:
            if proc.poll() is None:
                kill_session(proc)
        for conn in self.conns:
            conn.close()
        self.procs, self.conns = [], []


# -- the worker's side -------------------------------------------------------------------------------------

def _release_memory() -> None:
    """Hand freed memory back to the OS between scenarios, so a long-lived worker stays small."""
    import ctypes
    import gc
    gc.collect()
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):  # not glibc: nothing to trim
        pass


def _worker_main(fd: int, stack_fd: int, collective_timeout_s: float) -> None:
    import faulthandler
    import gc
    from datetime import timedelta

    conn = Connection(fd)
    stack = os.fdopen(stack_fd, "w")
    faulthandler.register(signal.SIGUSR1, file=stack, all_threads=True)
    try:
        import torch.distributed as dist
        dist.init_process_group("gloo", timeout=timedelta(seconds=collective_timeout_s))
        conn.send_bytes(json.dumps({"ok": True, "result": None}).encode())
    except BaseException:
        conn.send_bytes(json.dumps({"ok": False, "error": traceback.format_exc()}).encode())
        os._exit(1)
    while True:
        try:
            request = json.loads(conn.recv_bytes())
        except (EOFError, OSError):
            break
        if request["fn"] is None:
            break
        try:
            module_name, _, function_name = request["fn"].partition(":")
            function = getattr(importlib.import_module(module_name), function_name)
            reply = {"ok": True, "result": encode(function(**decode(request["kwargs"])))}
        except BaseException:  # report everything, even SystemExit from a scenario
            reply = {"ok": False, "error": traceback.format_exc(limit=-12)[-MAX_TAIL_CHARS * 2:]}
        conn.send_bytes(json.dumps(reply).encode())
        reply = request = None
        _release_memory()
    # Report first, tear down last: gloo sometimes aborts at exit, which must not look like a failure.
    gc.collect()
    try:
        dist.destroy_process_group()
    finally:
        os._exit(0)


def _fork_server_main(fd: int) -> None:
    """Import torch once, then fork one worker per request and report its pid, and its exit code when it
    ends, until the caller closes the socket. Runs no scenario itself: it never loads student code."""
    import torch  # noqa: F401  (the point: every worker inherits it already imported)
    import torch.distributed  # noqa: F401

    sock = socket.socket(fileno=fd)
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)  # SIGCHLD wakes the select below
    signal.signal(signal.SIGCHLD, lambda *_: None)
    while True:
        readable, _, _ = select.select([sock, wake_r], [], [])
        if wake_r in readable:
            os.read(wake_r, 4096)
        while True:  # reap every worker that ended and report it
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
            sock.send(json.dumps({"exited": pid, "code": os.waitstatus_to_exitcode(status)}).encode())
        if sock not in readable:
            continue
        message, fds, _, _ = socket.recv_fds(sock, 65536, 3)
        if not message:
            os._exit(0)  # the caller is gone; it kills its workers itself
        pid = os.fork()
        if pid == 0:
            _forked_worker(json.loads(message), fds, [sock.fileno(), wake_r, wake_w])
        for f in fds:
            os.close(f)
        sock.send(json.dumps({"forked": pid}).encode())


def _forked_worker(env: dict[str, str], fds: list[int], server_fds: list[int]) -> None:
    """In the child of the fork server: become a worker (own session, own log, own environment)."""
    try:
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        for f in server_fds:
            os.close(f)
        os.setsid()  # its own process group: the pool kills it and anything it starts
        channel, stack, out = fds
        os.dup2(out, 1)
        os.dup2(out, 2)
        os.close(out)
        os.environ.update(env)
        _worker_main(channel, stack, float(env["MINDDP_COLLECTIVE_TIMEOUT_S"]))
    finally:
        os._exit(1)


if __name__ == "__main__":
    _fork_server_main(int(sys.argv[2]))
