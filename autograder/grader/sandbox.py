"""Kernel-enforced isolation for untrusted student code (Linux, root, standard library only).

Which layers a machine allows: ``isolation_layers()`` (each tried for real in a throw-away child); layers 1-3
need CAP_SYS_ADMIN, which a default Docker container lacks (``root="chroot"`` below).

How it is used: the grader (root) starts a fork server that calls ``enter_network_namespace()`` once, imports
torch once, and then forks one worker per request. Each worker, right after the fork (single-threaded, still
root), calls ``enter(jail)`` and only then imports student code. Workers never exec (a launcher jailed with
``seccomp=False`` may, e.g. torchrun). ``kill_uid`` ends every process of a grading's uid afterwards;
``pick_uid`` gives each grading its own uid.

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

   ``root="empty"`` (the default): a tree built from nothing. A fresh tmpfs (1 MB, mode 0755, root's) is
   mounted in this namespace over /tmp (any directory would do) and ``pivot_root`` makes it the root, the
   host's root going to /.old-root; everything below is bound from there, then the host's root is detached
   (``umount2(MNT_DETACH)``, with every mount under it) and the directory removed. The jail has only:

   * /usr, /etc and, where the host has them, /bin, /sbin, /lib, /lib64, /lib32, /libx32: read-only
     recursive binds at their own paths (nosuid, nodev), or the same symlinks where the host has symlinks
     (merged /usr: /bin -> usr/bin). Programs, shared libraries, ld.so.cache, zoneinfo, hosts, passwd.
     Files there keep their modes: /etc/shadow (0640, group shadow) stays unreadable.
   * /dev with null, zero, full, random and urandom (each the host's node, bound read-only: a device node
     works on a read-only mount), the symlinks fd, stdin, stdout, stderr into /proc/self/fd, and /dev/shm.
     No tty, no pts, no block devices.
   * a new procfs at /proc (nosuid, nodev, noexec, read-only) mounted with ``hidepid=invisible``: a process
     sees in it only the processes it may ptrace. A jailed process is not dumpable and has no capabilities,
     so it sees itself only (/proc/self works: the kernel always lets a process look at itself); the
     grader's, other users' and even sibling jails' command lines, environments and fds are not there at
     all. (A program a launcher execs is dumpable again: processes of the same uid that exec'd see each
     other, as torchrun and its ranks do.) Per-mount procfs options need Linux 5.8+: an older kernel
     refuses "invisible" (where "2" would have changed the host's /proc as well), and ``enter`` fails.
     No new PID namespace is needed: real root may mount a procfs of the PID namespace it is in. Not
     ``subset=pid``: /proc/cpuinfo, /proc/stat and /proc/meminfo stay (glibc counts CPUs in /proc/stat
     when /sys is missing; torch's cpuinfo reads /proc/cpuinfo).
   * nothing else: no /sys, /run, /home, /root, /opt, /srv, /mnt, /media, /boot, /work, no /var beyond
     /var/tmp (ENOENT), except the directories on the way to a readable dir or a bind target, which list
     only that way (e.g. /root holds only .pyenv, /work only main). Python and torch on the CPU need
     nothing of /sys: os.cpu_count() (glibc falls back to /proc/stat), torch's default thread count
     (OpenMP counts the affinity mask), its thread pools and its cpuinfo (it falls back to /proc/cpuinfo)
     work without it.
   * fresh, empty tmpfs (``tmpfs_mb`` each, nosuid, nodev, a cap on the number of files) at /tmp, /var/tmp
     and /dev/shm: the only places the student can write, private to this process and its threads.
   * ``readable``: each directory (or file) bound read-only at its real path (``os.path.realpath``), its
     missing ancestors created (root's, 0755, in the root tmpfs or the new /tmp); one below another that
     is already reachable through it is left alone. Every symlink met on the way to a readable path on the
     host is recreated as the same symlink at the same place (e.g. a readable /opt/python -> py-3.11 gives
     /opt/py-3.11 bound and /opt/python the symlink), so the path as given works as well as the real one.
     A symlink inside a readable directory is shown as it is: what it points to must be readable too (a
     venv's bin/python points into the base installation: make both readable, as ``sys.prefix`` and
     ``sys.base_prefix``). A directory on the way that the uid cannot traverse inside a bound directory
     gets a mirror tmpfs, as below.
   * ``binds`` (read-only) and ``writable`` (read-write) at their targets, created as needed (root-owned
     0755 directories, in the root tmpfs or the new /tmp). A target inside a read-only bind must exist.

   Then every mount is made read-only (``mount_setattr`` recursively, or one by one; see below), the
   scratch tmpfs and the writable binds are made read-write again, and the result is checked: exactly
   those are read-write. The root tmpfs is read-only, so nothing can be created outside them.

   ``root="chroot"`` (a container without CAP_SYS_ADMIN, e.g. Docker's default: no mount namespace, no mounts):
   ``chroot(tree)``, a tree prepared in advance (``jailtree.py``), then ``chdir(workdir)``. No bind, readable
   folder or tmpfs can be made: the tree holds what the worker needs, the grader made ``workdir`` (the only
   folder the uid may write). No /proc: the process's own /proc/self/status is opened before the chroot
   and read through that descriptor for the checks below, then closed. The IPC namespace (3.) is replaced
   by seccomp's refusal of System V IPC and POSIX message queues; there is no network namespace.

   ``root="none"`` (neither CAP_SYS_ADMIN nor CAP_SYS_CHROOT): the host's tree as it is; only ``chdir(workdir)``.

   ``root="host"`` (the former behaviour, kept for comparison): the host's whole tree, read-only:

   * every existing mount is made read-only. First with one ``mount_setattr(AT_RECURSIVE)`` call (Linux
     5.12+), which also reaches mounts hidden under other mounts; then each reachable mount of
     /proc/self/mountinfo that is still read-write is remounted read-only on its own (the only method on
     older kernels). Read-only is a flag of the mount, not of the file system: the host still writes there,
     and files the trusted side opened before ``enter`` keep working. Device nodes stay usable on a
     read-only mount, so writing to /dev/null works. Tolerated: a mount that is hidden (another mount covers
     it, nothing in the jail can name a path in it, and ``enter`` refuses to run while a directory is open)
     and a pseudo file system (proc, sysfs, cgroup...) that refuses the remount: their files are owned by
     root or belong to the process itself, so they give the student no place to keep or change anything.
     Anything else that stays read-write is an error.
   * fresh scratch tmpfs at /tmp, /var/tmp and /dev/shm, as above.
   * ``readable``: directories (or files) that must stay readable at their own paths. Python and torch keep
     importing modules after the fork; here Python lives under /root/.pyenv and /root is mode 0700. For a
     directory on the way that the student's uid cannot traverse, a small tmpfs is mounted over it, the
     chain of directories down to the wanted one is recreated (mode 0755, root's) and the real directory is
     bind-mounted back, read-only; the mirror tmpfs is then made read-only too. The rest of /root stays out
     of sight. Directories the uid can already reach are left alone (and one below another is covered by
     it). A directory that was under the host's /tmp is recreated in the new /tmp the same way.
   * ``binds`` and ``writable`` as above; a target that needs a new directory on the read-only host tree
     is refused.
   * everything world-readable on the host stays readable, and /proc lists every process of the host.

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
namespace: a jailed process learns its own pid, not others'); with ``root="host"``, see above; a Unix socket
file in a visible directory that anyone may connect to stays connectable (the network namespace does not
scope file-system sockets; the empty root shows no /run or /var/run, where they usually are); abstract Unix
sockets and ports inside the fork server's network namespace are shared by every job of that fork server;
file ACLs are not consulted when deciding whether a directory is reachable (only the mode bits, exact for
a uid that owns nothing); an open file descriptor the trusted side passed still reaches its file wherever it
is (that is how logs and sockets keep working), and ``enter`` refuses open directories for that reason.
"""

from __future__ import annotations

import ctypes
import errno
import fcntl
import grp
import json
import os
import platform
import pwd
import random
import re
import resource
import select
import signal
import socket
import stat
import struct
import sys
import time
from dataclasses import dataclass

__all__ = ["SandboxError", "Jail", "Layers", "isolation_layers", "isolation_problem", "pick_uid", "enter_network_namespace", "enter",
           "install_seccomp", "kill_uid"]


OOM_SCORE_ADJ = 1000  # the highest: the first a jailed process is killed when memory runs out


class SandboxError(RuntimeError):
    """Isolation could not be set up (the message says what); a half-isolated process must exit."""


@dataclass(frozen=True)
class Jail:
    uid: int
    gid: int
    binds: tuple[tuple[str, str], ...] = ()     # (source dir, target path): bind-mounted READ-ONLY at target
    writable: tuple[tuple[str, str], ...] = ()  # (source dir, target path): bind-mounted read-write
    readable: tuple[str, ...] = ()              # dirs that must stay readable at their own paths
    tmpfs_mb: int = 32                          # size limit of each private tmpfs
    seccomp: bool = True                        # forbid creating processes (see install_seccomp)
    root: str = "empty"                         # "empty": a root built from nothing; "host": the host's, read-only;
                                                # "chroot": ``tree`` (jailtree.py), no mounts; "none": the host's as is
    max_data_mb: float | None = None            # RLIMIT_DATA (soft = hard), counts what the fork inherited
    max_processes: int | None = None            # RLIMIT_NPROC (soft = hard) for the uid: processes AND threads
    tree: str | None = None                     # root="chroot": the folder that becomes / (root's, prepared)
    workdir: str | None = None                  # root="chroot"/"none": the working folder (inside the tree)


# ---------------------------------------------------------------------------------------------------------
# Kernel constants (include/uapi/linux/{sched,mount,prctl,capability,seccomp,filter,audit}.h)

CLONE_THREAD = 0x00010000
CLONE_NEWNS = 0x00020000
CLONE_NEWIPC = 0x08000000
CLONE_NEWNET = 0x40000000

MS_RDONLY = 0x1
MS_NOSUID = 0x2
MS_NODEV = 0x4
MS_NOEXEC = 0x8
MS_REMOUNT = 0x20
MS_BIND = 0x1000
MS_REC = 0x4000
MS_PRIVATE = 0x40000
MNT_DETACH = 0x2
_KEPT_MOUNT_FLAGS = {"nosuid": MS_NOSUID, "nodev": MS_NODEV, "noexec": MS_NOEXEC}  # a remount must repeat them

AT_FDCWD = -100
AT_RECURSIVE = 0x8000
MOUNT_ATTR_RDONLY = 0x1
SYS_MOUNT_SETATTR = 442  # the same number on every architecture (new syscalls share one table)

PR_SET_PDEATHSIG = 1
PR_GET_PDEATHSIG = 2
PR_SET_DUMPABLE = 4
PR_CAPBSET_DROP = 24
PR_SET_CHILD_SUBREAPER = 36
PR_SET_NO_NEW_PRIVS = 38
PR_CAP_AMBIENT = 47
PR_CAP_AMBIENT_CLEAR_ALL = 4
_LINUX_CAPABILITY_VERSION_3 = 0x20080522
_CAP_SETGID, _CAP_SETUID, _CAP_SETPCAP, _CAP_SYS_CHROOT, _CAP_SYS_ADMIN = 6, 7, 8, 18, 21

SECCOMP_SET_MODE_FILTER = 1
SECCOMP_FILTER_FLAG_TSYNC = 1
SECCOMP_RET_KILL_PROCESS = 0x80000000
SECCOMP_RET_ERRNO = 0x00050000
SECCOMP_RET_ALLOW = 0x7FFF0000
_BPF_LD_W_ABS, _BPF_JEQ_K, _BPF_JGE_K, _BPF_JSET_K, _BPF_RET_K = 0x20, 0x15, 0x35, 0x45, 0x06
_SECCOMP_DATA_NR, _SECCOMP_DATA_ARCH, _SECCOMP_DATA_ARG0_LOW = 0, 4, 16  # struct seccomp_data, little endian
_SECCOMP_DATA_ARG2_LOW = 32
_X32_SYSCALL_BIT = 0x40000000

SIOCGIFFLAGS, SIOCSIFFLAGS, IFF_UP = 0x8913, 0x8914, 0x1

UID_RANGE = (1_500_000, 1_999_999)  # far above any account or container range in common use
_SCRATCH = ("/tmp", "/var/tmp", "/dev/shm")
_MIRROR_OPTIONS = "size=1m,nr_inodes=4096,mode=0755"
# Pseudo file systems whose refusal to become read-only is tolerated (see the module docstring).
_PSEUDO_FS = frozenset({"proc", "sysfs", "cgroup", "cgroup2", "securityfs", "debugfs", "tracefs", "bpf",
                        "configfs", "fusectl", "pstore", "efivarfs", "binfmt_misc", "selinuxfs"})
_USE_MOUNT_SETATTR = True  # the tests turn it off to exercise the per-mount remount of older kernels
ROOTS = ("empty", "host", "chroot", "none")  # the first two need mount namespaces (CAP_SYS_ADMIN)
NAMESPACE_ROOTS = ("empty", "host")
# The empty root: what it takes from the host, at the same paths (read-only). A missing one is skipped, except
# /usr and /etc; a symlink (merged /usr: /bin -> usr/bin) is recreated as the same symlink.
_SYSTEM_TREES = ("usr", "bin", "sbin", "lib", "lib64", "lib32", "libx32", "etc")
_REQUIRED_TREES = ("usr", "etc")
_DEVICES = ("null", "zero", "full", "random", "urandom")  # bound one by one from the host's /dev
_DEVICE_LINKS = (("fd", "/proc/self/fd"), ("stdin", "/proc/self/fd/0"), ("stdout", "/proc/self/fd/1"),
                 ("stderr", "/proc/self/fd/2"))
_NEW_ROOT_OPTIONS = "size=1m,nr_inodes=4096,mode=0755"
# Only the processes the uid may ptrace are listed or readable (Linux 5.8+: one procfs instance per mount; an
# older kernel rejects "invisible", where "2" would have changed the host's /proc too).
_PROC_OPTIONS = "hidepid=invisible"
_OLD_ROOT = "/.old-root"  # where pivot_root puts the host's root until it is detached


@dataclass(frozen=True)
class _Arch:
    audit: int  # AUDIT_ARCH_* value in seccomp_data.arch
    seccomp_nr: int
    has_x32: bool  # x86_64's other ABI (syscall numbers with bit 30 set) shares the AUDIT_ARCH value
    numbers: dict  # syscall name -> number


_DENIED = ("fork", "vfork", "execve", "execveat", "ptrace", "process_vm_readv", "process_vm_writev", "unshare",
           "setns", "mount", "umount2", "pivot_root", "chroot", "bpf", "perf_event_open", "keyctl", "add_key",
           "request_key", "userfaultfd", "io_uring_setup", "io_uring_enter", "io_uring_register", "kexec_load",
           "kexec_file_load", "init_module", "finit_module", "delete_module",
           # System V IPC and POSIX message queues: without an IPC namespace (a chroot jail) what they make
           # outlives the process; nothing a worker runs needs them (torch shares memory through files)
           "shmget", "shmat", "shmdt", "shmctl", "semget", "semop", "semtimedop", "semctl", "msgget", "msgsnd",
           "msgrcv", "msgctl", "mq_open", "mq_unlink", "mq_timedsend", "mq_timedreceive", "mq_notify",
           "mq_getsetattr")
# socket(): the families gloo and Python need, and route netlink (gloo's and glibc's look-ups of the interfaces;
# without CAP_NET_ADMIN it can only read); any other (packet, vsock, other netlink, bluetooth...) is refused
SOCKET_FAMILIES = (socket.AF_UNIX, socket.AF_INET, socket.AF_INET6)
AF_NETLINK, NETLINK_ROUTE = 16, 0

_ARCHES = {
    "x86_64": _Arch(0xC000003E, 317, True, {  # arch/x86/entry/syscalls/syscall_64.tbl
        "clone": 56, "clone3": 435, "fork": 57, "vfork": 58, "execve": 59, "execveat": 322, "ptrace": 101,
        "process_vm_readv": 310, "process_vm_writev": 311, "unshare": 272, "setns": 308, "mount": 165,
        "umount2": 166, "pivot_root": 155, "chroot": 161, "bpf": 321, "perf_event_open": 298, "keyctl": 250,
        "add_key": 248, "request_key": 249, "userfaultfd": 323, "io_uring_setup": 425, "io_uring_enter": 426,
        "io_uring_register": 427, "kexec_load": 246, "kexec_file_load": 320, "init_module": 175,
        "finit_module": 313, "delete_module": 176, "socket": 41, "shmget": 29, "shmat": 30, "shmctl": 31,
        "shmdt": 67, "semget": 64, "semop": 65, "semctl": 66, "semtimedop": 220, "msgget": 68, "msgsnd": 69,
        "msgrcv": 70, "msgctl": 71, "mq_open": 240, "mq_unlink": 241, "mq_timedsend": 242,
        "mq_timedreceive": 243, "mq_notify": 244, "mq_getsetattr": 245, "prctl": 157}),
    "aarch64": _Arch(0xC00000B7, 277, False, {  # include/uapi/asm-generic/unistd.h (no fork, no vfork)
        "clone": 220, "clone3": 435, "execve": 221, "execveat": 281, "ptrace": 117, "process_vm_readv": 270,
        "process_vm_writev": 271, "unshare": 97, "setns": 268, "mount": 40, "umount2": 39, "pivot_root": 41,
        "chroot": 51, "bpf": 280, "perf_event_open": 241, "keyctl": 219, "add_key": 217, "request_key": 218,
        "userfaultfd": 282, "io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427,
        "kexec_load": 104, "kexec_file_load": 294, "init_module": 105, "finit_module": 273,
        "delete_module": 106, "socket": 198, "mq_open": 180, "mq_unlink": 181, "mq_timedsend": 182,
        "mq_timedreceive": 183, "mq_notify": 184, "mq_getsetattr": 185, "msgget": 186, "msgctl": 187,
        "msgrcv": 188, "msgsnd": 189, "semget": 190, "semctl": 191, "semtimedop": 192, "semop": 193,
        "shmget": 194, "shmctl": 195, "shmat": 196, "shmdt": 197, "prctl": 167}),
}


# ---------------------------------------------------------------------------------------------------------
# Thin ctypes wrappers: each raises OSError with the errno, like the os module.

_libc_handle = None


def _libc():
    global _libc_handle
    if _libc_handle is None:
        lib = ctypes.CDLL(None, use_errno=True)  # the C library Python itself is linked with
        lib.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p]
        lib.unshare.argtypes = [ctypes.c_int]
        lib.umount2.argtypes = [ctypes.c_char_p, ctypes.c_int]
        lib.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
        lib.syscall.restype = ctypes.c_long
        _libc_handle = lib
    return _libc_handle


def _raise_errno(what: str):
    err = ctypes.get_errno()
    raise OSError(err, f"{what}: {os.strerror(err)}")


def _mount(source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    def enc(s):
        return None if s is None else os.fsencode(s)
    if _libc().mount(enc(source), enc(target), enc(fstype), flags, enc(data)) != 0:
        _raise_errno(f"mount({source!r}, {target!r}, {fstype!r}, {flags:#x}, {data!r})")


def _umount2(target: str, flags: int) -> None:
    if _libc().umount2(os.fsencode(target), flags) != 0:
        _raise_errno(f"umount2({target!r}, {flags:#x})")


def _pivot_root(new_root: str, put_old: str) -> None:
    arch = _native_arch()
    if arch is None:  # glibc has no wrapper: the number comes from the table
        raise OSError(errno.ENOSYS, f"pivot_root: unsupported architecture {platform.machine()}")
    _syscall(arch.numbers["pivot_root"], ctypes.c_char_p(os.fsencode(new_root)),
             ctypes.c_char_p(os.fsencode(put_old)))


def _unshare(flags: int) -> None:
    if _libc().unshare(flags) != 0:
        _raise_errno(f"unshare({flags:#x})")


def _prctl(option: int, arg2: int = 0, arg3: int = 0) -> int:
    result = _libc().prctl(option, arg2, arg3, 0, 0)
    if result < 0:
        _raise_errno(f"prctl({option}, {arg2})")
    return result


def _syscall(number: int, *args) -> int:
    result = _libc().syscall(ctypes.c_long(number), *args)
    if result < 0:
        _raise_errno(f"syscall {number}")
    return result


def _step(what: str, fn, *args):
    """Run one set-up step; any failure becomes a SandboxError that says which step failed."""
    try:
        return fn(*args)
    except SandboxError:
        raise
    except (OSError, ValueError) as e:
        raise SandboxError(f"cannot {what}: {e}") from e


# ---------------------------------------------------------------------------------------------------------
# What this machine offers


def _native_arch() -> _Arch | None:
    # A 32-bit Python on a 64-bit kernel makes i386 system calls: neither supported nor filtered here.
    if sys.maxsize <= 2 ** 32 or sys.byteorder != "little":
        return None
    return _ARCHES.get(platform.machine())


def _status_fields(pid: int | str = "self") -> dict[str, str]:
    if pid == "self" and _kept_status is not None:  # chrooted: the file opened before, read again from the start
        return _parse_status(os.pread(_kept_status, 1 << 16, 0).decode())
    with open(f"/proc/{pid}/status") as f:
        return _parse_status(f.read())


def _parse_status(text: str) -> dict[str, str]:
    fields = {}
    for line in text.splitlines():
        key, _, value = line.partition(":")
        fields[key] = value.strip()
    return fields


_kept_status: int | None = None  # a chrooted process has no /proc: its own status file, opened before


def _keep_status() -> None:
    global _kept_status
    _kept_status = os.open("/proc/self/status", os.O_RDONLY | os.O_CLOEXEC)


def _forget_status() -> None:
    global _kept_status
    if _kept_status is not None:
        os.close(_kept_status)
        _kept_status = None


@dataclass(frozen=True)
class Layers:
    """What this machine lets the grader put around student code (``isolation_layers``), strongest first."""

    uid: bool         # a uid of its own, no groups, no capabilities, no_new_privs, limits: the floor
    seccomp: bool     # the filter of ``install_seccomp``
    namespaces: bool  # mount, IPC and network namespaces and the empty root (needs CAP_SYS_ADMIN)
    chroot: bool      # chroot into a tree prepared in advance (jailtree.py; needs CAP_SYS_CHROOT)
    why_not: tuple = ()  # (layer, why it is missing)

    @property
    def root(self) -> str:
        """The Jail.root a worker gets: the empty root where namespaces exist, else a chroot, else none."""
        return "empty" if self.namespaces else "chroot" if self.chroot else "none"

    def names(self) -> list[str]:
        names = ["uid"] if self.uid else []
        names += ["seccomp"] if self.seccomp else []
        names += ["namespaces (mount, IPC, network; empty root)"] if self.namespaces else []
        names += ["chroot"] if self.chroot and not self.namespaces else []
        return names


def _capabilities() -> int:
    return int(_status_fields().get("CapEff", "0"), 16)


def isolation_layers() -> Layers | str:
    """The layers this process can set up for student code, each tried for real in a throw-away child (a
    container's seccomp profile may refuse what the capabilities allow); a string when not even a uid of
    its own is possible (not Linux, not root, no CAP_SETUID...): then student code must not run at all."""
    if not sys.platform.startswith("linux"):
        return f"not Linux ({sys.platform})"
    if os.geteuid() != 0:
        return "not running as root"
    effective = _capabilities()
    for cap, name in ((_CAP_SETUID, "CAP_SETUID"), (_CAP_SETGID, "CAP_SETGID"), (_CAP_SETPCAP, "CAP_SETPCAP")):
        if not effective >> cap & 1:
            return f"root without {name}: no uid of its own can be given to student code"
    tried = _probe_in_child(namespaces=bool(effective >> _CAP_SYS_ADMIN & 1), chroot=bool(effective >> _CAP_SYS_CHROOT & 1))
    if tried.get("uid"):
        return f"a uid of its own could not be set up: {tried['uid']}"
    why_not = []
    for layer, cap in (("seccomp", None), ("namespaces", "CAP_SYS_ADMIN"), ("chroot", "CAP_SYS_CHROOT")):
        if tried.get(layer) is None:
            why_not.append((layer, f"no {cap}"))
        elif tried[layer]:
            why_not.append((layer, tried[layer]))
    if _native_arch() is None:
        why_not.append(("seccomp", f"unsupported architecture {platform.machine()}"))
    missing = dict(why_not)
    return Layers(True, "seccomp" not in missing, "namespaces" not in missing, "chroot" not in missing,
                  tuple(why_not))


def isolation_problem() -> str | None:
    """None when every layer, namespaces included, can be set up (what the sandbox's own tests need);
    otherwise a one-line reason."""
    layers = isolation_layers()
    if isinstance(layers, str):
        return layers
    return "; ".join(f"{layer}: {why}" for layer, why in layers.why_not) or None


def _probe_in_child(namespaces: bool, chroot: bool, timeout_s: float = 10.0) -> dict:
    """{layer: "" (works) or why not; None: not tried} for namespaces, chroot, seccomp and uid, tried in that
    order in a child that exits afterwards."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        report: dict = {}
        try:
            os.close(read_end)
            for layer, wanted, attempt in (("namespaces", namespaces, _try_namespaces), ("chroot", chroot, _try_chroot),
                                           ("seccomp", _native_arch() is not None, install_seccomp),
                                           ("uid", True, _try_uid)):
                if not wanted:
                    continue
                try:
                    attempt()
                    report[layer] = ""
                except BaseException as e:  # noqa: BLE001 - any failure is the answer
                    report[layer] = str(e)[:300] or type(e).__name__
        finally:
            try:
                os.write(write_end, json.dumps(report).encode())
            finally:
                os._exit(0)
    os.close(write_end)
    try:
        ready, _, _ = select.select([read_end], [], [], timeout_s)
        answer = os.read(read_end, 10000).decode(errors="replace") if ready else ""
    finally:
        os.close(read_end)
        _reap(pid)
    try:
        return json.loads(answer)
    except ValueError:
        return {"uid": f"the isolation probe did not answer ({answer[:100]!r})"}


def _try_namespaces() -> None:
    _unshare(CLONE_NEWNS | CLONE_NEWIPC | CLONE_NEWNET)
    _mount(None, "/", None, MS_REC | MS_PRIVATE)
    _mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "size=1m")
    os.mkdir("/tmp/proc")
    os.mkdir("/tmp" + _OLD_ROOT)
    _mount(None, "/tmp", None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV)
    _mount("proc", "/tmp/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, _PROC_OPTIONS)  # the empty root's
    _pivot_root("/tmp", "/tmp" + _OLD_ROOT)
    os.chdir("/")
    _umount2(_OLD_ROOT, MNT_DETACH)


def _try_chroot() -> None:
    os.chroot("/")


def _try_uid() -> None:
    _drop_bounding_set()
    os.setgroups([])
    os.setresgid(65534, 65534, 65534)
    os.setresuid(65534, 65534, 65534)


def _reap(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)  # already exited in the normal case: this only matters after a timeout
    except ProcessLookupError:
        pass
    os.waitpid(pid, 0)


# ---------------------------------------------------------------------------------------------------------
# uids

_rng = random.SystemRandom()  # not seeded from the time: two gradings started together must differ


def _ids_in_use() -> set[int]:
    """Every uid and gid (real, effective, saved, file system) of every running process."""
    used: set[int] = set()
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            status = _status_fields(name)
        except OSError:  # exited meanwhile
            continue
        for key in ("Uid", "Gid"):
            used.update(int(n) for n in status.get(key, "").split())
    return used


def _subordinate_ranges() -> list[tuple[int, int]]:
    """Ranges in /etc/subuid and /etc/subgid: files of rootless containers are owned by uids there."""
    ranges = []
    for path in ("/etc/subuid", "/etc/subgid"):
        try:
            with open(path) as f:
                for line in f:
                    parts = line.strip().split(":")
                    if len(parts) == 3 and parts[1].isdigit() and parts[2].isdigit():
                        ranges.append((int(parts[1]), int(parts[1]) + int(parts[2])))
        except OSError:
            pass
    return ranges


def _has_account(uid: int) -> bool:
    for lookup in (pwd.getpwuid, grp.getgrgid):  # through NSS: /etc/passwd, /etc/group and any directory
        try:
            lookup(uid)
            return True
        except KeyError:
            pass
    return False


def pick_uid(avoid: tuple[int, ...] = ()) -> int:
    """A uid (and gid, the same number) for one grading's student processes: no account needed; taken
    from a high range (e.g. 1_500_000..1_999_999), not in /etc/passwd or /etc/group, and no running process
    has it, nor one of ``avoid`` (picked already, not yet in use). Concurrent gradings on one machine must get
    different uids (random choice + the checks)."""
    in_use = _ids_in_use() | set(avoid)
    reserved = _subordinate_ranges()
    for _ in range(1000):
        uid = _rng.randint(*UID_RANGE)
        if uid in in_use or any(lo <= uid < hi for lo, hi in reserved) or _has_account(uid):
            continue
        return uid
    raise SandboxError(f"no free uid in {UID_RANGE[0]}..{UID_RANGE[1]} after 1000 tries")


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
# Mounts


@dataclass(frozen=True)
class _Mount:
    id: int
    point: str
    options: frozenset  # per-mount options: ro/rw, nosuid, nodev, noexec, atime
    fstype: str


def _unescape(field: bytes) -> str:
    # mountinfo writes space, tab, newline and backslash in paths as \040, \011, \012, \134
    return os.fsdecode(re.sub(rb"\\([0-7]{3})", lambda m: bytes([int(m.group(1), 8)]), field))


def _mountinfo() -> list[_Mount]:
    mounts = []
    with open("/proc/self/mountinfo", "rb") as f:
        for line in f:
            left, _, right = line.rstrip(b"\n").partition(b" - ")
            fields = left.split(b" ")
            mounts.append(_Mount(int(fields[0]), _unescape(fields[4]), frozenset(fields[5].decode().split(",")),
                                 right.split(b" ")[0].decode()))
    return mounts


def _open_path(path: str) -> int:
    return os.open(path, os.O_PATH | os.O_CLOEXEC)


def _mount_id(fd: int) -> int | None:
    with open(f"/proc/self/fdinfo/{fd}") as f:
        for line in f:
            if line.startswith("mnt_id:"):
                return int(line.split()[1])
    return None  # kernels before 3.15: unknown, treated as reachable


def _reachable_fd(mount: _Mount) -> int | None:
    """An O_PATH fd of the mount's root when its mount point leads to it (not covered by another mount)."""
    try:
        fd = _open_path(mount.point)
    except OSError:  # mount point deleted or under a hidden mount
        return None
    mount_id = _mount_id(fd)
    if mount_id is not None and mount_id != mount.id:
        os.close(fd)
        return None
    return fd


def _mount_setattr_read_only() -> bool:
    """Every mount of the namespace read-only in one call, hidden ones included (Linux 5.12+)."""
    attr = ctypes.create_string_buffer(struct.pack("QQQQ", MOUNT_ATTR_RDONLY, 0, 0, 0), 32)
    try:
        _syscall(SYS_MOUNT_SETATTR, ctypes.c_long(AT_FDCWD), ctypes.c_char_p(b"/"), ctypes.c_long(AT_RECURSIVE),
                 attr, ctypes.c_long(32))
        return True
    except OSError:  # ENOSYS before 5.12; any refusal leaves the per-mount remount below to do the work
        return False


def _remount_read_only(mount: _Mount, fd: int) -> None:
    flags = MS_REMOUNT | MS_BIND | MS_RDONLY
    for option, flag in _KEPT_MOUNT_FLAGS.items():
        if option in mount.options:
            flags |= flag
    _mount(None, f"/proc/self/fd/{fd}", None, flags)  # by fd: exactly this mount, whatever its path holds


def _make_every_mount_read_only() -> None:
    if _USE_MOUNT_SETATTR:
        _mount_setattr_read_only()
    for mount in _mountinfo():
        if "ro" in mount.options:
            continue
        fd = _reachable_fd(mount)
        if fd is None:
            continue  # hidden: no path in the jail leads into it
        try:
            _remount_read_only(mount, fd)
        except OSError:
            if mount.fstype not in _PSEUDO_FS:
                raise
        finally:
            os.close(fd)
    still_writable = []
    for mount in _mountinfo():
        if "ro" in mount.options or mount.fstype in _PSEUDO_FS:
            continue
        fd = _reachable_fd(mount)
        if fd is not None:
            os.close(fd)
            still_writable.append(f"{mount.point} ({mount.fstype})")
    if still_writable:
        raise OSError(errno.EROFS, f"mounts still read-write: {', '.join(still_writable)}")


def _scratch_options(size_mb: int) -> str:
    return f"size={size_mb}m,nr_inodes={max(4096, 256 * size_mb)},mode=1777"


def _mount_scratch(size_mb: int) -> None:
    """Fresh tmpfs at /tmp, /var/tmp and /dev/shm (the real places, when one is a symlink to another)."""
    done: list[str] = []
    options = _scratch_options(size_mb)
    for path in _SCRATCH:
        real = os.path.realpath(path)
        if not os.path.isdir(real):
            if path == "/tmp":
                raise OSError(errno.ENOENT, "/tmp does not exist")
            continue  # nothing there, so nothing to write to either
        if any(real == d or real.startswith(d + "/") for d in done):
            continue
        _mount("tmpfs", real, "tmpfs", MS_NOSUID | MS_NODEV, options)
        done.append(real)


def _mkdir_0755(path: str) -> None:
    os.mkdir(path, 0o755)
    os.chmod(path, 0o755)  # whatever the umask


def _make_parents(path: str) -> None:
    """Create the missing parents of path as root-owned 0755 directories."""
    missing = []
    parent = os.path.dirname(path)
    while not os.path.lexists(parent):
        missing.append(parent)
        parent = os.path.dirname(parent)
    for directory in reversed(missing):
        _mkdir_0755(directory)


def _make_mount_point(path: str, is_dir: bool) -> None:
    """Create path (and missing parents as root-owned 0755 directories) unless it exists."""
    _make_parents(path)
    if os.path.lexists(path):
        if os.path.isdir(path) != is_dir:
            raise OSError(errno.ENOTDIR if is_dir else errno.EISDIR, f"{path} exists and is of another type")
        return
    if is_dir:
        _mkdir_0755(path)
    else:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644))


def _bind(fd: int, target: str, writable: bool) -> None:
    _make_mount_point(target, stat.S_ISDIR(os.fstat(fd).st_mode))
    _mount(f"/proc/self/fd/{fd}", target, None, MS_BIND)
    # A bind copies the source mount's flags (read-only by now); set the ones wanted, on this mount only.
    _mount(None, target, None, MS_REMOUNT | MS_BIND | MS_NOSUID | MS_NODEV | (0 if writable else MS_RDONLY))


def _permits(st: os.stat_result, uid: int, gid: int, bits: int) -> bool:
    """Whether uid (with gid and no other group) has the rwx bits on st (bits: 4 read, 2 write, 1 search)."""
    shift = 6 if st.st_uid == uid else 3 if st.st_gid == gid else 0
    return (st.st_mode >> shift) & bits == bits


def _stat_or_none(path: str) -> os.stat_result | None:
    try:
        return os.stat(path)
    except FileNotFoundError:
        return None


def _mount_mirror(path: str) -> int:
    """A tmpfs over a directory the uid cannot traverse; returns an fd of it, to make it read-only later."""
    _mount("tmpfs", path, "tmpfs", MS_NOSUID | MS_NODEV, _MIRROR_OPTIONS)
    return _open_path(path)


def _make_readable(entries: list[tuple[str, int]], uid: int, gid: int, mirrors: list[int]) -> None:
    """Make each (path, O_PATH fd of the real thing) readable at path; entries shallowest first. Appends
    to mirrors the fds of the mirror tmpfs mounted on the way (still writable, for binds below them)."""
    for path, fd in entries:
        real = os.fstat(fd)
        ancestor = ""
        for name in path.strip("/").split("/")[:-1]:
            ancestor += "/" + name
            st = _stat_or_none(ancestor)
            if st is None:
                _mkdir_0755(ancestor)  # only possible in a fresh tmpfs: the new /tmp or a mirror
            elif not _permits(st, uid, gid, 1):
                mirrors.append(_mount_mirror(ancestor))
        wanted = 5 if stat.S_ISDIR(real.st_mode) else 4
        if not _permits(real, uid, gid, wanted):
            raise OSError(errno.EACCES, f"{path} itself is mode {stat.filemode(real.st_mode)}, owner {real.st_uid}")
        seen = _stat_or_none(path)
        if seen is not None and (seen.st_dev, seen.st_ino) == (real.st_dev, real.st_ino):
            continue  # already reachable (every ancestor was traversable): left alone
        _bind(fd, path, writable=False)


# ---------------------------------------------------------------------------------------------------------
# The empty root


@dataclass(frozen=True)
class _HostParts:
    """What the empty root takes from the host, opened before the pivot (the host's tree is gone after it)."""
    trees: tuple      # (path, symlink target or None, O_PATH fd of the directory or None)
    devices: tuple    # (path, O_PATH fd of the host's device node)
    links: tuple      # (path, target): symlinks met on the way to a readable path, recreated as they are


def links_on_the_way(path: str) -> list[tuple[str, str]]:
    """Every symlink the kernel follows when it resolves path on this tree, as (where, target text); `where`
    is the link's own path with its parent already resolved. Recreating each one where it is makes path lead
    to the same place in a tree that has the real directory at its real path."""
    links: list[tuple[str, str]] = []
    pending = [name for name in path.split("/") if name]
    current = "/"
    while pending:
        name = pending.pop(0)
        if name == ".":
            continue
        if name == "..":
            current = os.path.dirname(current)
            continue
        candidate = os.path.join(current, name)
        try:
            st = os.lstat(candidate)
        except (FileNotFoundError, NotADirectoryError):
            break  # nothing there (a sys.path entry may not exist): nothing more to recreate
        if not stat.S_ISLNK(st.st_mode):
            current = candidate
            continue
        if len(links) >= 40:
            raise OSError(errno.ELOOP, f"too many symlinks on the way to {path}")
        target = os.readlink(candidate)
        if (candidate, target) not in links:
            links.append((candidate, target))
        pending[:0] = [n for n in target.split("/") if n]
        if target.startswith("/"):
            current = "/"
    return links


def _open_host_parts(jail: Jail, opened: list[int]) -> _HostParts:
    trees = []
    for name in _SYSTEM_TREES:
        path = "/" + name
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            st = None
        if st is not None and stat.S_ISLNK(st.st_mode):
            trees.append((path, os.readlink(path), None))
        elif st is not None and stat.S_ISDIR(st.st_mode):
            fd = _open_path(path)
            opened.append(fd)
            trees.append((path, None, fd))
        elif name in _REQUIRED_TREES:
            raise OSError(errno.ENOENT, f"the host has no directory {path}")
    devices = []
    for name in _DEVICES:
        path = "/dev/" + name
        fd = _open_path(path)
        opened.append(fd)
        if not stat.S_ISCHR(os.fstat(fd).st_mode):
            raise OSError(errno.ENODEV, f"{path} is not a character device")
        devices.append((path, fd))
    links: list[tuple[str, str]] = []
    for path in jail.readable:
        links += [link for link in links_on_the_way(os.path.normpath(path)) if link not in links]
    return _HostParts(tuple(trees), tuple(devices), tuple(links))


def _pivot_into(new_root: str) -> None:
    """Make new_root (a mount point) the root; the host's root stays reachable at _OLD_ROOT until detached."""
    os.mkdir(new_root + _OLD_ROOT, 0o700)
    _pivot_root(new_root, new_root + _OLD_ROOT)
    os.chdir("/")


def _super_options(point: str) -> list[str]:
    options: list[str] = []
    with open("/proc/self/mountinfo", "rb") as f:
        for line in f:
            left, _, right = line.rstrip(b"\n").partition(b" - ")
            if _unescape(left.split(b" ")[4]) == point:
                options = right.split(b" ")[2].decode().split(",")  # the last mount there is the visible one
    return options


def _mount_proc() -> None:
    """A procfs of its own: hidepid=invisible hides every process the uid may not ptrace (all but itself)."""
    _mkdir_0755("/proc")
    _mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, _PROC_OPTIONS)
    options = _super_options("/proc")
    if "hidepid=invisible" not in options:
        raise OSError(errno.EINVAL, f"the new /proc has options {','.join(options)}, not hidepid=invisible")


def _bind_system_trees(trees: tuple) -> None:
    for path, link, fd in trees:
        if link is not None:
            os.symlink(link, path)
            continue
        _mkdir_0755(path)
        # Recursive: a mount below (a file Docker binds over /etc/hosts, a separate /usr/local) comes along.
        _mount(f"/proc/self/fd/{fd}", path, None, MS_BIND | MS_REC)
        _mount(None, path, None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV)


def _populate_dev(devices: tuple) -> None:
    _mkdir_0755("/dev")
    for path, fd in devices:
        _make_mount_point(path, False)
        _mount(f"/proc/self/fd/{fd}", path, None, MS_BIND)
        # Not nodev, or the node would stop working; a device node works on a read-only mount.
        _mount(None, path, None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NOEXEC)
    for name, target in _DEVICE_LINKS:
        os.symlink(target, f"/dev/{name}")


def _mount_new_scratch(size_mb: int, keep_writable: list[int]) -> None:
    for path in _SCRATCH:
        _make_mount_point(path, True)
        _mount("tmpfs", path, "tmpfs", MS_NOSUID | MS_NODEV, _scratch_options(size_mb))
        keep_writable.append(_open_path(path))


def _make_links(links: tuple) -> None:
    for where, target in links:
        if os.path.islink(where) and os.readlink(where) == target:
            continue  # inside a bound directory: already there
        if os.path.lexists(where):
            raise OSError(errno.EEXIST, f"{where} is a symlink to {target} on the host, something else here")
        _make_parents(where)
        os.symlink(target, where)


def _detach_old_root() -> None:
    _umount2(_OLD_ROOT, MNT_DETACH)  # with everything below it; the binds taken from it are mounts of their own
    os.rmdir(_OLD_ROOT)


def _make_writable_again(fd: int) -> None:
    _mount(None, f"/proc/self/fd/{fd}", None, MS_REMOUNT | MS_BIND | MS_NOSUID | MS_NODEV)


def _check_writable_mounts(keep_writable: list[int]) -> None:
    """The read-write mounts are exactly the scratch tmpfs and the writable binds."""
    wanted = {_mount_id(fd) for fd in keep_writable}
    writable = {m.id: m for m in _mountinfo() if "ro" not in m.options}
    missing = wanted - set(writable)
    if missing:
        raise OSError(errno.EROFS, f"mounts {sorted(missing)} should be read-write")
    extra = []
    for mount in writable.values():
        if mount.id in wanted:
            continue
        fd = _reachable_fd(mount)
        if fd is not None:  # a hidden one (older kernels: no mount_setattr) has no path that leads to it
            os.close(fd)
            extra.append(f"{mount.point} ({mount.fstype})")
    if extra:
        raise OSError(errno.EROFS, f"mounts still read-write: {', '.join(extra)}")


def _enter_empty_root(jail: Jail, binds: list, readable: list, opened: list[int]) -> None:
    """Build the jail's tree from nothing (see the module docstring) and leave the host's behind."""
    host = _step("open what the jail takes from the host", _open_host_parts, jail, opened)
    new_root = os.path.realpath("/tmp")  # any directory does: this namespace's mounts are private
    _step("mount the new root", _mount, "tmpfs", new_root, "tmpfs", MS_NOSUID | MS_NODEV, _NEW_ROOT_OPTIONS)
    _step("pivot into the new root", _pivot_into, new_root)
    _step("mount a new /proc with hidepid=invisible", _mount_proc)  # /proc/self/fd/N from here on
    _step("bind the system directories", _bind_system_trees, host.trees)
    _step("populate /dev", _populate_dev, host.devices)
    keep_writable: list[int] = []
    try:
        _step("mount private tmpfs at /tmp, /var/tmp, /dev/shm", _mount_new_scratch, jail.tmpfs_mb, keep_writable)
        mirrors: list[int] = []
        try:
            _step("keep the readable directories readable", _make_readable, readable, jail.uid, jail.gid, mirrors)
        finally:
            opened.extend(mirrors)
        _step("recreate the symlinks on the way to readable directories", _make_links, host.links)
        for target, fd, writable, source in binds:
            _step(f"bind {source} at {target}", _bind, fd, target, writable)
            if writable:
                keep_writable.append(_step(f"open {target}", _open_path, target))
        _step("detach the host's root", _detach_old_root)
        _step("make every mount read-only", _make_every_mount_read_only)
        for fd in keep_writable:
            _step("make the scratch tmpfs and the writable binds writable again", _make_writable_again, fd)
        _step("check the jail's mounts", _check_writable_mounts, keep_writable)
    finally:
        opened.extend(keep_writable)


def _enter_host_root(jail: Jail, binds: list, readable: list, opened: list[int]) -> None:
    """The host's tree, every mount read-only, with private scratch tmpfs, the readable dirs and the binds."""
    _step("make every mount read-only", _make_every_mount_read_only)
    _step("mount private tmpfs at /tmp, /var/tmp, /dev/shm", _mount_scratch, jail.tmpfs_mb)
    mirrors: list[int] = []
    try:
        _step("keep the readable directories readable", _make_readable, readable, jail.uid, jail.gid, mirrors)
    finally:
        opened.extend(mirrors)
    for target, fd, writable, source in binds:
        _step(f"bind {source} at {target}", _bind, fd, target, writable)
    for fd in mirrors:
        _step("make a mirror tmpfs read-only", _mount, None, f"/proc/self/fd/{fd}", None,
              MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV)


def _depth(path: str) -> tuple[int, str]:
    return path.rstrip("/").count("/"), path


def _open_sources(jail: Jail, opened: list[int]) -> tuple[list, list]:
    """O_PATH fds of every bind source and readable path, taken in the new namespace before /tmp changes
    (a bind needs a source in the caller's own namespace)."""
    binds = []
    for pairs, writable in ((jail.binds, False), (jail.writable, True)):
        for source, target in pairs:
            fd = _step(f"open bind source {source}", _open_path, source)
            opened.append(fd)
            binds.append((os.path.normpath(target), fd, writable, source))
    readable = []
    for path in sorted({os.path.realpath(p) for p in jail.readable}, key=_depth):
        try:
            fd = _open_path(path)
        except FileNotFoundError:
            continue  # e.g. a zip of sys.path that does not exist: nothing to read
        opened.append(fd)
        readable.append((path, fd))
    binds.sort(key=lambda b: _depth(b[0]))  # a target inside another target comes after it
    return binds, readable


# ---------------------------------------------------------------------------------------------------------
# Identity


def _capset_zero() -> None:
    header = (ctypes.c_uint32 * 2)(_LINUX_CAPABILITY_VERSION_3, 0)
    data = (ctypes.c_uint32 * 6)()  # two {effective, permitted, inheritable}, all empty
    if _libc().capset(header, data) != 0:
        _raise_errno("capset")


def _drop_bounding_set() -> None:
    try:
        with open("/proc/sys/kernel/cap_last_cap") as f:
            last = int(f.read())
    except OSError:
        last = 63
    for cap in range(last + 1):
        try:
            _prctl(PR_CAPBSET_DROP, cap)
        except OSError as e:
            if e.errno != errno.EINVAL:  # EINVAL: a capability this kernel does not have
                raise


def _switch_user(uid: int, gid: int) -> None:
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    pdeathsig = ctypes.c_int(0)
    _prctl(PR_GET_PDEATHSIG, ctypes.addressof(pdeathsig))
    parent = os.getppid()
    try:
        _prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL)
    except OSError as e:
        if e.errno != errno.EINVAL:  # kernels before 4.3 have no ambient set
            raise
    _drop_bounding_set()  # needs CAP_SETPCAP, so before the uid changes
    os.setgroups([])
    os.setresgid(gid, gid, gid)
    os.setresuid(uid, uid, uid)  # clears the effective and permitted sets
    _capset_zero()  # the inheritable set too
    _prctl(PR_SET_DUMPABLE, 0)
    _prctl(PR_SET_NO_NEW_PRIVS, 1)
    if pdeathsig.value:  # the kernel clears it when credentials change
        _prctl(PR_SET_PDEATHSIG, pdeathsig.value)
        if os.getppid() != parent:  # the parent died in between: act as the signal would have
            os.kill(os.getpid(), pdeathsig.value)


def _oom_first() -> None:
    """When the grading's memory runs out (Gradescope's 768 MB hold everything), the kernel's OOM killer takes
    a jailed process before any other, so the grader lives to write results.json. A value root sets is also
    the lowest the uid may set it back to. (Before the jail: its /proc is read-only.)"""
    with open("/proc/self/oom_score_adj", "w") as f:
        f.write(str(OOM_SCORE_ADJ))


def _set_limits(jail: Jail) -> None:
    """Soft = hard, set while still root: the student's uid can lower them, never raise them."""
    if jail.max_data_mb is not None:
        size = int(jail.max_data_mb * 2 ** 20)
        resource.setrlimit(resource.RLIMIT_DATA, (size, size))
    if jail.max_processes is not None:
        resource.setrlimit(resource.RLIMIT_NPROC, (jail.max_processes, jail.max_processes))


def _check_identity(uid: int, gid: int) -> None:
    status = _status_fields()
    expected = {"Uid": f"{uid} {uid} {uid} {uid}", "Gid": f"{gid} {gid} {gid} {gid}", "Groups": "",
                "NoNewPrivs": "1"}
    for key in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"):
        expected[key] = "0" * 16
    for key, value in expected.items():
        if key in status and " ".join(status[key].split()) != value:
            raise OSError(errno.EPERM, f"{key} is {status[key]!r}, expected {value!r}")
    if os.getresuid() != (uid, uid, uid) or os.getresgid() != (gid, gid, gid) or os.getgroups():
        raise OSError(errno.EPERM, "uid, gid or groups did not change")


# ---------------------------------------------------------------------------------------------------------
# Seccomp


def _assemble(lines: list) -> list[tuple[int, int, int, int]]:
    """Classic BPF from (code, k, jump_if_true, jump_if_false) lines and ("label", name) lines; a jump is a
    label name or None (the next instruction)."""
    where: dict[str, int] = {}
    program = []
    for line in lines:
        if line[0] == "label":
            where[line[1]] = len(program)
        else:
            program.append(line)

    def offset(label, index):
        if label is None:
            return 0
        distance = where[label] - index - 1
        if not 0 <= distance <= 255:
            raise ValueError(f"BPF jump to {label} out of range")
        return distance

    return [(code, offset(jt, i), offset(jf, i), k) for i, (code, k, jt, jf) in enumerate(program)]


def _seccomp_program(arch: _Arch) -> list[tuple[int, int, int, int]]:
    lines: list = [
        (_BPF_LD_W_ABS, _SECCOMP_DATA_ARCH, None, None),
        (_BPF_JEQ_K, arch.audit, None, "kill"),  # another ABI (i386 via int 0x80, arm32) has other numbers
        (_BPF_LD_W_ABS, _SECCOMP_DATA_NR, None, None),
    ]
    if arch.has_x32:
        lines.append((_BPF_JGE_K, _X32_SYSCALL_BIT, "kill", None))
    lines += [(_BPF_JEQ_K, arch.numbers["clone"], "clone", None),
              (_BPF_JEQ_K, arch.numbers["clone3"], "enosys", None),
              (_BPF_JEQ_K, arch.numbers["socket"], "socket", None),
              (_BPF_JEQ_K, arch.numbers["prctl"], "prctl", None)]
    lines += [(_BPF_JEQ_K, arch.numbers[name], "eperm", None) for name in _DENIED if name in arch.numbers]
    lines += [
        (_BPF_RET_K, SECCOMP_RET_ALLOW, None, None),
        ("label", "clone"),  # a thread (CLONE_THREAD in the flags, the low word of argument 0) or nothing
        (_BPF_LD_W_ABS, _SECCOMP_DATA_ARG0_LOW, None, None),
        (_BPF_JSET_K, CLONE_THREAD, None, "eperm"),
        (_BPF_RET_K, SECCOMP_RET_ALLOW, None, None),
        ("label", "socket"),  # the family is argument 0 (an int: its low word)
        (_BPF_LD_W_ABS, _SECCOMP_DATA_ARG0_LOW, None, None),
        *[(_BPF_JEQ_K, family, "allow", None) for family in SOCKET_FAMILIES],
        (_BPF_JEQ_K, AF_NETLINK, None, "eafnosupport"),
        (_BPF_LD_W_ABS, _SECCOMP_DATA_ARG2_LOW, None, None),  # the protocol
        (_BPF_JEQ_K, NETLINK_ROUTE, "allow", None),
        ("label", "eafnosupport"),
        (_BPF_RET_K, SECCOMP_RET_ERRNO | errno.EAFNOSUPPORT, None, None),
        ("label", "prctl"),  # not dumpable stays so: siblings of the uid cannot read its memory or its /proc
        (_BPF_LD_W_ABS, _SECCOMP_DATA_ARG0_LOW, None, None),
        (_BPF_JEQ_K, PR_SET_DUMPABLE, "eperm", "allow"),
        ("label", "allow"),
        (_BPF_RET_K, SECCOMP_RET_ALLOW, None, None),
        ("label", "eperm"),
        (_BPF_RET_K, SECCOMP_RET_ERRNO | errno.EPERM, None, None),
        ("label", "enosys"),
        (_BPF_RET_K, SECCOMP_RET_ERRNO | errno.ENOSYS, None, None),
        ("label", "kill"),
        (_BPF_RET_K, SECCOMP_RET_KILL_PROCESS, None, None),
    ]
    return _assemble(lines)


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def _load_seccomp(arch: _Arch) -> None:
    program = _seccomp_program(arch)
    code = b"".join(struct.pack("HBBI", *instruction) for instruction in program)
    buffer = ctypes.create_string_buffer(code, len(code))
    fprog = _SockFprog(len(program), ctypes.addressof(buffer))
    # seccomp(2), not prctl: only it has TSYNC, which puts the filter on every thread of the process.
    result = _syscall(arch.seccomp_nr, ctypes.c_long(SECCOMP_SET_MODE_FILTER),
                      ctypes.c_long(SECCOMP_FILTER_FLAG_TSYNC), ctypes.byref(fprog))
    if result != 0:
        raise OSError(errno.EBUSY, f"thread {result} could not take the filter")
    if _status_fields().get("Seccomp") != "2":
        raise OSError(errno.EPERM, "/proc/self/status does not show a seccomp filter")


def install_seccomp() -> None:
    """PR_SET_NO_NEW_PRIVS, then a seccomp BPF filter (TSYNC, every thread) that checks the architecture
    (x86_64 and aarch64; any other arch value, and x86_64's x32 ABI, kill the process) and returns EPERM for
    fork, vfork, clone without CLONE_THREAD, execve, execveat, ptrace, process_vm_readv/writev, unshare,
    setns, mount, umount2, pivot_root, chroot, bpf, perf_event_open, keyctl, add_key, request_key,
    userfaultfd, io_uring_*, kexec_load, kexec_file_load, init_module, finit_module, delete_module, System V
    IPC (shm*, sem*, msg*) and POSIX message queues (mq_*); EAFNOSUPPORT for a socket of any family but
    AF_UNIX, AF_INET, AF_INET6 and route netlink; EPERM for prctl(PR_SET_DUMPABLE) (a worker stays not
    dumpable); ENOSYS for clone3 (glibc then falls back to clone). Everything else is allowed. Also usable on its own, e.g. at the top of a script a launcher started inside a jail without
    seccomp. Raises SandboxError."""
    arch = _native_arch()
    if arch is None:
        raise SandboxError(f"cannot install the seccomp filter: unsupported architecture {platform.machine()}")
    _step("set no_new_privs", _prctl, PR_SET_NO_NEW_PRIVS, 1)
    _step("install the seccomp filter", _load_seccomp, arch)


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


def _enter_namespaces(jail: Jail) -> None:
    _step("create mount and IPC namespaces", _unshare, CLONE_NEWNS | CLONE_NEWIPC)
    _step("make every mount private", _mount, None, "/", None, MS_REC | MS_PRIVATE)
    opened: list[int] = []
    try:
        binds, readable = _open_sources(jail, opened)
        if jail.root == "empty":
            _enter_empty_root(jail, binds, readable, opened)
        else:
            _enter_host_root(jail, binds, readable, opened)
    finally:
        for fd in opened:
            os.close(fd)


# ---------------------------------------------------------------------------------------------------------
# kill_uid


def _owner(pid: int | str) -> tuple[list[int], bool] | None:
    """(real, effective, saved uid), and whether any thread is still running; None when gone."""
    try:
        status = _status_fields(pid)
    except OSError:
        return None
    uids = [int(n) for n in status.get("Uid", "").split()[:3]]
    running = not status.get("State", "").startswith(("Z", "X"))
    if not running and int(status.get("Threads", "0") or 0) > 1:
        running = True  # the leader thread exited, the others did not
    return uids, running


def _targets(uid: int) -> list[int]:
    pids = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        owner = _owner(name)
        if owner is None:
            continue
        uids, running = owner
        if running and len(uids) == 3 and uid in uids[:2] and 0 not in uids:
            pids.append(int(name))
    return pids


def _kill_if_owned(pid: int, uid: int) -> bool:
    """SIGKILL pid if it is still a process of uid; through a pidfd where possible, so a pid reused by
    another process between the check and the signal is never hit."""
    try:
        pidfd = os.pidfd_open(pid)
    except ProcessLookupError:
        return False
    except (OSError, AttributeError):
        pidfd = None
    try:
        owner = _owner(pid)  # read after the pidfd is open: it names this process or one that replaced it
        if owner is None or uid not in owner[0][:2] or 0 in owner[0]:
            return False
        if pidfd is not None:
            signal.pidfd_send_signal(pidfd, signal.SIGKILL)
        else:
            os.kill(pid, signal.SIGKILL)
        return True
    except ProcessLookupError:
        return False
    finally:
        if pidfd is not None:
            os.close(pidfd)


def become_subreaper() -> None:
    """Make this process the reaper of its descendants' orphans: a student process whose parent died is then
    reparented here (not to pid 1, which in a container may never reap it) and reap_orphans() collects it."""
    _prctl(PR_SET_CHILD_SUBREAPER, 1)


def reap_orphans(uid: int | None = None) -> int:
    """Collect this process's children that have already exited (orphans that kill_uid left as zombies:
    they still count towards the uid's RLIMIT_NPROC); never blocks. With a uid, only that uid's (another
    part of this process may still wait for its own children); without, all of them (the end of a grading)."""
    if uid is None:
        reaped = 0
        while True:
            try:
                pid, _ = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return reaped
            if pid == 0:
                return reaped
            reaped += 1
    reaped = 0
    for pid in _children():
        owner = _owner(pid)
        if owner is not None and not owner[1] and uid in owner[0][:2]:
            try:
                reaped += os.waitpid(pid, os.WNOHANG)[0] == pid
            except ChildProcessError:
                pass
    return reaped


def _children() -> list[int]:
    me = str(os.getpid())
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                if _status_fields(name).get("PPid", "").strip() == me:
                    found.append(int(name))
            except OSError:
                continue
    return found


def remove_tree(path: str) -> None:
    """Remove a folder, whatever student code left in it (a 3,000-deep tree defeats shutil.rmtree; rm never
    follows a symbolic link and stays on the folder's file system)."""
    import subprocess
    subprocess.run(["rm", "-rf", "--one-file-system", path], check=False, stdin=subprocess.DEVNULL,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def kill_uid(uid: int, timeout_s: float = 5.0) -> list[int]:
    """SIGKILL every process owned by uid (real or effective; scan /proc), repeat until none remain, and
    return the pids killed; raise SandboxError if some survive timeout_s. Never kills uid 0's processes."""
    if uid == 0:
        raise SandboxError("kill_uid refuses to kill uid 0's processes")
    killed: list[int] = []
    deadline = time.monotonic() + timeout_s
    pause = 0.001
    while True:
        remaining = _targets(uid)
        if not remaining:
            return killed
        for pid in remaining:
            if _kill_if_owned(pid, uid) and pid not in killed:
                killed.append(pid)
        if time.monotonic() > deadline:
            raise SandboxError(f"processes of uid {uid} survived SIGKILL for {timeout_s} s: {remaining}")
        time.sleep(pause)  # SIGKILL is delivered when the process next runs; give it the CPU
        pause = min(pause * 2, 0.05)
