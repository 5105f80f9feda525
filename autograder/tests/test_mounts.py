"""grader.mounts (the jail's file-system view: the empty root, and the host's read-only for comparison), tested
for real: each test forks a child that enters a jail and reports back as JSON.

How these tests run (as root; failing, not skipping, where this machine cannot isolate): test_sandbox.py.
"""

from __future__ import annotations

import ctypes
import errno
import importlib
import os
import stat
import sys
import sysconfig
import time
import uuid

import pytest
import torch  # imported before any fork, as the fork server does
from probes import (
    LIBC,
    PYTHON_DIRS,
    _start_as,
    _wait_ready,
    errno_of,
    exec_in_jail,
    in_child,
    jail,
    mounts,
    reap,
    run_threads,
    status_fields,
    try_create,
    try_mkdir,
)

import grader.mounts
from grader import sandbox
from grader.sandbox import Jail

pytestmark = pytest.mark.usefixtures("isolation_available")  # conftest.py: FAILS every test when isolation is missing


AUTOGRADER = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REPOSITORY = os.path.dirname(AUTOGRADER)
SCRATCH = ("/tmp", "/var/tmp", "/dev/shm")
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
MS_REC = 0x4000


def on_the_way(path: str, readable) -> bool:
    """Whether path is a readable dir or an ancestor of one (the empty root then has a directory there)."""
    return any(r == path or r.startswith(path.rstrip("/") + "/") for r in readable)


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
        grader.mounts._USE_MOUNT_SETATTR = use_mount_setattr
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
