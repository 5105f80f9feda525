"""Probes for the sandbox's tests: fork a child with a deadline and get its report back as JSON (no sleeps: a
pidfd), and small actions a jailed child tries (each returns an errno or what happened)."""

from __future__ import annotations

import ctypes
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import uuid

from grader import sandbox
from grader.sandbox import Jail

CHILD_DEADLINE_S = 20.0
TRUE = shutil.which("true") or "/bin/true"
LIBC = ctypes.CDLL(None, use_errno=True)
# What student code needs to keep importing: the dirs of sys.path in the Python installation (here under
# /root, mode 0700); not the ones pytest and conftest add (the grader's source, the reference solutions).
PYTHON_DIRS = tuple(sorted({p for p in sys.path if os.path.isabs(p) and os.path.exists(p) and any(
    p == d or p.startswith(d + "/") for d in (sys.prefix, sys.base_prefix))}))


# ---------------------------------------------------------------------------------------------------------
# Forking with deadlines


def _read_until_eof(fd: int, deadline: float) -> bytes:
    chunks = []
    while True:
        ready, _, _ = select.select([fd], [], [], max(0.0, deadline - time.monotonic()))
        if not ready:
            return b"".join(chunks)
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)


def reap(pid: int, deadline: float) -> int:
    """The child's wait status; SIGKILL first if it has not exited by the deadline."""
    pidfd = os.pidfd_open(pid)
    try:
        ready, _, _ = select.select([pidfd], [], [], max(0.0, deadline - time.monotonic()))
        if not ready:
            os.kill(pid, signal.SIGKILL)
        return os.waitpid(pid, 0)[1]
    finally:
        os.close(pidfd)


def _output_and_status(read_end: int, pid: int, deadline_s: float) -> tuple[bytes, int]:
    """What the child wrote on ``read_end`` until it closed it (which this closes), and its wait status; both
    within ``deadline_s``, past which the child is killed."""
    deadline = time.monotonic() + deadline_s
    try:
        data = _read_until_eof(read_end, deadline)
    finally:
        os.close(read_end)
        status = reap(pid, deadline)  # whatever happened: the child is never left behind
    return data, status


def fork_child(body, *args, deadline_s: float = CHILD_DEADLINE_S) -> tuple[dict | None, int]:
    """Run body(*args) in a forked child: (its report, its wait status). The report is {"value": ...} or
    {"error": traceback}, or None when the child died or exec'd before reporting."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(read_end)
            try:
                report = {"value": body(*args)}
            except BaseException:  # noqa: BLE001 - reported to the parent
                report = {"error": traceback.format_exc()}
            data = json.dumps(report).encode()
            while data:
                data = data[os.write(write_end, data):]
        finally:
            os._exit(0)
    os.close(write_end)
    data, status = _output_and_status(read_end, pid, deadline_s)
    return (json.loads(data) if data else None), status


def in_child(body, *args):
    """body(*args)'s return value, computed in a forked child; any failure there fails the test here."""
    report, status = fork_child(body, *args)
    assert report is not None, f"the child reported nothing (wait status {status:#x})"
    assert "error" not in report, "the child failed:\n" + report["error"]
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, f"wait status {status:#x}"
    return report["value"]


def exec_in_jail(the_jail: Jail, code: str, deadline_s: float = CHILD_DEADLINE_S):
    """Fork, enter the_jail, exec the venv's python (sys.executable, a symlink) on code: what it printed on
    stdout, parsed as JSON (the exit status must be 0; its stderr is in the failure message)."""
    out_read, out_write = os.pipe()
    with tempfile.TemporaryFile() as err:  # root's, deleted: the inherited fd is the only way to it
        pid = os.fork()
        if pid == 0:
            try:
                os.dup2(out_write, 1)
                os.dup2(err.fileno(), 2)
                sandbox.enter(the_jail)
                os.execv(sys.executable, [sys.executable, "-c", code])
            except BaseException:  # noqa: BLE001 - reported on stderr
                os.write(2, traceback.format_exc().encode())
            finally:
                os._exit(1)
        os.close(out_write)
        out, status = _output_and_status(out_read, pid, deadline_s)
        err.seek(0)
        assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, f"wait status {status:#x}:\n{err.read().decode()}"
    return json.loads(out)


# ---------------------------------------------------------------------------------------------------------
# Small probes run inside jails


def errno_of(action, *args):
    """None when action(*args) works, else the errno it failed with."""
    try:
        action(*args)
    except OSError as e:
        return e.errno
    return None


def try_fork():
    try:
        pid = os.fork()
    except OSError as e:
        return e.errno
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)
    return "forked"


def try_posix_spawn():
    try:
        pid = os.posix_spawn(TRUE, ["true"], dict(os.environ))
    except OSError as e:
        return e.errno
    os.waitpid(pid, 0)
    return "spawned"


def try_subprocess():
    try:
        subprocess.run([TRUE], check=False)
    except OSError as e:
        return e.errno
    return "ran"


def try_clone3():
    """clone3 as a fork (flags 0, SIGCHLD): -1 with errno, or "cloned"."""
    args = (ctypes.c_uint64 * 8)()  # struct clone_args, version 0 (64 bytes)
    args[4] = signal.SIGCHLD  # exit_signal
    result = LIBC.syscall(ctypes.c_long(435), args, ctypes.c_long(64))
    if result == 0:
        os._exit(0)  # a child was created after all: leave at once
    if result > 0:
        os.waitpid(result, 0)
        return "cloned"
    return ctypes.get_errno()


def run_threads(n: int = 4) -> list[int]:
    ids = [0] * n

    def work(i):
        ids[i] = threading.get_native_id()

    threads = [threading.Thread(target=work, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    return ids


def status_fields(pid: int | str = "self") -> dict[str, str]:
    with open(f"/proc/{pid}/status") as f:
        return {k: v.strip() for k, _, v in (line.partition(":") for line in f)}


def try_mkdir(directory: str):
    """errno of creating a directory in directory (None if it worked: then it is removed again)."""
    path = os.path.join(directory, f"sandbox-probe-{uuid.uuid4().hex}")
    try:
        os.mkdir(path)
    except OSError as e:
        return e.errno
    os.rmdir(path)
    return None


def try_create(directory: str):
    """errno of creating a file in directory (None if it worked: then it is removed again)."""
    path = os.path.join(directory, f"sandbox-probe-{uuid.uuid4().hex}")
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))
    except OSError as e:
        return e.errno
    os.unlink(path)
    return None


def mounts() -> list[dict]:
    """The jail's mounts, each with whether its mount point leads to it (not covered by another mount)."""
    result = []
    with open("/proc/self/mountinfo") as f:
        for line in f:
            fields = line.split(" - ")[0].split()
            point = fields[4].replace("\\040", " ")
            try:
                fd = os.open(point, os.O_PATH)
                with open(f"/proc/self/fdinfo/{fd}") as info:
                    mount_id = next(int(x.split()[1]) for x in info if x.startswith("mnt_id:"))
                os.close(fd)
                reachable = mount_id == int(fields[0])
            except OSError:
                reachable = False
            result.append({"point": point, "rw": "rw" in fields[5].split(","), "options": fields[5],
                           "reachable": reachable, "fstype": line.split(" - ")[1].split()[0]})
    return result


# ---------------------------------------------------------------------------------------------------------
# The jails of the sandbox's tests, and processes of a uid


def jail(uid: int, readable=(), **kwargs) -> Jail:
    return Jail(uid=uid, gid=uid, readable=PYTHON_DIRS + tuple(readable), **kwargs)


def _become(uid: int) -> None:
    os.setgroups([])
    os.setresgid(uid, uid, uid)
    os.setresuid(uid, uid, uid)


def _start_as(uid: int) -> tuple[int, int]:
    """A process running as uid (fork + setresuid + wait forever); (pid, fd that reads b'r' when ready)."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(read_end)
            _become(uid)
            os.write(write_end, b"r")
            while True:
                signal.pause()
        finally:
            os._exit(1)
    os.close(write_end)
    return pid, read_end


def _wait_ready(fds: list[int]) -> None:
    deadline = time.monotonic() + 10
    for fd in fds:
        ready, _, _ = select.select([fd], [], [], max(0.0, deadline - time.monotonic()))
        assert ready and os.read(fd, 1) == b"r"
