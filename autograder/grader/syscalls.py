"""The raw Linux interface the sandbox's layers share: kernel constants, the system call numbers of each
supported architecture, thin ctypes wrappers (mount, umount2, pivot_root, unshare, prctl, syscall) that
raise OSError like the os module, and the reading of /proc/self/status (kept open across a chroot).

Separate because it changes only with the kernel's ABI (a new architecture, a new constant), never with
the sandbox's policy; every other module of the sandbox builds on it and it imports none of them.
"""

from __future__ import annotations

import ctypes
import errno
import os
import platform
import sys
from dataclasses import dataclass

# ---------------------------------------------------------------------------------------------------------
# Kernel constants (include/uapi/linux/{sched,mount,prctl,capability}.h)

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


# ---------------------------------------------------------------------------------------------------------
# System call numbers of each supported architecture (and what seccomp needs of it)


@dataclass(frozen=True)
class _Arch:
    audit: int  # AUDIT_ARCH_* value in seccomp_data.arch
    seccomp_nr: int
    has_x32: bool  # x86_64's other ABI (syscall numbers with bit 30 set) shares the AUDIT_ARCH value
    numbers: dict  # syscall name -> number


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


def _native_arch() -> _Arch | None:
    # A 32-bit Python on a 64-bit kernel makes i386 system calls: neither supported nor filtered here.
    if sys.maxsize <= 2 ** 32 or sys.byteorder != "little":
        return None
    return _ARCHES.get(platform.machine())


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


# ---------------------------------------------------------------------------------------------------------
# /proc/self/status, also after a chroot


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
