"""Attacks from inside a worker on its sandbox (seccomp, namespaces, a private /tmp): making processes,
tracing, signalling, reading other processes' memory and exec; socket families the ranks do not need; and
state left behind for a later check to find."""

from __future__ import annotations

from autograder.selftest.attacks.shared import PIDS, absent
from autograder.selftest.kinds import AT_END, BUCKETING, DDP, Case

# ============================================================================================================
# Processes, signals, other processes' memory
# ============================================================================================================

SPAWN_PROBE = PIDS + r'''


def _spawn_probe():
    import ctypes
    import multiprocessing
    import os
    import signal
    import subprocess
    lines = []

    def attempt(label, fn):
        try:
            lines.append(f"ALLOWED {label}: {fn()!r}"[:90])
        except BaseException as error:  # noqa: B902
            lines.append(f"denied {label} ({type(error).__name__}: {error})"[:90])

    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long

    def syscall(number, *args):
        result = libc.syscall(ctypes.c_long(number), *[ctypes.c_long(a) for a in args])
        if result < 0:
            raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))
        if result == 0 and number in (56, 57):
            os._exit(0)  # the child of a successful fork
        return result

    def fork():
        pid = os.fork()
        if pid == 0:
            os._exit(0)
        return pid

    def spawn():
        return os.posix_spawn("/bin/true", ["true"], {})

    def system():
        status = os.system("exit 7")
        if status != 7 << 8:
            raise OSError(f"status {status}")
        return status

    def process():
        p = multiprocessing.get_context("fork").Process(target=int)
        p.start()
        return p.pid

    me = os.getpid()
    siblings = []
    for pid in [int(p) for p in _pids() if int(p) != me]:
        try:
            with open(f"/proc/{pid}/status") as f:
                if f"Uid:\t{os.getuid()}\t" in f.read():
                    siblings.append(pid)
        except OSError:
            pass
    attempt("os.fork", fork)
    attempt("posix_spawn", spawn)
    attempt("subprocess", lambda: subprocess.run(["/bin/true"]).returncode)
    attempt("os.system", system)
    attempt("multiprocessing", process)
    attempt("raw fork syscall", lambda: syscall(57))
    attempt("raw clone(SIGCHLD)", lambda: syscall(56, 17, 0, 0, 0, 0))
    attempt("clone3", lambda: syscall(435, 0, 0))
    attempt("unshare(NEWUSER)", lambda: syscall(272, 0x10000000))
    attempt("mount tmpfs", lambda: syscall(165, 0, 0, 0, 0, 0))
    attempt("bpf", lambda: syscall(321, 0, 0, 0))
    attempt("userfaultfd", lambda: syscall(323, 0))
    attempt("io_uring_setup", lambda: syscall(425, 1, 0))
    attempt("ptrace(ATTACH, zygote)", lambda: syscall(101, 16, os.getppid(), 0, 0))
    attempt("open /proc/<zygote>/mem", lambda: open(f"/proc/{os.getppid()}/mem", "rb").close())
    attempt("kill(zygote, 0)", lambda: os.kill(os.getppid(), 0))
    attempt("kill(1, 0)", lambda: os.kill(1, 0))
    attempt("setuid(0)", lambda: os.setuid(0))
    attempt("open /dev/tty", lambda: open("/dev/tty", "rb").close())
    for pid in siblings[:1]:
        attempt("open /proc/<sibling rank>/mem", lambda: open(f"/proc/{pid}/mem", "rb").close())
        attempt("ptrace(ATTACH, sibling)", lambda: syscall(101, 16, pid, 0, 0))
        try:
            os.kill(pid, 0)
            lines.append("note: kill(sibling rank, 0) works (same uid, expected)")
        except OSError as error:
            lines.append(f"note: kill(sibling rank, 0): {error}")
    attempt("execve /bin/true", lambda: os.execv("/bin/true", ["true"]))
    raise RuntimeError("SPAWNPROBE\n" + "\n".join(lines))
'''


DDP_INIT_START = "        super().__init__()\n        self.module = module\n"


# ============================================================================================================
# State left for a later check
# ============================================================================================================

PERSIST = r'''


def _persist():
    """Leave traces everywhere this process can, and look for the traces of earlier checks' processes."""
    import ctypes
    import os
    import socket
    me = os.environ.get("MASTER_PORT", "?")
    found = []
    for folder in ("/tmp", "/var/tmp", "/dev/shm", "/run/lock", "/run/user", os.path.expanduser("~"), "/dev/mqueue"):
        path = os.path.join(folder, "minddp-persist")
        try:
            with open(path) as f:
                mark = f.read()
            if mark != me:
                found.append(f"{path} (from pool {mark})")
        except OSError:
            pass
        try:  # whole or not at all: the ranks of one pool may share a folder (a chroot jail's /tmp)
            with open(f"{path}.{os.getpid()}", "w") as f:
                f.write(me)
            os.replace(f"{path}.{os.getpid()}", path)
        except OSError:
            pass
    try:
        with open("/proc/net/unix") as f:
            names = [line.split()[-1] for line in f.read().splitlines()[1:] if "@minddp-persist-" in line]
        found += [f"abstract socket {n}" for n in names
                  if not n.startswith(f"@minddp-persist-{me}-")]  # not this pool's own sockets
        server = socket.socket(socket.AF_UNIX)
        server.bind(f"\0minddp-persist-{me}-{os.getpid()}")
        server.listen()
        _KEEP.append(server)
    except OSError:
        pass
    libc = ctypes.CDLL(None, use_errno=True)
    shm = libc.shmget(0x4D494E44, 4096, 0o666)  # a System V segment an earlier check created?
    if shm >= 0:
        found.append("System V shared memory segment")
    libc.shmget(0x4D494E44, 4096, 0o1666)  # IPC_CREAT | 0666
    if found:
        raise RuntimeError("PERSISTED from an earlier check: " + "; ".join(found))


_KEEP = []
_persist()
'''


# ============================================================================================================
# Socket families the ranks do not need
# ============================================================================================================

OTHER_SOCKETS = r'''


def _other_sockets():
    import socket
    said = []
    for name, args in (("vsock", (40, socket.SOCK_STREAM)), ("packet", (17, socket.SOCK_RAW)),
                       ("audit netlink", (16, socket.SOCK_RAW, 9)), ("bluetooth", (31, socket.SOCK_STREAM))):
        try:
            socket.socket(*args).close()
            said.append(f"SOCKET-MADE {name}")
        except OSError as error:
            said.append(f"{name}: {error.strerror}")
    raise RuntimeError("SOCKETS " + "; ".join(said))


_other_sockets()
'''


ATTACKS: list = [
    # -- socket families -------------------------------------------------------------------------------------
    Case("other-sockets", "bucketing.py opens vsock, packet, audit-netlink and bluetooth sockets at import: seccomp "
         "refuses each family (the network the ranks need is unix, inet and inet6)",
         edits={BUCKETING: [(AT_END, OTHER_SOCKETS)]}, zero=("2",), says={"2": "vsock: Address family not supported"},
         check=absent("SOCKET-MADE", why="a socket of a refused family was made")),

    # -- processes -------------------------------------------------------------------------------------------
    Case("spawn-everything", "ddp.py tries, in a world-size-2 worker, every way to make a process, trace, "
         "read another process's memory, signal the zygote, and exec, then reports", edits={
             DDP: [(AT_END, SPAWN_PROBE), (DDP_INIT_START, DDP_INIT_START.replace(
                 "        self.module", "        _spawn_probe()\n        self.module"))]},
         zero=("4", "A", "B.1"), says={"4": "SPAWNPROBE"}, check=absent("ALLOWED", why="a worker escaped seccomp")),


    # -- state left for a later check ------------------------------------------------------------------------
    Case("persist-between-checks", "bucketing.py leaves traces in /tmp, /var/tmp, /dev/shm, /run/lock, an "
         "abstract socket and System V shared memory, and fails if it finds an earlier check's",
         edits={BUCKETING: [(AT_END, PERSIST)]}, check=absent("PERSISTED", why="state outlived a check")),

]
