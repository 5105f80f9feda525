"""Kernel-enforced isolation for untrusted student code (Linux, root, standard library only).

Which layers a machine allows: ``isolation_layers()`` (layers.py; each tried for real in a throw-away child);
layers 1-3 need CAP_SYS_ADMIN, which a default Docker container lacks (``root="chroot"`` below).

How it is used: the grader (root) starts a fork server that calls ``enter_network_namespace()`` once, imports
torch once, and then forks one worker per request. Each worker, right after the fork (single-threaded, still
root), calls ``enter(jail)`` and only then imports student code. Workers never exec (a launcher jailed with
``seccomp=False`` may, e.g. torchrun). ``kill_uid`` ends every process of a grading's uid afterwards;
``pick_uid`` gives each grading its own uid.

Where each piece lives (this module ties them together and is what the rest of the grader imports):
``syscalls.py`` the kernel constants, system call numbers and ctypes wrappers; ``jailspec.py`` ``Jail`` and
``SandboxError``; ``mounts.py`` the file-system view (layer 2, roots "empty" and "host"); ``uids.py`` the uid
(picking it, becoming it: layer 4; ``kill_uid`` and the clean-up after a grading); ``seccomp.py`` the filter
(layer 5); ``layers.py`` ``isolation_layers``; here: the network namespace (layer 1) and ``enter``.

The layers, in the order ``enter`` sets them up, and what each one is for:

1. Network namespace (``enter_network_namespace``, once, in the fork server). A fresh namespace holds only
   ``lo``: the ranks of one job reach each other on 127.0.0.1 (gloo), and nothing else is reachable: no
   internet, no host services listening on the host's 127.0.0.1, no abstract Unix sockets of the host. A
   namespace belongs to a thread: call it before the fork server starts threads, and fork from that thread.

2. Mount namespace (``CLONE_NEWNS``), made private recursively before anything else is changed, so that no
   mount made for the jail propagates back to the host and no host mount event reaches the jail. Sources of
   binds and readable directories are opened (O_PATH) first and bound from /proc/self/fd/N, so they may live
   anywhere, the host's /tmp included. Binds are not recursive: a mount below a source is not carried over.
   What the jail's file system is depends on ``Jail.root``:

   ``root="empty"`` (the default: a tree built from nothing) and ``root="host"`` (the former behaviour, kept
   for comparison: the host's whole tree, read-only) are built by ``mounts.py``; its docstring says what each
   shows and how every mount but the scratch tmpfs and the writable binds is made read-only.

   ``root="chroot"`` (a container without CAP_SYS_ADMIN, e.g. Docker's default: no mount namespace, no mounts):
   ``chroot(tree)``, a tree prepared in advance (``jailtree.py``), then ``chdir(workdir)``. No bind, readable
   folder or tmpfs can be made: the tree holds what the worker needs, the grader made ``workdir`` (the only
   folder the uid may write). No /proc: the process's own /proc/self/status is opened before the chroot
   and read through that descriptor for the checks below, then closed. The IPC namespace (3.) is replaced
   by seccomp's refusal of System V IPC and POSIX message queues; there is no network namespace.

   ``root="none"`` (neither CAP_SYS_ADMIN nor CAP_SYS_CHROOT): the host's tree as it is; only ``chdir(workdir)``.

3. IPC namespace (``CLONE_NEWIPC``): System V shared memory, semaphores and message queues, and POSIX message
   queues, of the host and of other jails are out of reach.

4. Identity: the grading's uid and gid (``pick_uid``: no account, no other process has it), no supplementary
   groups, every capability gone (effective, permitted, inheritable, ambient and the bounding set),
   ``PR_SET_NO_NEW_PRIVS`` (no setuid binary or file capability can give anything back), not dumpable (its
   siblings cannot read its memory through /proc), no core files. Before the switch, while still root:
   ``max_data_mb`` sets RLIMIT_DATA and ``max_processes`` RLIMIT_NPROC, soft = hard, so the student's uid
   can lower them but never raise them. RLIMIT_DATA counts the private writable mappings (heap, anonymous
   mmap, thread stacks), including those the fork inherited: a child of a fork server that imported torch
   starts at the server's VmData (about 230 MB here), so the limit is that plus what the student may
   allocate; past it, malloc/mmap fail (MemoryError in Python, RuntimeError from torch's allocator) instead
   of the process growing. RLIMIT_NPROC counts every process AND thread of the uid on the machine (all the
   jails of one grading together, this one included), and is checked at fork/clone: with seccomp on, it
   bounds threads; with seccomp off (a launcher), processes too. A parent-death signal the fork server set
   survives the change of uid (the kernel clears it; ``enter`` sets it again). Root-only files (0600) and
   directories (0700) are now closed to the student, whatever the mounts show.

5. Seccomp (``install_seccomp``): the process cannot create processes, execute programs, trace or read
   other processes, make namespaces, mount, load kernel code, or use a few kernel interfaces with a history
   of privilege escalation (bpf, perf_event_open, keyrings, userfaultfd, io_uring). Threads still work:
   clone with CLONE_THREAD is allowed, and clone3 answers ENOSYS (its flags are in memory a filter cannot
   read) so glibc falls back to clone. The filter applies to every thread (TSYNC) and every future thread.

Not covered here (the caller's job, or known limits): CPU time and file-size limits, and a memory limit
on resident memory (cgroups; RLIMIT_DATA bounds address space of one kind only); world-readable files under
/usr and /etc, and in the readable dirs and binds, stay readable (read-only); the kernel's own information
in /proc (cpuinfo, meminfo, loadavg, /proc/sys) and uptime stay visible; pids are the host's (no PID
namespace: a jailed process learns its own pid, not others'); with ``root="host"``, see mounts.py; a Unix socket
file in a visible directory that anyone may connect to stays connectable (the network namespace does not
scope file-system sockets; the empty root shows no /run or /var/run, where they usually are); abstract Unix
sockets and ports inside the fork server's network namespace are shared by every job of that fork server;
file ACLs are not consulted when deciding whether a directory is reachable (only the mode bits, exact for
a uid that owns nothing); an open file descriptor the trusted side passed still reaches its file wherever it
is (that is how logs and sockets keep working), and ``enter`` refuses open directories for that reason.
"""

from __future__ import annotations

import errno
import fcntl
import os
import platform
import socket
import stat
import struct

from grader.jailspec import NAMESPACE_ROOTS, ROOTS, Jail, SandboxError, _step
from grader.layers import Layers, isolation_layers, isolation_problem
from grader.mounts import _enter_namespaces
from grader.seccomp import install_seccomp
from grader.syscalls import CLONE_NEWNET, _forget_status, _keep_status, _native_arch, _unshare
from grader.uids import (
    _check_identity,
    _oom_first,
    _set_limits,
    _switch_user,
    become_subreaper,
    kill_uid,
    pick_uid,
    reap_orphans,
    remove_tree,
)

__all__ = ["SandboxError", "Jail", "Layers", "isolation_layers", "isolation_problem", "pick_uid", "enter_network_namespace", "enter",
           "install_seccomp", "kill_uid",
           # used by the grader as sandbox.X, defined in the modules above
           "reap_orphans", "become_subreaper", "remove_tree"]


SIOCGIFFLAGS, SIOCSIFFLAGS, IFF_UP = 0x8913, 0x8914, 0x1


# ---------------------------------------------------------------------------------------------------------
# Network namespace


def _bring_up_loopback() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        request = struct.pack("16sH22x", b"lo", 0)  # struct ifreq: name, flags, padding to 40 bytes
        flags = struct.unpack_from("16sH", fcntl.ioctl(s.fileno(), SIOCGIFFLAGS, request))[1]
        fcntl.ioctl(s.fileno(), SIOCSIFFLAGS, struct.pack("16sH22x", b"lo", flags | IFF_UP))


def _check_only_loopback() -> None:
    names = [name for _, name in socket.if_nameindex()]
    if names != ["lo"]:
        raise OSError(errno.EEXIST, f"the new network namespace has interfaces {names}, expected only lo")


def enter_network_namespace() -> None:
    """unshare(CLONE_NEWNET) in the calling root process and bring up `lo`, so that 127.0.0.1 works and
    nothing else is reachable. Raises SandboxError."""
    if os.geteuid() != 0:
        raise SandboxError("cannot create a network namespace: not running as root")
    _step("create a network namespace", _unshare, CLONE_NEWNET)
    _step("bring up the loopback interface", _bring_up_loopback)
    _step("check the new network namespace", _check_only_loopback)


# ---------------------------------------------------------------------------------------------------------
# enter


def _check_jail(jail: Jail) -> None:
    if os.geteuid() != 0:
        raise SandboxError("cannot enter a jail: not running as root")
    if jail.uid <= 0 or jail.gid <= 0:
        raise SandboxError(f"cannot enter a jail as uid {jail.uid} gid {jail.gid}: that is root")
    if jail.tmpfs_mb < 1:
        raise SandboxError(f"cannot enter a jail with tmpfs_mb={jail.tmpfs_mb}")
    if jail.root not in ROOTS:
        raise SandboxError(f"cannot enter a jail with root={jail.root!r} (one of {', '.join(ROOTS)})")
    if jail.root == "empty" and _native_arch() is None:  # pivot_root's number comes from the table
        raise SandboxError(f"cannot build an empty root: unsupported architecture {platform.machine()}")
    for name, kinds in (("max_data_mb", (int, float)), ("max_processes", (int,))):
        value = getattr(jail, name)
        if value is not None and (isinstance(value, bool) or not isinstance(value, kinds) or not value >= 1):
            raise SandboxError(f"cannot enter a jail with {name}={value!r} (at least 1, or None)")
    for path in [t for _, t in jail.binds + jail.writable] + list(jail.readable):
        if not os.path.isabs(path):
            raise SandboxError(f"cannot enter a jail: {path!r} is not an absolute path")
    for _, target in jail.binds + jail.writable:
        if os.path.normpath(target) == "/":
            raise SandboxError("cannot enter a jail with a bind at /")
    if jail.root == "empty" and "/" in {os.path.realpath(p) for p in jail.readable}:
        raise SandboxError("cannot build an empty root with / readable: that would show the host's root")
    if jail.root not in NAMESPACE_ROOTS and (jail.binds or jail.writable or jail.readable):
        raise SandboxError(f"cannot enter a jail with root={jail.root!r} and binds or readable folders: without a "
                           "mount namespace nothing can be mounted (the tree holds what the worker needs)")
    if jail.root == "chroot" and not (jail.tree and os.path.isabs(jail.tree) and os.path.isdir(jail.tree)):
        raise SandboxError(f"cannot enter a jail with root='chroot': tree {jail.tree!r} is not a folder")
    if jail.workdir is not None and not os.path.isabs(jail.workdir):
        raise SandboxError(f"cannot enter a jail: workdir {jail.workdir!r} is not an absolute path")
    if jail.seccomp and _native_arch() is None:
        raise SandboxError(f"cannot enter a jail with seccomp: unsupported architecture {platform.machine()}")
    threads = len(os.listdir("/proc/self/task"))
    if threads != 1:  # a mount namespace cannot be unshared, nor a uid changed safely, with other threads
        raise SandboxError(f"cannot enter a jail: the process has {threads} threads (call enter right after fork)")


def _check_no_open_directories() -> None:
    """An inherited directory fd would let student code reach the host's tree (openat), read-write."""
    for name in os.listdir("/proc/self/fd"):
        try:
            st = os.fstat(int(name))
        except OSError:  # the fd that listed the directory, closed by now
            continue
        if stat.S_ISDIR(st.st_mode):
            try:
                where = os.readlink(f"/proc/self/fd/{name}")
            except OSError:
                where = "?"
            raise SandboxError(f"cannot enter a jail: fd {name} is an open directory ({where}); close it first")


def enter(jail: Jail) -> None:
    """In a freshly forked, single-threaded child running as root: enter the jail (see the module docstring
    for each layer). Returns with every layer in place; any failure raises SandboxError, after which the
    process is half-isolated and must exit."""
    _check_jail(jail)
    _check_no_open_directories()
    _step("put this process first in line for the OOM killer", _oom_first)
    if jail.root in NAMESPACE_ROOTS:
        _enter_namespaces(jail)
        _step("change directory to /tmp", os.chdir, "/tmp")
    elif jail.root == "chroot":
        _step("open /proc/self/status before leaving /proc behind", _keep_status)
        _step(f"chroot into {jail.tree}", os.chroot, jail.tree)
        _step(f"change directory to {jail.workdir or '/'}", os.chdir, jail.workdir or "/")
    else:
        _step(f"change directory to {jail.workdir or '/'}", os.chdir, jail.workdir or "/")
    _step("set the resource limits", _set_limits, jail)
    _step(f"switch to uid {jail.uid} gid {jail.gid}", _switch_user, jail.uid, jail.gid)
    _step("confirm the new identity", _check_identity, jail.uid, jail.gid)
    if jail.seccomp:
        install_seccomp()
    _forget_status()
