"""grader.seccomp (the filter enter installs, or install_seccomp alone), tested for real: each test forks a
child that enters a jail and reports back as JSON.

How these tests run (as root; failing, not skipping, where this machine cannot isolate): test_sandbox.py.
"""

from __future__ import annotations

import ctypes
import errno
import os
import platform
import signal

import pytest
import torch  # imported before any fork, as the fork server does
from probes import (
    LIBC,
    TRUE,
    errno_of,
    fork_child,
    in_child,
    jail,
    run_threads,
    status_fields,
    try_clone3,
    try_fork,
    try_posix_spawn,
    try_subprocess,
)

from grader import sandbox

pytestmark = pytest.mark.usefixtures("isolation_available")  # conftest.py: FAILS every test when isolation is missing


def test_no_process_can_be_created_but_threads_work(uid):
    def body():
        sandbox.enter(jail(uid))
        report = {"fork": try_fork(), "subprocess": try_subprocess(), "posix_spawn": try_posix_spawn(),
                  "clone3": try_clone3()}
        report["threads_after_clone3"] = run_threads()
        report["pid_alive"] = os.getpid()
        report["execv"] = errno_of(os.execv, TRUE, ["true"])  # last: if it worked, no report at all
        return report

    report = in_child(body)
    assert report["fork"] == errno.EPERM
    assert report["subprocess"] == errno.EPERM
    assert report["posix_spawn"] == errno.EPERM  # glibc: clone3 -> ENOSYS, falls back to clone -> EPERM
    assert report["clone3"] == errno.ENOSYS
    assert len(set(report["threads_after_clone3"])) == 4 and report["pid_alive"] not in report["threads_after_clone3"]
    assert report["execv"] == errno.EPERM


def test_python_threads_and_torch_threads_work(uid):
    def body():
        sandbox.enter(jail(uid))
        python_threads = run_threads(4)
        torch.set_num_threads(2)
        a = torch.ones(512, 512)
        b = a @ a
        return {"python_threads": python_threads, "torch_threads": torch.get_num_threads(),
                "corner": float(b[0, 0]), "sum": float(b.sum()), "tasks": len(os.listdir("/proc/self/task"))}

    report = in_child(body)
    assert len(set(report["python_threads"])) == 4
    assert report["torch_threads"] == 2
    assert report["corner"] == 512.0 and report["sum"] == 512.0 ** 3
    assert report["tasks"] >= 2, "torch's intra-op pool should have started a thread"


def test_jail_without_seccomp_then_install_seccomp(uid):
    def body():
        sandbox.enter(jail(uid, seccomp=False))  # e.g. a launcher that must start processes
        before = {"seccomp": status_fields()["Seccomp"], "fork": try_fork(), "caps": status_fields()["CapEff"],
                  "nnp": status_fields()["NoNewPrivs"]}
        sandbox.install_seccomp()  # what the launched script does first
        return {"before": before, "after": {"seccomp": status_fields()["Seccomp"], "fork": try_fork()}}

    report = in_child(body)
    assert report["before"] == {"seccomp": "0", "fork": "forked", "caps": "0" * 16, "nnp": "1"}
    assert report["after"] == {"seccomp": "2", "fork": errno.EPERM}


def test_install_seccomp_alone(uid):
    def body():
        sandbox.install_seccomp()
        return {"fork": try_fork(), "posix_spawn": try_posix_spawn(), "threads": run_threads(),
                "uid": os.getuid(), "seccomp": status_fields()["Seccomp"], "execv": errno_of(os.execv, TRUE, ["true"])}

    report = in_child(body)
    assert report["fork"] == errno.EPERM and report["posix_spawn"] == errno.EPERM and report["execv"] == errno.EPERM
    assert len(set(report["threads"])) == 4
    assert report["uid"] == 0 and report["seccomp"] == "2"


@pytest.mark.skipif(platform.machine() != "x86_64", reason="the x32 ABI exists only on x86_64")
def test_x32_system_calls_kill_the_process():
    def body():
        sandbox.install_seccomp()
        LIBC.syscall(ctypes.c_long(0x40000000 | 39))  # getpid through the x32 ABI
        return "survived"

    report, status = fork_child(body)
    assert report is None and os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGSYS, (report, status)
