"""The seccomp layer: the policy (the denied system calls, the socket families allowed), the classic BPF
program built from it for the native architecture, and ``install_seccomp`` that loads it on every thread.

Separate because the filter changes on its own (a system call to deny, a new architecture's numbers in
``syscalls._ARCHES``) and is also used on its own: a launcher jailed without seccomp installs it at the
top of the script it starts.
"""

from __future__ import annotations

import ctypes
import errno
import platform
import socket
import struct

from grader.jailspec import SandboxError, _step
from grader.syscalls import (
    CLONE_THREAD,
    PR_SET_DUMPABLE,
    PR_SET_NO_NEW_PRIVS,
    _Arch,
    _native_arch,
    _prctl,
    _status_fields,
    _syscall,
)

# ---------------------------------------------------------------------------------------------------------
# Kernel constants (include/uapi/linux/{seccomp,filter,audit}.h)

SECCOMP_SET_MODE_FILTER = 1
SECCOMP_FILTER_FLAG_TSYNC = 1
SECCOMP_RET_KILL_PROCESS = 0x80000000
SECCOMP_RET_ERRNO = 0x00050000
SECCOMP_RET_ALLOW = 0x7FFF0000
_BPF_LD_W_ABS, _BPF_JEQ_K, _BPF_JGE_K, _BPF_JSET_K, _BPF_RET_K = 0x20, 0x15, 0x35, 0x45, 0x06
_SECCOMP_DATA_NR, _SECCOMP_DATA_ARCH, _SECCOMP_DATA_ARG0_LOW = 0, 4, 16  # struct seccomp_data, little endian
_SECCOMP_DATA_ARG2_LOW = 32
_X32_SYSCALL_BIT = 0x40000000


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
