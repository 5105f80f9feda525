"""grader.uids (the grading's uid: picked, become with its limits, its processes ended), tested for real: each
test forks a child that enters a jail and reports back as JSON.

How these tests run (as root; failing, not skipping, where this machine cannot isolate): test_sandbox.py.
"""

from __future__ import annotations

import ctypes
import errno
import os
import pwd
import resource
import select
import signal
import threading
import time

import pytest
import torch  # imported before any fork, as the fork server does
from probes import (
    CHILD_DEADLINE_S,
    LIBC,
    _become,
    _start_as,
    _wait_ready,
    errno_of,
    in_child,
    jail,
    reap,
    run_threads,
    status_fields,
)

from grader import sandbox, uids
from grader.sandbox import Jail, SandboxError

pytestmark = pytest.mark.usefixtures("isolation_available")  # conftest.py: FAILS every test when isolation is missing


PR_SET_PDEATHSIG, PR_GET_PDEATHSIG, PR_GET_DUMPABLE = 1, 2, 3


def vm_data_mb() -> float:
    """This process's VmData (private writable mappings: what RLIMIT_DATA counts), in MB."""
    return int(status_fields()["VmData"].split()[0]) / 1024


# ---------------------------------------------------------------------------------------------------------
# Resource limits


def allocation(fn) -> str:
    """The name of the exception fn() raised, or "allocated"."""
    try:
        fn()
    except (MemoryError, RuntimeError) as e:
        return type(e).__name__
    return "allocated"


def test_max_data_mb_stops_big_allocations_in_a_torch_child(uid):
    parent = vm_data_mb()  # imported torch, like the fork server: a forked child starts with all of it
    limit = int(parent) + 300

    def body(max_data_mb):
        before = vm_data_mb()
        sandbox.enter(jail(uid, max_data_mb=max_data_mb))
        torch.set_num_threads(2)
        a = torch.ones(512, 512)
        corner = float((a @ a)[0, 0])
        after_matmul = vm_data_mb()
        hundred = torch.ones(100 * 2 ** 20 // 4)  # 100 MB, touched
        with_100mb = vm_data_mb()
        hundred_ok = float(hundred.sum()) == 100 * 2 ** 20 // 4
        del hundred
        report = {"before": before, "after_matmul": after_matmul, "with_100mb": with_100mb, "corner": corner,
                  "hundred": hundred_ok, "limit": list(resource.getrlimit(resource.RLIMIT_DATA)),
                  "torch_1g": allocation(lambda: torch.empty(2 ** 28))}  # 1 GiB of float32, never touched
        if max_data_mb is not None:
            report["bytes_1g"] = allocation(lambda: bytearray(10 ** 9))
            try:
                resource.setrlimit(resource.RLIMIT_DATA, (2 ** 40, 2 ** 40))
                report["raise"] = "raised"
            except (ValueError, OSError) as e:
                report["raise"] = type(e).__name__
            report["small_after"] = float(torch.ones(1000).sum())
        return report

    limited = in_child(body, limit)
    assert abs(limited["before"] - parent) < 16, (limited["before"], parent)  # the inherited mappings count
    assert limited["corner"] == 512.0 and limited["hundred"]
    assert limited["limit"] == [limit * 2 ** 20] * 2
    assert limited["with_100mb"] < limit
    assert limited["torch_1g"] == "RuntimeError" and limited["bytes_1g"] == "MemoryError"
    assert limited["raise"] == "ValueError"  # the uid cannot raise its hard limit
    assert limited["small_after"] == 1000.0
    unlimited = in_child(body, None)  # the same 1 GiB (virtual: never touched) is fine without the limit
    assert unlimited["torch_1g"] == "allocated" and unlimited["limit"][1] == -1
    print(f"VmData MB: parent {parent:.0f}, child {limited['before']:.0f}, after a 2-thread matmul "
          f"{limited['after_matmul']:.0f}, with 100 MB {limited['with_100mb']:.0f}; limit {limit}")


def test_max_processes_counts_the_uid_processes_and_threads(uid):
    def body():
        sandbox.enter(jail(uid, seccomp=False, max_processes=3))  # e.g. a launcher that must fork
        read_end, write_end = os.pipe()
        children, fork_error = [], None
        for _ in range(5):
            try:
                pid = os.fork()
            except OSError as e:
                fork_error = e.errno
                break
            if pid == 0:
                os.close(write_end)
                os.read(read_end, 1)  # until the parent closes its end
                os._exit(0)
            children.append(pid)
        try:
            threading.Thread(target=lambda: None).start()
            thread = "started"
        except RuntimeError as e:
            thread = str(e)
        os.close(write_end)
        for pid in children:
            os.waitpid(pid, 0)
        report = {"forked": len(children), "fork_error": fork_error, "thread_while_full": thread,
                  "threads_after": len(set(run_threads(2)))}
        report["limit"] = list(resource.getrlimit(resource.RLIMIT_NPROC))
        try:
            resource.setrlimit(resource.RLIMIT_NPROC, (100, 100))
            report["raise"] = "raised"
        except (ValueError, OSError) as e:
            report["raise"] = type(e).__name__
        return report

    report = in_child(body)
    assert report["forked"] == 2 and report["fork_error"] == errno.EAGAIN  # itself + 2 = 3
    assert "can't start new thread" in report["thread_while_full"]  # threads count too
    assert report["threads_after"] == 2 and report["limit"] == [3, 3] and report["raise"] == "ValueError"


@pytest.mark.parametrize("root", ["empty", "host"])
def test_root_only_files_are_unreadable(uid, outside_tmp, root):
    secret = os.path.join(outside_tmp, "secret.txt")
    with open(secret, "w") as f:
        f.write("secret")
    os.chmod(secret, 0o600)
    private = os.path.join(outside_tmp, "private")
    os.mkdir(private, 0o700)
    os.chmod(private, 0o700)
    with open(os.path.join(private, "inside.txt"), "w") as f:
        f.write("inside")

    assert os.path.exists("/etc/shadow") and not os.stat("/etc/shadow").st_mode & 0o004

    def body():
        sandbox.enter(Jail(uid=uid, gid=uid, readable=(outside_tmp,), root=root))  # nothing under /root
        return {"secret": errno_of(lambda: open(secret).read()), "private": errno_of(os.listdir, private),
                "inside": errno_of(lambda: open(os.path.join(private, "inside.txt")).read()),
                "root": errno_of(os.listdir, "/root"), "shadow": errno_of(lambda: open("/etc/shadow").read()),
                "passwd": "root:" in open("/etc/passwd").read()}

    report = in_child(body)
    assert report.pop("passwd")  # world-readable on the host, and needed (pwd, getpass)
    assert report.pop("root") == (errno.ENOENT if root == "empty" else errno.EACCES)
    assert report == {k: errno.EACCES for k in ("secret", "private", "inside", "shadow")}  # mode bits hold


def test_identity_and_namespaces(uid):
    host = {ns: os.readlink(f"/proc/self/ns/{ns}") for ns in ("mnt", "ipc", "net")}

    def body():
        LIBC.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        sandbox.enter(jail(uid))
        pdeathsig = ctypes.c_int(0)
        LIBC.prctl(PR_GET_PDEATHSIG, ctypes.byref(pdeathsig), 0, 0, 0)
        return {"ids": [os.getuid(), os.getgid(), os.geteuid(), os.getegid()], "groups": os.getgroups(),
                "status": status_fields(), "ns": {ns: os.readlink(f"/proc/self/ns/{ns}") for ns in host},
                "cwd": os.getcwd(), "core": list(resource.getrlimit(resource.RLIMIT_CORE)),
                "dumpable": LIBC.prctl(PR_GET_DUMPABLE, 0, 0, 0, 0), "pdeathsig": pdeathsig.value}

    report = in_child(body)
    assert report["ids"] == [uid] * 4 and report["groups"] == []
    status = report["status"]
    for key in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"):
        assert int(status[key], 16) == 0, (key, status[key])
    assert status["NoNewPrivs"] == "1" and status["Seccomp"] == "2"
    assert status["Uid"].split() == [str(uid)] * 4 and status["Gid"].split() == [str(uid)] * 4
    assert report["ns"]["mnt"] != host["mnt"] and report["ns"]["ipc"] != host["ipc"]
    assert report["ns"]["net"] == host["net"]  # enter leaves the network to enter_network_namespace
    assert report["cwd"] == "/tmp" and report["core"] == [0, 0]
    assert report["dumpable"] == 0 and report["pdeathsig"] == signal.SIGKILL


def test_the_oom_killer_takes_a_jailed_process_first_and_it_cannot_change_that(uid):
    def body():
        sandbox.enter(jail(uid))
        with open("/proc/self/oom_score_adj") as f:
            adj = int(f.read())
        try:
            with open("/proc/self/oom_score_adj", "w") as f:
                f.write("0")
            lowered = "lowered"
        except OSError as error:
            lowered = error.errno
        return {"adj": adj, "lowered": lowered}

    report = in_child(body)
    assert report["adj"] == uids.OOM_SCORE_ADJ
    assert report["lowered"] in (errno.EROFS, errno.EACCES)  # the jail's /proc is read-only (the kernel refuses too)


# ---------------------------------------------------------------------------------------------------------
# Ending a uid's processes, and picking one


def test_kill_uid_kills_every_process_of_the_uid(uid):
    started = [_start_as(uid) for _ in range(3)]
    pids = [pid for pid, _ in started]
    try:
        _wait_ready([fd for _, fd in started])
        assert sorted(sandbox.kill_uid(uid)) == sorted(pids)
        for pid in list(pids):  # kill_uid returns only once they are dead: zombies, reaped at once
            done, status = os.waitpid(pid, os.WNOHANG)
            assert done == pid, f"{pid} still running after kill_uid returned"
            pids.remove(pid)
            assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL
        pids = []
        assert sandbox.kill_uid(uid) == []
    finally:
        for pid in pids:
            reap(pid, time.monotonic())
        for _, fd in started:
            os.close(fd)
    with pytest.raises(SandboxError):
        sandbox.kill_uid(0)


def test_orphans_come_to_the_subreaper_and_are_reaped(uid):
    """A student process whose parent exits (a daemon's double fork) is reparented to the grader, the
    subreaper, not to pid 1 (which in a container may never reap it); after kill_uid, reap_orphans(uid)
    leaves no zombie behind."""
    def body():
        sandbox.become_subreaper()
        read_end, write_end = os.pipe()
        middle = os.fork()
        if middle == 0:
            os.close(read_end)
            _become(uid)
            if os.fork() == 0:
                os.write(write_end, str(os.getpid()).encode())
                while True:
                    signal.pause()
            os._exit(0)  # the daemon's parent leaves
        os.close(write_end)
        os.waitpid(middle, 0)
        ready, _, _ = select.select([read_end], [], [], CHILD_DEADLINE_S)
        orphan = int(os.read(read_end, 20)) if ready else None
        parent = status_fields(orphan)["PPid"] if orphan else None
        killed = sandbox.kill_uid(uid)
        reaped = sandbox.reap_orphans(uid)
        return {"orphan": orphan, "parent": parent, "me": str(os.getpid()), "killed": killed, "reaped": reaped,
                "left": os.path.exists(f"/proc/{orphan}") if orphan else None}

    report = in_child(body)
    assert report["orphan"] is not None, "the grandchild never started"
    assert report["parent"] == report["me"], "the orphan went to pid 1, not to the subreaper"
    assert report["killed"] == [report["orphan"]] and report["reaped"] == 1 and report["left"] is False


class _Sequence:
    def __init__(self, values):
        self.values = list(values)

    def randint(self, lo, hi):
        return self.values.pop(0)


def test_pick_uid_is_high_unused_and_random(uid, monkeypatch):
    low, high = uids.UID_RANGE
    picks = {sandbox.pick_uid() for _ in range(20)}
    assert len(picks) > 1 and all(low <= p <= high for p in picks)
    for p in picks:
        with pytest.raises(KeyError):
            pwd.getpwuid(p)
    account = next(p.pw_uid for p in pwd.getpwall())  # some uid in /etc/passwd (root at least)
    busy, ready = _start_as(uid)
    try:
        _wait_ready([ready])
        free = next(p for p in picks if p != uid)
        monkeypatch.setattr(uids, "_rng", _Sequence([account, uid, free]))
        assert sandbox.pick_uid() == free  # skipped: an account, then a uid a process runs as
    finally:
        reap(busy, time.monotonic())
        os.close(ready)
