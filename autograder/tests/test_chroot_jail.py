"""The chroot jail, tested for real: what isolates student code in a container without CAP_SYS_ADMIN (a
default Docker container, Gradescope's). A tree built by grader/jailtree.py, workers that enter it with
``sandbox.enter(Jail(root="chroot"))``, the grading's folders (grader/isolation.py), and which layers
``sandbox.isolation_layers`` finds when capabilities are missing. Run as root on Linux, like test_sandbox.py.
"""

from __future__ import annotations

import errno
import json
import os
import select
import socket
import stat
import subprocess
import sys
import time

import pytest
import torch

AUTOGRADER = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REPOSITORY = os.path.dirname(AUTOGRADER)
from probes import (  # noqa: E402
    CHILD_DEADLINE_S,
    LIBC,
    errno_of,
    fork_child,
    in_child,
    reap,
    status_fields,
    try_create,
    try_fork,
)

from grader import jailtree, sandbox  # noqa: E402
from grader.isolation import Isolation  # noqa: E402
from grader.sandbox import Jail  # noqa: E402

AF_VSOCK, NETLINK_AUDIT = 40, 9
torch.ones(1).sum()  # torch's first operation reads /proc/cpuinfo: before any fork, as the fork server's warm-up


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("jail") / "tree")
    manifest = jailtree.build(path)
    assert manifest["linked"] > 1000, manifest
    yield path
    sandbox.remove_tree(path)


@pytest.fixture
def uid():
    return sandbox.pick_uid()


def seen_scratch(tree: str) -> str:
    """Where the workers' folder is in the tree: /tmp, or /scratch where the Python installation is under /tmp."""
    with open(os.path.join(tree, jailtree.MANIFEST), encoding="utf-8") as f:
        return json.load(f)["scratch"]


@pytest.fixture
def scratch(tree, uid):
    """A grading's folder, and the workers' folder that only ``uid`` may write, as grader/isolation.py makes them."""
    area = os.path.join(tree, jailtree.AREA, str(uid))
    os.mkdir(area, 0o750)
    os.chown(area, 0, uid)
    folder = tree + seen_scratch(tree)
    os.mkdir(folder, 0o700)
    os.chown(folder, uid, uid)
    yield seen_scratch(tree)
    sandbox.kill_uid(uid)
    sandbox.remove_tree(area)
    sandbox.remove_tree(folder)


def chroot_jail(tree: str, uid: int, workdir: str, **kwargs) -> Jail:
    return Jail(uid=uid, gid=uid, root="chroot", tree=tree, workdir=workdir, **kwargs)


def test_the_tree_holds_the_python_installation_and_only_what_everyone_may_read(tree):
    assert jailtree.problem(tree) is None
    for folder in jailtree.python_import_dirs():
        assert os.path.isdir(tree + folder), folder
    assert not os.path.exists(tree + REPOSITORY + "/solutions")  # the reference, the grader: never in it
    assert not os.path.exists(tree + AUTOGRADER)
    if os.path.exists("/etc/shadow") and not os.stat("/etc/shadow").st_mode & stat.S_IROTH:
        assert not os.path.exists(tree + "/etc/shadow")
    unreadable, writable, foreign = [], [], []
    for root, dirs, files in os.walk(tree):
        for name in dirs + files:
            st = os.lstat(os.path.join(root, name))
            if stat.S_ISLNK(st.st_mode):
                continue
            if st.st_uid != 0:
                foreign.append(os.path.join(root, name))
            if st.st_mode & 0o022 and not stat.S_ISCHR(st.st_mode):  # /dev/null and the like: 0666 by design
                writable.append(os.path.join(root, name))
            if stat.S_ISREG(st.st_mode) and not st.st_mode & stat.S_IROTH:
                unreadable.append(os.path.join(root, name))
    assert not foreign and not writable and not unreadable, (foreign[:3], writable[:3], unreadable[:3])
    assert stat.S_IMODE(os.stat(os.path.join(tree, jailtree.AREA)).st_mode) == 0o711


def test_a_tree_is_hard_links_only_never_copies(tmp_path):
    """A tree that would need copies (another file system than the Python installation's: a Python
    installation is a GB, 50 of them once filled a CI machine's disk) is refused instead."""
    other = tmp_path / "tmpfs"
    other.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64m", "tmpfs", str(other)], check=True)
    try:
        with pytest.raises(jailtree.TreeError, match="same file system as the Python installation"):
            jailtree.build(str(other / "tree"))
    finally:
        subprocess.run(["umount", "-l", str(other)], check=True)


def test_a_tree_for_another_python_or_with_loose_modes_is_refused(tree, tmp_path):
    other = str(tmp_path / "other")
    os.makedirs(other)
    assert "no readable" in jailtree.problem(other)
    os.chmod(other, 0o777)
    assert "mode 0755" in jailtree.problem(other)
    manifest = os.path.join(tree, jailtree.MANIFEST)
    with open(manifest, encoding="utf-8") as f:
        kept = f.read()
    try:
        with open(manifest, "w", encoding="utf-8") as f:
            json.dump({**json.loads(kept), "python": "2.7"}, f)
        assert "another Python" in jailtree.problem(tree)
    finally:
        with open(manifest, "w", encoding="utf-8") as f:
            f.write(kept)


def _inside(workdir: str) -> dict:
    import xml.dom.minidom  # noqa: F401 - a module not imported before the jail: found in the tree
    repository = os.listdir(REPOSITORY) if os.path.exists(REPOSITORY) else []  # only on the way to its venv
    return {"root": sorted(os.listdir("/")), "proc": os.path.exists("/proc"), "repository": repository,
            "cwd": os.getcwd(), "create /": try_create("/"), "create /etc": try_create("/etc"),
            "create /usr": try_create("/usr"), "create area": try_create("/" + jailtree.AREA),
            "create workdir": try_create(workdir), "list area": errno_of(os.listdir, "/" + jailtree.AREA),
            "var/tmp, dev/shm": [os.path.realpath("/var/tmp"), os.path.realpath("/dev/shm")],
            "ids": [os.getresuid(), os.getresgid(), os.getgroups()], "fork": try_fork(),
            "chroot": errno_of(os.chroot, "/"), "urandom": len(open("/dev/urandom", "rb").read(4)),
            "torch": float(torch.ones(3).sum())}


def test_a_chrooted_worker_sees_the_tree_only_writes_its_folder_and_has_no_privileges(tree, uid, scratch):
    read_end, write_end = os.pipe()
    go_read, go_write = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            sandbox.enter(chroot_jail(tree, uid, scratch))
            report = json.dumps(_inside(scratch)).encode()
        except BaseException as error:  # noqa: BLE001 - reported to the parent
            report = json.dumps({"error": repr(error)}).encode()
        os.write(write_end, report)
        os.read(go_read, 1)  # stay alive while the parent reads this process's status
        os._exit(0)
    try:
        ready, _, _ = select.select([read_end], [], [], CHILD_DEADLINE_S)
        assert ready, "the jailed child did not report"
        report = json.loads(os.read(read_end, 1 << 16))
        status = status_fields(pid)
    finally:
        os.write(go_write, b"x")
        reap(pid, time.monotonic() + CHILD_DEADLINE_S)
        for fd in (read_end, write_end, go_read, go_write):
            os.close(fd)
    assert "error" not in report, report
    assert not report["proc"] and set(report["repository"]) <= {".venv"}
    on_the_way = {p.strip("/").split("/")[0] for p in jailtree.python_import_dirs()}  # e.g. root, work
    assert set(report["root"]) <= {"usr", "etc", "lib", "lib64", "lib32", "libx32", "bin", "sbin", "dev", "var", "tmp",
                                   "scratch", "minddp", jailtree.MANIFEST, *on_the_way}, report["root"]
    if scratch == "/tmp":
        assert report["var/tmp, dev/shm"] == ["/tmp", "/tmp"]
    assert report["cwd"] == scratch
    assert report["create workdir"] is None
    assert {report[k] for k in ("create /", "create /etc", "create /usr", "create area")} == {errno.EACCES}
    assert report["list area"] == errno.EACCES  # other gradings' folders cannot even be listed
    assert report["ids"] == [[uid] * 3, [uid] * 3, []]
    assert report["fork"] == errno.EPERM and report["chroot"] == errno.EPERM
    assert report["urandom"] == 4 and report["torch"] == 3.0
    for key in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"):
        assert status[key] == "0" * 16, (key, status[key])
    assert status["NoNewPrivs"] == "1" and status["Seccomp"] == "2"


def _ipc_and_sockets() -> dict:
    def sock(*args):
        return lambda: socket.socket(*args).close()

    def libc(name, *args):
        def call():
            if getattr(LIBC, name)(*args) < 0:
                import ctypes
                raise OSError(ctypes.get_errno(), name)
        return call

    return {"shmget": errno_of(libc("shmget", 0, 4096, 0o1600)), "semget": errno_of(libc("semget", 0, 1, 0o1600)),
            "msgget": errno_of(libc("msgget", 0, 0o1600)),
            "mq_open": errno_of(libc("mq_open", b"/minddp-probe", os.O_CREAT | os.O_RDWR, 0o600, None)),
            "unix": errno_of(sock(socket.AF_UNIX)), "inet": errno_of(sock(socket.AF_INET)),
            "inet6": errno_of(sock(socket.AF_INET6)), "route netlink": errno_of(sock(socket.AF_NETLINK, socket.SOCK_RAW, 0)),
            "audit netlink": errno_of(sock(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_AUDIT)),
            "packet": errno_of(sock(socket.AF_PACKET, socket.SOCK_RAW)), "vsock": errno_of(sock(AF_VSOCK, socket.SOCK_STREAM)),
            "dumpable again": errno_of(libc("prctl", 4, 1, 0, 0, 0))}


def test_seccomp_refuses_ipc_that_outlives_a_process_and_sockets_but_unix_inet_and_route_netlink(tree, uid, scratch):
    """Without an IPC namespace a System V segment or a message queue would outlive the check; other socket
    families (packet, vsock, audit netlink...) serve no scenario; a worker cannot make itself dumpable again."""
    got = in_child(lambda: (sandbox.enter(chroot_jail(tree, uid, scratch)), _ipc_and_sockets())[1])
    assert {k: got[k] for k in ("shmget", "semget", "msgget", "mq_open")} == dict.fromkeys(
        ("shmget", "semget", "msgget", "mq_open"), errno.EPERM)
    assert {k: got[k] for k in ("unix", "inet", "inet6", "route netlink")} == dict.fromkeys(
        ("unix", "inet", "inet6", "route netlink"))
    assert {k: got[k] for k in ("audit netlink", "packet", "vsock")} == dict.fromkeys(
        ("audit netlink", "packet", "vsock"), errno.EAFNOSUPPORT)
    assert got["dumpable again"] == errno.EPERM  # PR_SET_DUMPABLE: its siblings cannot read its memory


def test_the_chroot_jail_refuses_mounts_and_a_tree_that_is_not_there(tree, uid, scratch):
    report, _ = fork_child(sandbox.enter, Jail(uid=uid, gid=uid, root="chroot", tree=tree, readable=("/usr",)))
    assert "without a mount namespace nothing can be mounted" in report["error"]
    report, _ = fork_child(sandbox.enter, Jail(uid=uid, gid=uid, root="chroot", tree=tree + "-missing"))
    assert "is not a folder" in report["error"]


def _layers_without(capability: str) -> dict:
    """isolation_layers() in a child whose capabilities lack ``capability`` (setpriv, as a container would)."""
    code = ("import json, sys; sys.path.insert(0, sys.argv[1]); from grader import sandbox; "
            "layers = sandbox.isolation_layers(); print(json.dumps(layers if isinstance(layers, str) else "
            "{'names': layers.names(), 'root': layers.root, 'why_not': layers.why_not}))")
    done = subprocess.run(["setpriv", f"--bounding-set=-{capability}", sys.executable, "-c", code, AUTOGRADER],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_without_cap_sys_admin_the_layers_are_uid_seccomp_and_chroot():
    layers = _layers_without("sys_admin")
    assert layers["names"] == ["uid", "seccomp", "chroot"] and layers["root"] == "chroot"
    assert layers["why_not"] == [["namespaces", "no CAP_SYS_ADMIN"]]
    layers = _layers_without("sys_admin,-sys_chroot")
    assert layers["root"] == "none" and ["chroot", "no CAP_SYS_CHROOT"] in layers["why_not"]


def test_without_cap_setuid_the_grader_fails_closed():
    assert _layers_without("setuid") == "root without CAP_SETUID: no uid of its own can be given to student code"


def test_a_gradings_folders_in_the_tree(tree, tmp_path):
    """One folder per grading (root's, its uid's group only), the code and harness copied in, readable; a
    fresh folder to write for each set of workers; all removed at the end."""
    harness = tmp_path / "harness"
    (harness / "checks").mkdir(parents=True)
    (harness / "checks" / "checks.py").write_text("X = 1\n")
    layers = sandbox.Layers(uid=True, seccomp=True, namespaces=False, chroot=True)
    isolation = Isolation(layers, tree, str(harness))
    try:
        area = isolation.area
        st = os.stat(area)
        assert (st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode)) == (0, isolation.uid, 0o750)
        code = tmp_path / "code"
        (code / "minddp").mkdir(parents=True)
        (code / "minddp" / "ddp.py").write_text("Y = 2\n")
        paths = isolation.code_paths(str(code), "student")
        assert paths == [f"/{jailtree.AREA}/{isolation.uid}/code-student", f"/{jailtree.AREA}/{isolation.uid}/harness"]
        assert os.stat(tree + paths[0] + "/minddp/ddp.py").st_mode & 0o777 == 0o644
        assert isolation.env() == ({} if seen_scratch(tree) == "/tmp" else  # HOME and TMPDIR stay /tmp, as anywhere
                                   {"HOME": "/scratch", "TMPDIR": "/scratch"})
        isolation.fresh_scratch()
        with open(os.path.join(isolation.scratch, "left"), "w") as f:
            f.write("from earlier workers")
        isolation.fresh_scratch()
        assert os.listdir(isolation.scratch) == []
        st = os.stat(isolation.scratch)
        assert (st.st_uid, stat.S_IMODE(st.st_mode)) == (isolation.uid, 0o700)
        jail = isolation.jail(str(code))
        assert (jail["root"], jail["tree"], jail["workdir"]) == ("chroot", tree, seen_scratch(tree))
        assert "chroot" in isolation.describe() and "namespaces" not in isolation.layer_names()
    finally:
        isolation.close()
    assert not os.path.exists(area) and not os.path.exists(isolation.scratch)


def test_enter_checks_every_path_it_is_given(tree, uid):
    report, _ = fork_child(sandbox.enter, chroot_jail(tree, uid, "relative/path"))
    assert "is not an absolute path" in report["error"]
    report, _ = fork_child(sandbox.enter, Jail(uid=uid, gid=uid, root="chroot", tree=None))
    assert "is not a folder" in report["error"]
