"""The grading's uid, from start to end: picking one nobody uses (``pick_uid``), becoming it in the worker
(no groups, no capabilities, no_new_privs, not dumpable, its resource limits and OOM score set while still
root), and ending its processes and files afterwards (``kill_uid``, ``reap_orphans``, ``remove_tree``).

Separate because it is the one layer every machine gets (no CAP_SYS_ADMIN needed) and it changes with how
gradings share a machine, not with the mounts or the filter; the grader's parent side (isolation.py,
run.py) uses its cleanup without entering any jail.
"""

from __future__ import annotations

import ctypes
import errno
import grp
import os
import pwd
import random
import resource
import signal
import time

from grader.jailspec import Jail, SandboxError
from grader.syscalls import (
    _LINUX_CAPABILITY_VERSION_3,
    PR_CAP_AMBIENT,
    PR_CAP_AMBIENT_CLEAR_ALL,
    PR_CAPBSET_DROP,
    PR_GET_PDEATHSIG,
    PR_SET_CHILD_SUBREAPER,
    PR_SET_DUMPABLE,
    PR_SET_NO_NEW_PRIVS,
    PR_SET_PDEATHSIG,
    _libc,
    _prctl,
    _raise_errno,
    _status_fields,
)

UID_RANGE = (1_500_000, 1_999_999)  # far above any account or container range in common use
OOM_SCORE_ADJ = 1000  # the highest: the first a jailed process is killed when memory runs out


# ---------------------------------------------------------------------------------------------------------
# Picking a uid


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
# Becoming it (in the worker, while still root)


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
# Ending its processes (kill_uid) and files


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
