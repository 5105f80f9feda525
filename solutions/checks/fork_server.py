"""Provided — the fork server: a process that imports torch once, then forks a fresh worker per request
(``ForkServer`` is the caller's handle on it, ``serve`` the process itself; the workers run
``checks.worker_loop``). Run as ``python -m checks.fork_server --fork-server FD``, by ``ForkServer``.
"""

from __future__ import annotations

import importlib
import json
import linecache
import os
import select
import signal
import socket
import sys
import tempfile
import time
import traceback
from collections.abc import Callable

from checks.wire import tail_of
from checks.worker_loop import _child

START_TIMEOUT_S = 60.0
# What the fork server imports before forking: every worker starts with it loaded (and with the module of the
# caller's ``warm_up``, which the server runs next).
PRELOAD = ("torch", "torch.distributed", "numpy")


class ForkServer:
    """A process that imported torch once and forks one worker per request (the workers' parent).

    Requests carry the worker's environment, a ``setup`` dict for the server's child hook, and three file
    descriptors (channel, stack dump, log) passed over a Unix socket. The server reports each pid it forks
    and, when it reaps it, its exit code. ``module`` is the server's entry point: ``checks.fork_server`` here;
    the grader passes its own, which isolates each child before it runs anything. ``warm_up``: the
    "module:function" the server imports and calls once before its first fork (the caller's scenarios
    module: every worker starts with it loaded, warm); none by default.
    """

    def __init__(self, module: str = "checks.fork_server", paths: list[str] | None = None,
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
                pid = int(report["forked"])
                self.forked.append(pid)
                # A pid is reused once the counter wraps (32768 on many machines: every thread takes one, and a
                # grading starts thousands): an earlier worker's exit code must not be taken for this one's.
                self.exits.pop(pid, None)
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


if __name__ == "__main__":
    serve(int(sys.argv[2]))
