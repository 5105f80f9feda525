# GENERATED from solutions/checks/pool.py by tools/assign.py (staff: edit that file, then `make assignment`).
# Provided code: do not edit it by hand; the grader uses its own copy.
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

The grader subclasses ``WorkerPool`` (memory and output caps) and starts its own fork server whose
children isolate themselves before running any student code; this file is what both sides share.
"""

from __future__ import annotations

import base64
import binascii
import importlib
import json
import linecache
import os
import select
import shutil
import signal
import socket
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from checks.error_text import steady

COLLECTIVE_TIMEOUT_S = 20.0
START_TIMEOUT_S = 60.0
MAX_REPLY_BYTES = 32 * 2**20  # a larger reply is refused before it is read (the largest real one: ~9 MB)
MAX_REPLY_TOKENS = 1_000_000  # JSON brackets and commas: a reply of millions of tiny lists would take GBs
TENSOR_DTYPES = {"float16": 2, "bfloat16": 2, "float32": 4, "float64": 8, "int8": 1, "uint8": 1, "int16": 2,
                 "int32": 4, "int64": 8, "bool": 1}
TAIL_CHARS = 2000  # of a log or a traceback, in a failure
# A stuck rank's stack: faulthandler writes it frame by frame, the main thread last (the newest thread comes
# first), and the main thread's outermost frame is runpy's, which started the fork server: once that line is
# in the file the dump is whole. Read earlier, on a loaded machine, it may hold a frame or two.
STACK_END = " in _run_module_as_main"
STACK_WAIT_S = 10.0  # at most, for a rank whose dump never completes (say, it blocked the signal)
# What the fork server imports before forking: every worker starts with it loaded (and with the module of the
# caller's ``warm_up``, which the server runs next).
PRELOAD = ("torch", "torch.distributed", "numpy")


# -- failures, as data --------------------------------------------------------------------------------------

@dataclass
class RankFailure:
    """What went wrong on one rank. ``kind``: "raised" (an exception: ``error`` is its type, ``message``
    its text, ``where`` the end of its traceback), "timeout" (``where``: the rank's stack when the deadline
    passed), "exited" (``code``: exit code, negative for a signal), "garbled" (a reply that is not JSON of
    the expected shape), or a kind a subclass adds ("memory", "output")."""

    rank: int
    kind: str
    error: str = ""
    message: str = ""
    where: str = ""
    code: int | None = None
    log: str = ""  # the end of what the rank printed


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


# -- the JSON channel: tensors as (dtype, shape, bytes) --------------------------------------------------------

def encode(obj: Any) -> Any:
    """JSON-ready copy of ``obj``; a tensor becomes {"__tensor__": dtype, "shape", "data": base64} (bit-exact)."""
    torch = sys.modules.get("torch")  # a tensor can only exist if torch was imported
    if torch is not None and isinstance(obj, torch.Tensor):
        t = obj.detach().cpu().contiguous()
        raw = t.view(-1).view(torch.uint8).numpy().tobytes() if t.numel() else b""
        return {"__tensor__": str(t.dtype).replace("torch.", ""), "shape": list(t.shape),
                "data": base64.b64encode(raw).decode("ascii")}
    if isinstance(obj, dict):
        return {str(k): encode(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [encode(v) for v in obj]
    if obj is None or isinstance(obj, (bool, int, float, str)):
        return obj
    raise TypeError(f"a scenario returned {type(obj).__name__}, which cannot be sent to the caller")


def encode_arrays(obj: Any) -> Any:
    """``encode`` for decoded results (numpy arrays), so a caller can store them without torch."""
    np = sys.modules.get("numpy")
    if np is not None and isinstance(obj, np.ndarray):
        dtype = "float32" if obj.dtype == np.float32 else str(obj.dtype)
        return {"__tensor__": dtype, "shape": list(obj.shape),
                "data": base64.b64encode(np.ascontiguousarray(obj).tobytes()).decode("ascii")}
    if isinstance(obj, dict):
        return {str(k): encode_arrays(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [encode_arrays(v) for v in obj]
    return obj


def decode(obj: Any) -> Any:
    """Inverse of ``encode``, with numpy arrays for tensors (bfloat16 widened to float32, exactly), so the
    caller never needs torch."""
    if isinstance(obj, dict):
        if "__tensor__" in obj:
            return _array(obj)
        return {k: decode(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [decode(v) for v in obj]
    return obj


def _array(obj: dict):
    """A numpy array from its encoding, checked: a known dtype, a shape of sizes, exactly the bytes it needs."""
    import numpy as np
    dtype, shape = obj.get("__tensor__"), obj.get("shape")
    if dtype not in TENSOR_DTYPES or not isinstance(shape, list) or \
            not all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in shape):
        raise ValueError(f"not a tensor encoding: dtype {str(dtype)[:40]!r}, shape {str(shape)[:40]}")
    try:
        raw = base64.b64decode(obj.get("data", ""), validate=True)
    except (binascii.Error, TypeError, ValueError):
        raise ValueError("a tensor's data is not base64") from None
    count = 1
    for n in shape:
        count *= n
    if count * TENSOR_DTYPES[dtype] != len(raw):
        raise ValueError(f"a tensor of shape {shape} and dtype {dtype} cannot hold {len(raw)} bytes")
    if dtype == "bfloat16":
        return (np.frombuffer(raw, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32).reshape(shape)
    return np.frombuffer(raw, dtype=np.dtype(dtype)).reshape(shape)


# -- the channel: one length-prefixed JSON message per request and per reply -----------------------------------

def send_message(sock: socket.socket, payload: bytes) -> None:
    sock.sendall(len(payload).to_bytes(8, "big"))
    sock.sendall(payload)  # not joined to its header: a reply of tensors is megabytes, a copy as much again


def recv_message(sock: socket.socket) -> bytes | None:
    """The next whole message (blocking), or None at end of file: the worker's side (trusted sender)."""
    header = _recv_exactly(sock, 8)
    return None if header is None else _recv_exactly(sock, int.from_bytes(header, "big"))


def _recv_exactly(sock: socket.socket, n: int) -> bytes | None:
    chunks, left = [], n
    while left:
        chunk = sock.recv(min(left, 1 << 20))
        if not chunk:
            return None
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


class Inbox:
    """The caller's side of one rank's channel: bytes arrive as they come (never a blocking read, so a rank
    that sends half a message cannot stall the caller); a message over MAX_REPLY_BYTES is refused unread."""

    def __init__(self, sock: socket.socket):
        self.sock = sock
        sock.setblocking(False)
        self.buffer = bytearray()

    def fileno(self) -> int:
        return self.sock.fileno()

    def read(self) -> tuple[str, bytes | None]:
        """("message", payload), ("more", None) if a message is not complete yet, ("closed" | "too large", None)."""
        try:
            chunk = self.sock.recv(1 << 20)
        except BlockingIOError:
            chunk = None
        except OSError:
            return "closed", None
        if chunk == b"":
            return "closed", None
        if chunk:
            self.buffer += chunk
        if len(self.buffer) >= 8:
            size = int.from_bytes(self.buffer[:8], "big")
            if size > MAX_REPLY_BYTES:
                return "too large", None
            if len(self.buffer) >= 8 + size:
                payload = bytes(self.buffer[8:8 + size])
                del self.buffer[:8 + size]
                return "message", payload
        return "more", None

    def close(self) -> None:
        self.sock.close()


def parse_reply(payload: bytes) -> Any:
    """A reply's JSON with its tensors decoded; ValueError if it is anything else (too many values, too
    deep, a malformed tensor...): student code wrote it, so nothing about it is trusted."""
    if payload.count(b"[") + payload.count(b"{") + payload.count(b",") > MAX_REPLY_TOKENS:
        raise ValueError(f"more than {MAX_REPLY_TOKENS:,} JSON values")
    try:
        reply = json.loads(payload)
        if isinstance(reply, dict) and reply.get("ok") is True and "result" in reply:
            reply["result"] = decode(reply["result"])
        return reply
    except (ValueError, RecursionError, MemoryError, TypeError, KeyError, AttributeError) as error:
        raise ValueError(f"{type(error).__name__}: {str(error)[:200]}") from None


def reply_outcome(rank: int, payload: bytes, log: str = "") -> Any:
    """What a rank's message says: its result, or a RankFailure. A message must be ``{"ok": true, "result":
    ...}`` or ``{"ok": false, "error": {"error", "message", "where"}}`` (``_error_report``); anything else is
    "garbled". (Check 1.4's ranks, which torchrun starts, write the same message to a file.)"""
    try:
        reply = parse_reply(payload)
    except ValueError as error:
        return RankFailure(rank, "garbled", message=f"its reply was not what a scenario returns ({error})", log=log)
    if isinstance(reply, dict) and reply.get("ok") is True and "result" in reply:
        return reply["result"]
    error = reply.get("error") if isinstance(reply, dict) and reply.get("ok") is False else None
    if isinstance(error, dict) and all(isinstance(error.get(k), str) for k in ("error", "message", "where")):
        return RankFailure(rank, "raised", error["error"][:200], error["message"][:TAIL_CHARS + 100],
                           error["where"][-2 * TAIL_CHARS:], log=log)
    return RankFailure(rank, "garbled", message="its reply did not have the expected shape", log=log)


def tail_of(path: str, limit: int = TAIL_CHARS) -> str:
    """The last ``limit`` characters of a file we opened (never follows what a worker could swap in)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return ""
    with os.fdopen(fd, "rb") as f:
        size = os.fstat(fd).st_size
        f.seek(max(0, size - limit))
        return f.read(limit).decode("utf-8", "replace")


# -- the fork server ---------------------------------------------------------------------------------------

class ForkServer:
    """A process that imported torch once and forks one worker per request (the workers' parent).

    Requests carry the worker's environment, a ``setup`` dict for the server's child hook, and three file
    descriptors (channel, stack dump, log) passed over a Unix socket. The server reports each pid it forks
    and, when it reaps it, its exit code. ``module`` is the server's entry point: ``checks.pool`` here;
    the grader passes its own, which isolates each child before it runs anything. ``warm_up``: the
    "module:function" the server imports and calls once before its first fork (the caller's scenarios
    module: every worker starts with it loaded, warm); none by default.
    """

    def __init__(self, module: str = "checks.pool", paths: list[str] | None = None,
                 env: dict[str, str] | None = None, args: tuple[str, ...] = (), warm_up: str = ""):
        import subprocess
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.log = tempfile.mkstemp(prefix="minddp-fork-server-", suffix=".log")[1]
        paths = [os.path.abspath(p) for p in (paths or [_package_root()])]
        server_env = {**(os.environ if env is None else env), "PYTHONPATH": os.pathsep.join(paths),
                      "OMP_NUM_THREADS": "1", "PYTHONUNBUFFERED": "1", "TORCH_FR_BUFFER_SIZE": "2000",
                      "MINDDP_WARM_UP": warm_up}
        with open(self.log, "ab") as out:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", module, "--fork-server", str(theirs.fileno()), *args], env=server_env,
                stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, pass_fds=[theirs.fileno()],
                start_new_session=True)
        theirs.close()
        self.sock = ours
        self.forked: list[int] = []  # pids reported, not yet claimed
        self.failed: list[str] = []  # forks the server could not make (why), not yet claimed
        self.exits: dict[int, int] = {}  # pid -> exit code (negative: the signal that killed it)

    def alive(self) -> bool:
        return self.proc.poll() is None

    def fork(self, env: dict[str, str], setup: dict, fds: list[int], timeout_s: float = START_TIMEOUT_S) -> int:
        try:
            socket.send_fds(self.sock, [json.dumps({"env": env, "setup": setup}).encode()], fds)
        except OSError:
            raise RuntimeError(f"the fork server is gone; its output ends with:\n{tail_of(self.log)}") from None
        deadline = time.monotonic() + timeout_s
        while not self.forked:
            if self.failed:
                raise RuntimeError(f"no worker could be started: {self.failed.pop(0)}")
            if time.monotonic() > deadline or not self.alive():
                self.stop()  # a late report must never be taken for the next request's worker
                raise RuntimeError(f"the fork server did not start a worker within {timeout_s:.0f} s; its "
                                   f"output ends with:\n{tail_of(self.log)}")
            self.collect(0.5)
        return self.forked.pop(0)

    def collect(self, timeout_s: float) -> None:
        """Read the server's reports (forks and exits) for up to ``timeout_s``."""
        readable, _, _ = select.select([self.sock], [], [], timeout_s)
        while readable:
            try:
                report = json.loads(self.sock.recv(4096, socket.MSG_DONTWAIT))
            except BlockingIOError:
                break
            except (OSError, ValueError):
                break  # the server died (or said something odd): its workers are killed by their pool
            if "forked" in report:
                self.forked.append(int(report["forked"]))
            elif "failed" in report:
                self.failed.append(str(report["failed"])[:200])
            elif "exited" in report:
                self.exits[int(report["exited"])] = int(report["code"])

    def exit_code(self, pid: int) -> int | None:
        self.collect(0.0)
        return self.exits.get(pid)

    def stop(self) -> None:
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        self.proc.wait()
        try:
            os.unlink(self.log)
        except OSError:
            pass


def _package_root() -> str:
    """The folder holding the ``checks`` and ``minddp`` packages."""
    return os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def serve(fd: int, child_setup: Callable[[dict], None] | None = None,
          server_setup: Callable[[], None] | None = None) -> None:
    """The fork server's loop: import torch once, then fork one worker per request and report its pid, and
    its exit code when it ends, until the caller closes the socket. It never runs a scenario itself, only
    its caller's ``warm_up`` (``ForkServer``), once."""
    import gc
    for name in PRELOAD:
        importlib.import_module(name)
    if os.environ.get("MINDDP_WARM_UP"):
        module_name, _, function_name = os.environ["MINDDP_WARM_UP"].partition(":")
        getattr(importlib.import_module(module_name), function_name)()
    _keep_sources()
    gc.freeze()  # what the server loaded is never collected: children's collections skip it (and share its pages)
    if server_setup:
        server_setup()
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
        message, fds, _, _ = socket.recv_fds(sock, 1 << 20, 3)
        if not message:
            os._exit(0)  # the caller is gone; it kills its workers itself
        try:
            pid = os.fork()
        except OSError as error:  # no process to be had (the machine's limit, or its memory): this request fails,
            for f in fds:  # the server lives on for the next one
                os.close(f)
            sock.send(json.dumps({"failed": f"fork: {error.strerror}"}).encode())
            continue
        if pid == 0:
            try:
                signal.set_wakeup_fd(-1)
                signal.signal(signal.SIGCHLD, signal.SIG_DFL)
                for f in (sock.fileno(), wake_r, wake_w):
                    os.close(f)
                _child(json.loads(message), fds, child_setup)
            except BaseException:  # the setup failed: say why in the worker's log, where the pool looks
                traceback.print_exc()
                sys.stderr.flush()
            finally:
                os._exit(1)
        for f in fds:
            os.close(f)
        sock.send(json.dumps({"forked": pid}).encode())


def _keep_sources() -> None:
    """The harness's source lines stay in memory: a jailed worker does not see its files at the paths it
    imported them from, and a traceback through them would show no code (an entry without an mtime is
    never dropped by linecache.checkcache)."""
    for name, module in list(sys.modules.items()):
        path = getattr(module, "__file__", None)
        if name.partition(".")[0] == "checks" and path and path.endswith(".py"):
            with open(path, encoding="utf-8") as f:
                lines = f.readlines()
            linecache.cache[path] = (sum(map(len, lines)), None, lines, path)


def _child(request: dict, fds: list[int], child_setup: Callable[[dict], None] | None) -> None:
    """In a forked child: its own session and log, its environment, the setup hook, then the worker loop."""
    os.setsid()  # its own process group: the pool kills it and anything it starts
    channel, stack, out = fds
    os.dup2(out, 1)
    os.dup2(out, 2)
    os.close(out)
    os.environ.clear()
    os.environ.update(request["env"])
    sys.path[:0] = [p for p in os.environ.get("MINDDP_PATHS", "").split(os.pathsep) if p]
    main = child_setup(request["setup"]) if child_setup else None  # the hook may give the child another job
    (main or worker_main)(channel, stack)


# -- the worker ----------------------------------------------------------------------------------------------

def worker_main(fd: int, stack_fd: int) -> None:
    """Join the process group, then run requests until told to stop. Results go out before any teardown:
    gloo sometimes aborts at exit, which must not look like a failure."""
    import faulthandler
    import gc
    from datetime import timedelta

    # The names this loop uses are bound here, before any scenario (or student code) runs in this process.
    sock, dumps, loads, send = socket.socket(fileno=fd), json.dumps, json.loads, send_message
    faulthandler.register(signal.SIGUSR1, file=os.fdopen(stack_fd, "w"), all_threads=True)
    try:
        import torch.distributed as dist
        dist.init_process_group("gloo", timeout=timedelta(seconds=float(os.environ["MINDDP_COLLECTIVE_TIMEOUT_S"])))
        send(sock, dumps({"ok": True, "result": None}).encode())
    except BaseException as error:
        send(sock, dumps({"ok": False, "error": _error_report(error)}).encode())
        os._exit(1)
    while True:
        try:
            message = recv_message(sock)
        except OSError:
            break
        if message is None:
            break
        request = loads(message)
        if request.get("fn") is None:
            break
        try:
            module_name, _, function_name = request["fn"].partition(":")
            function = getattr(importlib.import_module(module_name), function_name)
            payload = dumps({"ok": True, "result": encode(function(**request["kwargs"]))}).encode()
        except BaseException as error:  # report everything, even SystemExit from a scenario
            payload = dumps({"ok": False, "error": _error_report(error)}).encode()
        send(sock, payload)
        payload = request = None
        gc.collect()
    gc.collect()
    try:
        dist.destroy_process_group()
    finally:
        os._exit(0)


def _error_report(error: BaseException) -> dict:
    tb = error.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_filename == __file__:  # the worker loop is not the story
        tb = tb.tb_next
    where = steady("".join(traceback.format_exception(type(error), error, tb, limit=-12)))
    during = getattr(error, "raised_during", None)  # a scenario's word on where it was (its training step)
    message = steady(str(error))[:TAIL_CHARS] + (f" [raised in {during}]" if isinstance(during, str) else "")
    return {"error": type(error).__name__, "message": message, "where": where[-2 * TAIL_CHARS:]}


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
                    failures[rank] = self._exited(rank)
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


if __name__ == "__main__":
    serve(int(sys.argv[2]))
