"""grader.sandbox (enter, its refusals, the network namespace), tested for real: each test forks a child that enters
a jail and reports back as JSON. The layers have files of their own: test_mounts.py, test_uids.py, test_seccomp.py.

Run as root on Linux. When this machine cannot isolate (``isolation_problem()`` is not None) every test FAILS
with the reason (conftest.py's ``isolation_available``): a skipped security test would hide a broken sandbox.
A child always ends with ``os._exit``; the parent waits for its report and its exit with a deadline (a pidfd,
no sleeps) and kills it past that. Jails use the default empty root unless a test says ``root="host"`` (the
former behaviour, for comparison).
"""

from __future__ import annotations

import errno
import os
import socket
import threading
import time
import uuid

import pytest
import torch  # noqa: F401 - imported before any fork, as the fork server does
from probes import (
    errno_of,
    in_child,
    jail,
)

from grader import sandbox
from grader.sandbox import Jail, SandboxError

pytestmark = pytest.mark.usefixtures("isolation_available")  # conftest.py: FAILS every test when isolation is missing


def test_isolation_is_available():
    assert sandbox.isolation_problem() is None


def test_inherited_file_descriptors_keep_working(uid, tmp_path):
    log_path = tmp_path / "worker.log"
    log = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)  # root's file: the fd is the way in
    ours, theirs = socket.socketpair()
    ours.sendall(b"task")

    def body():
        sandbox.enter(jail(uid))
        os.write(log, b"a line from the jail\n")
        request = theirs.recv(4)
        theirs.sendall(b"done:" + request)
        return {"reopen": errno_of(lambda: open(log_path, "a").close())}

    try:
        report = in_child(body)
        ours.settimeout(5)
        assert ours.recv(100) == b"done:task"
    finally:
        os.close(log)
        ours.close()
        theirs.close()
    assert log_path.read_text() == "a line from the jail\n"
    assert report["reopen"] in (errno.EACCES, errno.ENOENT)  # by path it is neither visible nor writable


def test_enter_refuses_what_it_cannot_isolate(uid, tmp_path, outside_tmp):
    def refusal(make_jail, setup=None):
        def body():
            if setup:
                setup()
            try:
                sandbox.enter(make_jail())
            except SandboxError as e:
                return str(e)
            return "entered"
        return in_child(body)

    missing = str(tmp_path / "missing")
    assert missing in refusal(lambda: jail(uid, binds=((missing, "/tmp/x"),)))
    read_only_target = os.path.join(outside_tmp, "missing", "x")  # needs a directory on the read-only host tree
    assert read_only_target in refusal(lambda: jail(uid, binds=((str(tmp_path), read_only_target),), root="host"))
    in_usr = f"/usr/sandbox-missing-{uuid.uuid4().hex}/x"  # empty root: a directory in the read-only /usr bind
    assert in_usr in refusal(lambda: jail(uid, binds=((str(tmp_path), in_usr),)))
    assert not os.path.lexists(os.path.dirname(in_usr))
    assert "root" in refusal(lambda: Jail(uid=0, gid=0))
    assert "root='bogus'" in refusal(lambda: jail(uid, root="bogus"))
    for limit in ({"max_data_mb": 0}, {"max_data_mb": 0.5}, {"max_processes": -1}, {"max_processes": 2.0},
                  {"max_processes": True}, {"max_data_mb": float("nan")}):
        assert next(iter(limit)) in refusal(lambda limit=limit: jail(uid, **limit)), limit
    assert "/ readable" in refusal(lambda: jail(uid, readable=("/",)))
    assert "bind at /" in refusal(lambda: jail(uid, binds=((str(tmp_path), "/"),)))
    directory = str(tmp_path)
    assert "open directory" in refusal(lambda: jail(uid), lambda: os.open(directory, os.O_RDONLY))
    release = threading.Event()
    assert "threads" in refusal(lambda: jail(uid), lambda: threading.Thread(target=release.wait, daemon=True).start())


def test_network_namespace_only_loopback(uid):
    host_net = os.readlink("/proc/self/ns/net")

    def fork_server():
        sandbox.enter_network_namespace()
        listener = socket.socket()
        listener.bind(("127.0.0.1", 0))
        listener.listen(4)
        port = listener.getsockname()[1]

        def worker():
            sandbox.enter(jail(uid))
            report = {}
            for host, port_ in (("192.0.2.1", 80), ("1.1.1.1", 53)):
                s = socket.socket()
                s.settimeout(3)
                began = time.monotonic()
                report[host] = [errno_of(s.connect, (host, port_)), time.monotonic() - began]
                s.close()
            udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            report["udp"] = errno_of(udp.sendto, b"x", ("1.1.1.1", 53))
            udp.close()
            with socket.create_connection(("127.0.0.1", port), timeout=3) as c:
                c.sendall(b"hello from the jail")
            own = socket.socket()  # a rank listening, another connecting, as gloo does
            own.bind(("127.0.0.1", 0))
            own.listen(1)
            with socket.create_connection(own.getsockname(), timeout=3) as c, own.accept()[0] as a:
                c.sendall(b"ping")
                report["own"] = a.recv(4).decode()
            own.close()
            return report

        report = in_child(worker)
        listener.settimeout(3)
        conn, _ = listener.accept()
        with conn:
            report["received"] = conn.recv(100).decode()
        return {"worker": report, "net": os.readlink("/proc/self/ns/net"), "interfaces": socket.if_nameindex()}

    report = in_child(fork_server)
    worker = report["worker"]
    for host in ("192.0.2.1", "1.1.1.1"):
        assert worker[host][0] == errno.ENETUNREACH and worker[host][1] < 1.0, worker[host]
    assert worker["udp"] == errno.ENETUNREACH
    assert worker["received"] == "hello from the jail" and worker["own"] == "ping"
    assert report["net"] != host_net
    assert report["interfaces"] == [[1, "lo"]]
