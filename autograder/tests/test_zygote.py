"""The grader's fork server (grader/zygote.py): its children's traps on torch's DDP machinery, and what a
child costs in memory (Gradescope: 768 MB for the grader, the fork server and up to 3 workers)."""

from __future__ import annotations

import os

AUTOGRADER = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SOLUTIONS = os.path.join(os.path.dirname(AUTOGRADER), "solutions")

from checks.check import WARM_UP  # noqa: E402
from checks.pool import ForkServer, WorkerPool  # noqa: E402
from grader.run import trusted_env  # noqa: E402
from grader.zygote import TRAPPED_FUNCTIONS  # noqa: E402

# Run in a child of the fork server: its private memory before anything else, then every entry of a loaded
# module's namespace that still holds one of torch's original functions, and whether the comm hooks import.
PROBE = '''
import sys


def report(names):
    with open("/proc/self/smaps_rollup") as f:
        private_mb = sum(int(line.split()[1]) for line in f if line.startswith("Private_Dirty:")) / 1024
    left = sorted(f"{module_name}.{name}" for module_name, module in list(sys.modules.items())
                  for name, value in list(getattr(module, "__dict__", {}).items())
                  if type(value).__name__ == "builtin_function_or_method" and value.__name__ in names)
    try:
        import torch.distributed.algorithms.ddp_comm_hooks  # noqa: F401
        hooks = "imported"
    except ImportError:
        hooks = "ImportError"
    return {"private_mb": private_mb, "left": left, "hooks": hooks}
'''


def test_children_trap_every_alias_and_copy_little_of_the_server(tmp_path):
    (tmp_path / "trap_probe.py").write_text(PROBE)
    names = [name for _, name in TRAPPED_FUNCTIONS]
    server = ForkServer(module="grader.zygote", paths=[SOLUTIONS, AUTOGRADER], env=trusted_env(),
                        warm_up=WARM_UP)
    try:
        reports = {}
        for untrapped in ([], ["_compute_bucket_assignment_by_size"]):
            with WorkerPool(server, 1, paths=[str(tmp_path)], env=trusted_env(),
                            setup={"untrapped": untrapped}) as pool:
                reports[len(untrapped)] = pool.run("trap_probe:report", names=names)[0]
    finally:
        server.stop()
    trapped, untrapped = reports[0], reports[1]
    assert trapped["left"] == [] and trapped["hooks"] == "ImportError"
    assert untrapped["left"] and all(n.endswith("._compute_bucket_assignment_by_size") for n in untrapped["left"])
    # The server finds the traps' sites once: a child that read every loaded module itself copied ~50 MB.
    assert trapped["private_mb"] < 25, trapped["private_mb"]


# A fork server whose first fork fails as it would with no process left to be had (the machine's pid limit).
FAILING_FORK = """
import os
import sys

import checks.pool

real, calls = os.fork, []


def fork():
    calls.append(1)
    if len(calls) == 1:
        raise OSError(11, "Resource temporarily unavailable")
    return real()


os.fork = fork
checks.pool.serve(int(sys.argv[2]))
"""


def test_a_failed_fork_fails_that_request_and_the_server_lives_on(tmp_path):
    (tmp_path / "failing_fork.py").write_text(FAILING_FORK)
    server = ForkServer(module="failing_fork", paths=[str(tmp_path), SOLUTIONS], env=trusted_env(), warm_up=WARM_UP)
    try:
        try:
            with WorkerPool(server, 1, paths=[SOLUTIONS], env=trusted_env()) as pool:
                pool.start()
            raise AssertionError("the first fork failed, yet a worker started")
        except RuntimeError as error:
            assert "no worker could be started: fork: Resource temporarily unavailable" in str(error)
        assert server.alive()
        with WorkerPool(server, 1, paths=[SOLUTIONS], env=trusted_env()) as pool:
            pool.start()  # the next request gets its worker
            assert pool.pids
    finally:
        server.stop()


def test_a_reused_pid_is_a_new_worker_not_the_old_ones_exit():
    """The pid counter wraps (32768 here; every thread takes a pid): a worker forked with the pid of an earlier,
    killed one was once reported "killed by signal 9 before it reported a result" (CI, check A.2h)."""
    import json
    import socket
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    server = ForkServer.__new__(ForkServer)  # its bookkeeping only: the reports come from this test
    server.sock, server.forked, server.failed, server.exits = ours, [], [], {}
    try:
        for report in ({"exited": 4242, "code": -9}, {"forked": 4242}):
            theirs.send(json.dumps(report).encode())
        server.collect(1.0)
        assert server.forked == [4242]
        assert server.exit_code(4242) is None, "the new worker with a reused pid was taken as already gone"
        theirs.send(json.dumps({"exited": 4242, "code": 0}).encode())
        server.collect(1.0)
        assert server.exit_code(4242) == 0
    finally:
        ours.close()
        theirs.close()


def test_a_rank_that_replied_then_exited_before_select_looked_has_replied(monkeypatch):
    """Check 1.4's ranks reply and exit at once: when the pool finds one exited, its reply may already wait unread
    on the channel (select() looked just before it arrived). That rank replied; it did not exit before its result
    (CI saw the mutant timeout-ignored reported so, once in ~300 gradings)."""
    import json
    import socket

    import checks.pool
    from checks.wire import Inbox, send_message

    class Exited:  # the fork server's view: the rank is gone, with code 0
        def exit_code(self, pid: int) -> int:
            return 0

        def collect(self, timeout: float) -> None:
            pass

    ours, theirs = socket.socketpair()
    send_message(theirs, json.dumps({"ok": True, "result": 42}).encode())
    theirs.close()
    pool = WorkerPool(Exited(), 1)
    pool.pids, pool.inboxes = [0], [Inbox(ours)]
    monkeypatch.setattr(pool, "close", lambda **kwargs: None)  # (pid 0 is nobody's: never signal it)
    monkeypatch.setattr(checks.pool.select, "select", lambda *args: ([], [], []))  # it looked too early
    try:
        assert pool._collect(5.0, "the torchrun launch") == [42]
    finally:
        ours.close()
