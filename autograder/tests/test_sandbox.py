"""grader.sandbox, tested for real: each test forks a child that enters a jail and reports back as JSON.

Run as root on Linux. When this machine cannot isolate (``isolation_problem()`` is not None) every test FAILS
with the reason: a skipped security test would hide a broken sandbox. A child always ends with ``os._exit``;
the parent waits for its report and its exit with a deadline (a pidfd, no sleeps) and kills it past that.
Jails use the default empty root unless a test says ``root="host"`` (the former behaviour, for comparison).
"""

from __future__ import annotations

import ctypes
import errno
import importlib
import os
import platform
import pwd
import resource
import select
import shutil
import signal
import socket
import stat
import sys
import sysconfig
import tempfile
import threading
import time
import uuid

import pytest
import torch  # imported before any fork, as the fork server does

AUTOGRADER = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REPOSITORY = os.path.dirname(AUTOGRADER)
if AUTOGRADER not in sys.path:
    sys.path.insert(0, AUTOGRADER)

from probes import (  # noqa: E402
    CHILD_DEADLINE_S,
    LIBC,
    TRUE,
    errno_of,
    exec_in_jail,
    fork_child,
    in_child,
    mounts,
    reap,
    run_threads,
    status_fields,
    try_clone3,
    try_create,
    try_fork,
    try_mkdir,
    try_posix_spawn,
    try_subprocess,
)

from grader import sandbox  # noqa: E402
from grader.sandbox import Jail, SandboxError  # noqa: E402

SCRATCH = ("/tmp", "/var/tmp", "/dev/shm")
# What student code needs to keep importing: the dirs of sys.path in the Python installation (here under
# /root, mode 0700); not the ones pytest and conftest add (the grader's source, the reference solutions).
PYTHON_DIRS = tuple(sorted({p for p in sys.path if os.path.isabs(p) and os.path.exists(p) and any(
    p == d or p.startswith(d + "/") for d in (sys.prefix, sys.base_prefix))}))
# What an exec'd interpreter needs as well (grader/run.py: python_dirs): the venv (pyvenv.cfg, bin/python, a
# symlink to the base interpreter) and the base installation (the interpreter, libpython).
PYTHON_INSTALL = tuple(sorted(d for d in {sys.prefix, sys.base_prefix, *sysconfig.get_paths().values()}
                              if os.path.isdir(d)))
REFERENCE = os.path.join(REPOSITORY, "solutions", "minddp", "reducer.py")  # the reference solution
# The empty root: the system trees the host has (dirs or symlinks), /dev, /proc and the scratch places.
SYSTEM = [n for n in ("usr", "bin", "sbin", "lib", "lib64", "lib32", "libx32", "etc") if os.path.lexists("/" + n)]
EMPTY_ROOT_ENTRIES = sorted(SYSTEM + ["dev", "proc", "tmp", "var"])
DEV_ENTRIES = sorted(["null", "zero", "full", "random", "urandom", "fd", "stdin", "stdout", "stderr", "shm"])
# Host places a jail must not show at all (whichever exist here: the test checks the host has most of them).
HOST_ONLY = ("/work", REPOSITORY, AUTOGRADER, REFERENCE, os.path.join(REPOSITORY, ".git"), "/root/.bashrc",
             "/root/.pyenv/shims", "/opt", "/home", "/var/lib", "/var/log", "/var/cache", "/srv", "/mnt", "/media",
             "/boot", "/run", "/sys", "/autograder", "/dev/tty", "/dev/pts", "/dev/vda", "/dev/kmsg", "/lost+found")
PR_SET_PDEATHSIG, PR_GET_PDEATHSIG, PR_GET_DUMPABLE = 1, 2, 3
MS_REC = 0x4000


@pytest.fixture(scope="session", autouse=True)
def isolation_available():
    problem = sandbox.isolation_problem()
    if problem is not None:
        pytest.fail(f"this machine cannot isolate student code, so the sandbox is untested: {problem}")


@pytest.fixture
def uid():
    return sandbox.pick_uid()


@pytest.fixture
def outside_tmp():
    """A fresh 0755 root-owned directory that is not under /tmp, /var/tmp or /dev/shm (which the jail
    replaces), so the jail sees it through the read-only host tree."""
    parent = next(p for p in ("/var/cache", "/opt", "/srv", "/var/lib") if os.path.isdir(p))
    path = tempfile.mkdtemp(prefix="sandbox-test-", dir=parent)
    os.chmod(path, 0o755)
    try:
        yield path
    finally:
        shutil.rmtree(path)


def jail(uid: int, readable=(), **kwargs) -> Jail:
    return Jail(uid=uid, gid=uid, readable=PYTHON_DIRS + tuple(readable), **kwargs)


def on_the_way(path: str, readable) -> bool:
    """Whether path is a readable dir or an ancestor of one (the empty root then has a directory there)."""
    return any(r == path or r.startswith(path.rstrip("/") + "/") for r in readable)


def vm_data_mb() -> float:
    """This process's VmData (private writable mappings: what RLIMIT_DATA counts), in MB."""
    return int(status_fields()["VmData"].split()[0]) / 1024


# ---------------------------------------------------------------------------------------------------------
# Tests


def test_isolation_is_available():
    assert sandbox.isolation_problem() is None


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


# ---------------------------------------------------------------------------------------------------------
# The empty root


def expected_chain(readable) -> dict[str, list[str]]:
    """The directories the empty root creates on the way to readable dirs, each with what it must list: only
    the next name on the way (from a readable dir down, the real content)."""
    chain: dict[str, set] = {}
    for path in readable:
        parts = path.strip("/").split("/")
        for i in range(1, len(parts)):
            ancestor = "/" + "/".join(parts[:i])
            if any(ancestor == r or ancestor.startswith(r + "/") for r in readable):
                break
            chain.setdefault(ancestor, set()).add(parts[i])
    return {a: sorted(names) for a, names in chain.items()}


def proc_super_options() -> list[str]:
    with open("/proc/self/mountinfo") as f:
        lines = [line for line in f if line.split(" - ")[0].split()[4] == "/proc"]
    return lines[-1].split(" - ")[1].split()[2].split(",")


def test_empty_root_shows_only_the_system_and_the_jail(uid):
    for place in (REFERENCE, "/opt", "/home", "/var/lib", "/run", "/sys"):
        assert os.path.lexists(place), f"the host has no {place}: its absence in the jail would prove nothing"
    absent = [p for p in HOST_ONLY if os.path.lexists(p) and not on_the_way(p, PYTHON_DIRS)]
    assert REFERENCE in absent and AUTOGRADER in absent and "/opt" in absent
    chain = expected_chain(PYTHON_DIRS)
    # e.g. the repository shows only its .venv (wherever the clone lives)
    assert chain[os.path.dirname(sys.prefix)] == [os.path.basename(sys.prefix)]
    top = sorted(set(EMPTY_ROOT_ENTRIES) | {p.split("/")[1] for p in PYTHON_DIRS})
    system = {n: os.readlink("/" + n) if os.path.islink("/" + n) else list(os.stat("/" + n)[1:3]) for n in SYSTEM}

    def body():
        sandbox.enter(jail(uid))
        return {"top": sorted(os.listdir("/")), "absent": {p: errno_of(os.lstat, p) for p in absent},
                "reference": errno_of(lambda: open(REFERENCE).read()),
                "chain": {a: sorted(os.listdir(a)) for a in chain}, "var": sorted(os.listdir("/var")),
                "system": {n: os.readlink("/" + n) if os.path.islink("/" + n) else list(os.stat("/" + n)[1:3])
                           for n in SYSTEM},
                "etc": sorted(os.listdir("/etc")), "ld_cache": len(open("/etc/ld.so.cache", "rb").read()),
                "write_root": try_create("/"), "cwd": os.getcwd(),
                "root_mount": [m for m in mounts() if m["point"] == "/"][-1]}

    report = in_child(body)
    assert report["top"] == top
    assert report["absent"] == {p: errno.ENOENT for p in absent}, "host paths the jail must not have"
    assert report["reference"] == errno.ENOENT  # FileNotFoundError: not merely unreadable
    assert report["chain"] == chain, "a directory on the way to a readable dir shows only that way"
    assert report["var"] == ["tmp"]
    assert report["system"] == system  # the host's own directories (same inode), or the same symlinks
    assert report["etc"] == sorted(os.listdir("/etc")) and report["ld_cache"] > 0
    assert report["write_root"] == errno.EROFS and report["cwd"] == "/tmp"
    assert report["root_mount"]["fstype"] == "tmpfs" and not report["root_mount"]["rw"]


def test_proc_shows_only_the_jail_itself(uid):
    other = next(u for u in iter(sandbox.pick_uid, None) if u != uid)
    started = [_start_as(0), _start_as(other), _start_as(uid)]  # root; another uid; this uid (not dumpable)
    pids = [pid for pid, _ in started]
    try:
        _wait_ready([fd for _, fd in started])
        assert all(os.path.exists(f"/proc/{pid}/cmdline") for pid in pids + [1, os.getpid()])  # on the host

        def body():
            sandbox.enter(jail(uid))
            hidden = pids + [1, os.getppid()]
            threads = run_threads(2)
            return {"me": os.getpid(), "listing": sorted(n for n in os.listdir("/proc") if n.isdigit()),
                    "self": os.readlink("/proc/self"), "hidden": [errno_of(os.stat, f"/proc/{p}") for p in hidden],
                    "cmdline": [errno_of(lambda p=p: open(f"/proc/{p}/cmdline").read()) for p in hidden],
                    "environ": errno_of(lambda: open(f"/proc/{os.getppid()}/environ").read()),
                    "uid_line": status_fields()["Uid"].split(), "fds": os.listdir("/proc/self/fd"),
                    "dev_fd": os.listdir("/dev/fd"), "own_cmdline": len(open("/proc/self/cmdline").read()) > 0,
                    "threads": len(set(threads)), "options": proc_super_options(),
                    "proc_mount": [m for m in mounts() if m["point"] == "/proc"][-1],
                    "cpuinfo": "processor" in open("/proc/cpuinfo").read()}

        report = in_child(body)
    finally:
        for pid in pids:
            reap(pid, time.monotonic())
        for _, fd in started:
            os.close(fd)
    assert report["listing"] == [str(report["me"])], "only the jailed process itself is listed"
    assert report["self"] == str(report["me"])
    assert report["hidden"] == [errno.ENOENT] * 5 and report["cmdline"] == [errno.ENOENT] * 5
    assert report["environ"] == errno.ENOENT
    assert report["uid_line"] == [str(uid)] * 4 and {"0", "1", "2"} <= set(report["fds"]) <= set(report["dev_fd"])
    assert report["own_cmdline"] and report["threads"] == 2 and report["cpuinfo"]
    assert "hidepid=invisible" in report["options"]
    assert report["proc_mount"]["fstype"] == "proc" and not report["proc_mount"]["rw"]
    assert {"nosuid", "nodev", "noexec"} <= set(report["proc_mount"]["options"].split(","))


def test_devices(uid):
    def body():
        sandbox.enter(jail(uid))
        with open("/dev/null", "wb") as null:
            null.write(b"discarded")
        full = os.open("/dev/full", os.O_WRONLY)
        try:
            full_write = errno_of(os.write, full, b"x")
        finally:
            os.close(full)
        with open("/dev/urandom", "rb") as urandom, open("/dev/random", "rb") as random_, \
                open("/dev/zero", "rb") as zero, open("/dev/null", "rb") as null:
            report = {"urandom": len(set(urandom.read(64))) > 8, "random": len(random_.read(16)),
                      "zero": zero.read(8) == bytes(8), "null": null.read() == b""}
        report.update({"listing": sorted(os.listdir("/dev")), "full": full_write,
                       "links": {n: os.readlink(f"/dev/{n}") for n in ("fd", "stdin", "stdout", "stderr")},
                       "tty": errno_of(os.lstat, "/dev/tty"), "create": try_create("/dev"),
                       "shm": try_create("/dev/shm")})
        return report

    report = in_child(body)
    assert report.pop("listing") == DEV_ENTRIES
    assert report.pop("links") == {"fd": "/proc/self/fd", "stdin": "/proc/self/fd/0", "stdout": "/proc/self/fd/1",
                                   "stderr": "/proc/self/fd/2"}
    assert report == {"urandom": True, "random": 16, "zero": True, "null": True, "full": errno.ENOSPC,
                      "tty": errno.ENOENT, "create": errno.EROFS, "shm": None}


def test_readable_paths_through_symlinks(uid, outside_tmp):
    real = os.path.join(outside_tmp, "py-3.11")
    os.makedirs(os.path.join(real, "lib"))
    module = f"jailsym_{uuid.uuid4().hex}"
    with open(os.path.join(real, "lib", module + ".py"), "w") as f:
        f.write("VALUE = 5\n")
    os.symlink("py-3.11", os.path.join(outside_tmp, "python"))  # relative
    os.symlink(real, os.path.join(outside_tmp, "python-abs"))  # absolute
    os.symlink("python", os.path.join(outside_tmp, "current"))  # a symlink to a symlink
    os.mkdir(os.path.join(outside_tmp, "sibling"))  # not readable: stays out
    given = os.path.join(outside_tmp, "current", "lib")
    given_abs = os.path.join(outside_tmp, "python-abs", "lib")
    links = {n: os.readlink(os.path.join(outside_tmp, n)) for n in ("python", "python-abs", "current")}

    def body():
        sandbox.enter(jail(uid, readable=(given, given_abs)))
        sys.path.insert(0, given)
        imported = importlib.import_module(module)
        return {"value": imported.VALUE, "file": imported.__file__, "listing": sorted(os.listdir(outside_tmp)),
                "links": {n: os.readlink(os.path.join(outside_tmp, n)) for n in links},
                "real": os.path.realpath(given), "abs": os.listdir(given_abs),
                "binds": [m["point"] for m in mounts() if m["point"].startswith(outside_tmp)]}

    report = in_child(body)
    assert report["value"] == 5 and report["file"] == os.path.join(given, module + ".py")
    assert report["listing"] == ["current", "py-3.11", "python", "python-abs"]  # no "sibling"
    assert report["links"] == links and report["real"] == os.path.join(real, "lib")
    assert report["abs"] == [module + ".py"]
    assert report["binds"] == [os.path.join(real, "lib")], "one bind, at the real path"


def test_exec_through_the_venv_symlink_with_torch(uid):
    """A launcher (seccomp off) execs the venv's python, a symlink into the base installation: the fresh
    interpreter starts, loads libffi from /usr/lib for ctypes, imports torch and runs it, without /sys."""
    assert os.path.islink(sys.executable) and os.path.realpath(sys.executable).startswith(sys.base_prefix)
    code = """if True:
        import ctypes, json, os, sys
        import torch
        default = torch.get_num_threads()
        torch.set_num_threads(2)
        a = torch.ones(512, 512)
        b = a @ a
        maps = open("/proc/self/maps").read()
        print(json.dumps({"executable": sys.executable, "prefix": sys.prefix, "base": sys.base_prefix,
                          "libffi": [line.split()[-1] for line in maps.splitlines() if "libffi" in line][:1],
                          "cpu_count": os.cpu_count(), "default_threads": default, "threads": torch.get_num_threads(),
                          "sum": float(b.sum()), "tasks": len(os.listdir("/proc/self/task")),
                          "sys": os.path.lexists("/sys"), "pid": os.getpid(), "uid": os.getuid(),
                          "proc": sorted(n for n in os.listdir("/proc") if n.isdigit()),
                          "pyenv": os.listdir(os.path.dirname(sys.base_prefix))}))
    """
    report = exec_in_jail(Jail(uid=uid, gid=uid, readable=PYTHON_INSTALL, seccomp=False), code)
    assert [report["executable"], report["prefix"], report["base"]] == [sys.executable, sys.prefix, sys.base_prefix]
    assert report["libffi"] and report["libffi"][0].startswith(("/usr/lib", "/lib")), report["libffi"]
    assert report["cpu_count"] == os.cpu_count() and report["default_threads"] == torch.get_num_threads()
    assert report["threads"] == 2 and report["sum"] == 512.0 ** 3 and report["tasks"] >= 2
    assert not report["sys"] and report["uid"] == uid
    assert report["proc"] == [str(report["pid"])]
    assert report["pyenv"] == [os.path.basename(sys.base_prefix)], "only the readable dir, not its siblings"


def test_host_root_for_comparison(uid, outside_tmp):
    """root="host", the former behaviour: the host's world-readable files and every process are visible (a file
    outside /tmp: the jail's /tmp is its own, wherever this clone lives)."""
    visible = os.path.join(outside_tmp, "world-readable.py")
    with open(visible, "w") as f:
        f.write("# BEGIN SOLUTION\n")
    os.chmod(visible, 0o644)

    def body():
        sandbox.enter(jail(uid, root="host"))
        return {"file": os.path.exists(visible), "pid1": os.path.exists("/proc/1"), "sys": os.path.isdir("/sys"),
                "write": try_create(outside_tmp)}

    assert in_child(body) == {"file": True, "pid1": True, "sys": True, "write": errno.EROFS}


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


def test_scratch_tmpfs_is_empty_writable_private_and_limited(uid):
    marker = f"sandbox-marker-{uuid.uuid4().hex}"

    # No readable dirs: one that lives under the host's /tmp (a checkout there) would be recreated in it.
    def first_jail():
        sandbox.enter(Jail(uid=uid, gid=uid, tmpfs_mb=2))
        report = {"empty": {d: os.listdir(d) for d in SCRATCH}, "written": {}, "full": {}, "options": {}}
        for d in SCRATCH:
            with open(os.path.join(d, marker), "w") as f:
                f.write("jail")
            with open(os.path.join(d, marker)) as f:
                report["written"][d] = f.read()
            big = os.open(os.path.join(d, "big"), os.O_WRONLY | os.O_CREAT, 0o600)
            try:
                for _ in range(3):  # 3 MB into 2 MB
                    os.write(big, b"x" * (1 << 20))
                report["full"][d] = None
            except OSError as e:
                report["full"][d] = e.errno
            finally:
                os.close(big)
                os.unlink(os.path.join(d, "big"))
        report["options"] = {m["point"]: m["options"] for m in mounts() if m["point"] in SCRATCH and m["reachable"]}
        return report

    def second_jail():
        sandbox.enter(Jail(uid=uid, gid=uid, tmpfs_mb=2))
        return {d: os.listdir(d) for d in SCRATCH}

    report = in_child(first_jail)
    assert report["empty"] == {d: [] for d in SCRATCH}
    assert report["written"] == {d: "jail" for d in SCRATCH}
    assert report["full"] == {d: errno.ENOSPC for d in SCRATCH}
    for d in SCRATCH:
        assert {"rw", "nosuid", "nodev"} <= set(report["options"][d].split(",")), report["options"][d]
        assert not os.path.exists(os.path.join(d, marker)), f"the jail's {d} leaked to the host"
    assert in_child(second_jail) == {d: [] for d in SCRATCH}


@pytest.mark.parametrize("root", ["empty", "host"])
@pytest.mark.parametrize("use_mount_setattr", [True, False], ids=["mount_setattr", "per-mount-remount"])
def test_nothing_else_is_writable(uid, outside_tmp, use_mount_setattr, root):
    world = os.path.join(outside_tmp, "world-writable")  # readable: in the empty root, bound read-only
    os.mkdir(world)
    os.chmod(world, 0o777)
    world_file = os.path.join(world, "file")
    with open(world_file, "w"):
        pass
    os.chmod(world_file, 0o666)
    host_places = ["/work", REPOSITORY, os.getcwd(), "/run/lock", "/var/crash", "/dev/pts"]
    places = ["/", "/etc", "/root", "/var", "/usr", "/dev", world, *PYTHON_DIRS]  # /proc: see the mounts
    places = list(dict.fromkeys(p for p in places + (host_places if root == "host" else []) if os.path.isdir(p)))
    world_writable = [p for p in places if os.stat(p).st_mode & 0o002]
    assert world in world_writable
    if root == "empty":  # absent, except the directories on the way to a readable dir (the venv is in /work)
        places += [p for p in host_places if os.path.isdir(p) and on_the_way(p, PYTHON_DIRS + (world,))]
    absent = [p for p in host_places if os.path.lexists(p) and p not in places] if root == "empty" else []
    assert root == "host" or "/run/lock" in absent

    def body():
        sandbox._USE_MOUNT_SETATTR = use_mount_setattr
        sandbox.enter(jail(uid, readable=(world,), root=root))
        with open("/dev/null", "w") as null:
            null.write("discarded")
        return {"create": {p: try_create(p) for p in places},
                "mkdir": {p: try_mkdir(p) for p in places},
                "append": errno_of(lambda: open(world_file, "a").close()),
                "absent": {p: errno_of(os.lstat, p) for p in absent},
                "mounts": mounts()}

    report = in_child(body)
    for place in places:
        assert report["create"][place] in (errno.EROFS, errno.EACCES), (place, report["create"][place])
        assert report["mkdir"][place] in (errno.EROFS, errno.EACCES), (place, report["mkdir"][place])
    for place in world_writable:  # only the read-only mount stops these
        assert report["create"][place] == errno.EROFS, place
    assert report["append"] == errno.EROFS
    assert report["absent"] == {p: errno.ENOENT for p in absent}  # the empty root: not there at all
    writable = [m["point"] for m in report["mounts"] if m["rw"] and m["reachable"]]
    assert sorted(writable) == sorted(SCRATCH), writable
    if use_mount_setattr:  # one recursive call reaches hidden mounts too
        assert not [m for m in report["mounts"] if m["rw"] and m["point"] not in SCRATCH]


def test_binds_read_only_and_writable(uid, tmp_path, outside_tmp):
    src_ro = tmp_path / "ro"  # under the host's /tmp, behind pytest's 0700 directory
    src_ro.mkdir()
    src_ro.chmod(0o755)
    (src_ro / "hello.txt").write_text("hello")
    src_rw = tmp_path / "rw"
    src_rw.mkdir()
    os.chown(src_rw, uid, uid)
    src_code = os.path.join(outside_tmp, "code")
    os.mkdir(src_code)
    with open(os.path.join(src_code, "code.txt"), "w") as f:
        f.write("code")
    existing_target = os.path.join(outside_tmp, "mnt")
    os.mkdir(existing_target)

    def body():
        sandbox.enter(jail(uid, binds=((str(src_ro), "/tmp/jail/ro"), (src_code, existing_target)),
                           writable=((str(src_rw), "/tmp/jail/out"),)))
        with open("/tmp/jail/out/result.txt", "w") as f:
            f.write("from the jail")
        parent = os.stat("/tmp/jail")
        return {"ro": open("/tmp/jail/ro/hello.txt").read(), "ro_write": try_create("/tmp/jail/ro"),
                "code": open(os.path.join(existing_target, "code.txt")).read(),
                "code_write": try_create(existing_target),
                "parent": [parent.st_uid, stat.S_IMODE(parent.st_mode)],
                "host_tmp_hidden": not os.path.exists(str(tmp_path))}

    report = in_child(body)
    assert report["ro"] == "hello" and report["code"] == "code"
    assert report["ro_write"] == errno.EROFS and report["code_write"] == errno.EROFS
    assert report["parent"] == [0, 0o755]
    assert report["host_tmp_hidden"]
    assert (src_rw / "result.txt").read_text() == "from the jail"
    assert (src_rw / "result.txt").stat().st_uid == uid
    assert sorted(os.listdir(src_ro)) == ["hello.txt"]
    assert os.listdir(existing_target) == []  # the host's directory was only mounted over


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


@pytest.mark.parametrize("root", ["empty", "host"])
def test_readable_dirs_behind_a_locked_ancestor(uid, outside_tmp, tmp_path, root):
    """A readable dir whose ancestor the uid cannot traverse gets a mirror tmpfs over that ancestor: in the
    host's tree, and in the empty root inside a readable dir (outside_tmp here)."""
    locked = os.path.join(outside_tmp, "locked")  # root's, 0700: the uid cannot traverse it
    os.mkdir(locked)
    os.chmod(locked, 0o700)
    package_dir = os.path.join(locked, "lib", "pkg")
    os.makedirs(os.path.join(package_dir, "sub"))
    for d in (os.path.join(locked, "lib"), package_dir, os.path.join(package_dir, "sub")):
        os.chmod(d, 0o755)
    module = f"jailmod_{uuid.uuid4().hex}"
    with open(os.path.join(package_dir, module + ".py"), "w") as f:
        f.write("VALUE = 42\n")
    host_tmp_dir = str(tmp_path / "hostlib")  # under the host's /tmp (replaced in the jail), behind 0700
    os.mkdir(host_tmp_dir)
    os.chmod(host_tmp_dir, 0o755)
    tmp_module = f"jailtmpmod_{uuid.uuid4().hex}"
    with open(os.path.join(host_tmp_dir, tmp_module + ".py"), "w") as f:
        f.write("VALUE = 7\n")
    reachable_dir = os.path.join(outside_tmp, "open")
    os.mkdir(reachable_dir)
    root_entries = {p.split("/")[2] for p in PYTHON_DIRS if p.startswith("/root/")}

    def listed():
        sandbox.enter(jail(uid, readable=(outside_tmp, package_dir, os.path.join(package_dir, "sub"), reachable_dir,
                                          host_tmp_dir), root=root))
        sys.path[:0] = [package_dir, host_tmp_dir]
        points = [m["point"] for m in mounts()]
        return {"value": importlib.import_module(module).VALUE, "tmp_value": importlib.import_module(tmp_module).VALUE,
                "points": points, "locked": os.listdir(locked), "write_pkg": try_create(package_dir),
                "write_mirror": try_create(locked), "write_root": try_create("/root"), "root": os.listdir("/root")}

    def not_listed():
        sandbox.enter(jail(uid, root=root))
        sys.path.insert(0, package_dir)
        try:
            importlib.import_module(module)
            imported = "imported"
        except ImportError as e:
            imported = type(e).__name__
        return {"import": imported, "locked": errno_of(os.listdir, locked)}

    report = in_child(listed)
    assert report["value"] == 42 and report["tmp_value"] == 7
    assert package_dir in report["points"] and host_tmp_dir in report["points"]
    assert os.path.join(package_dir, "sub") not in report["points"], "covered by package_dir: no mount of its own"
    assert reachable_dir not in report["points"], "already reachable: left alone"
    assert report["locked"] == ["lib"], "the mirror shows only the chain down to the readable directory"
    assert report["write_pkg"] == errno.EROFS and report["write_mirror"] == errno.EROFS
    assert report["write_root"] in (errno.EROFS, errno.EACCES)
    assert set(report["root"]) <= root_entries, "only the chains to readable dirs are visible in /root"
    absent = errno.ENOENT if root == "empty" else errno.EACCES  # empty root: outside_tmp is not there at all
    assert in_child(not_listed) == {"import": "ModuleNotFoundError", "locked": absent}


def test_stdlib_module_not_imported_before_the_fork(uid):
    name = next(n for n in ("colorsys", "netrc", "tabnanny", "plistlib", "fractions", "wave") if n not in sys.modules)
    stdlib = os.path.dirname(os.__file__)

    def body(readable):
        sandbox.enter(Jail(uid=uid, gid=uid, readable=readable))
        try:
            return importlib.import_module(name).__file__
        except (ImportError, OSError) as e:
            return type(e).__name__

    assert in_child(body, PYTHON_DIRS) == os.path.join(stdlib, name + ".py")
    assert in_child(body, ()) == "ModuleNotFoundError"  # the empty root shows no Python unless told to


def test_jail_mounts_do_not_propagate(uid):
    """Even when every mount is shared with the jail's parent (a systemd host: / is shared), the jail's
    tmpfs and binds stay in the jail. The parent makes its own copy of the tree shared, in a namespace of
    its own, so the host is never touched."""
    MS_SHARED = 1 << 20

    def parent():
        assert LIBC.unshare(0x20000) == 0, os.strerror(ctypes.get_errno())  # CLONE_NEWNS
        assert LIBC.mount(None, b"/", None, MS_REC | MS_SHARED, None) == 0, os.strerror(ctypes.get_errno())
        before = open("/proc/self/mountinfo").read().count(" /tmp ")
        in_child(lambda: sandbox.enter(jail(uid, binds=((PYTHON_DIRS[0], "/tmp/jail/code"),))))
        return {"before": before, "after": open("/proc/self/mountinfo").read().count(" /tmp ")}

    report = in_child(parent)
    assert report["after"] == report["before"], "the jail's /tmp (or a bind below it) reached its parent"


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
    assert report["adj"] == sandbox.OOM_SCORE_ADJ
    assert report["lowered"] in (errno.EROFS, errno.EACCES)  # the jail's /proc is read-only (the kernel refuses too)


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
    low, high = sandbox.UID_RANGE
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
        monkeypatch.setattr(sandbox, "_rng", _Sequence([account, uid, free]))
        assert sandbox.pick_uid() == free  # skipped: an account, then a uid a process runs as
    finally:
        reap(busy, time.monotonic())
        os.close(ready)


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
