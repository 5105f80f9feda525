"""The jail's file-system view, built in the worker's own mount namespace (``Jail.root`` "empty" or "host"):
the new root or the read-only host tree, /proc, /dev, the scratch tmpfs, the readable directories (with
mirrors over directories the uid cannot traverse, and the symlinks on the way), the binds, and the check
that exactly the wanted mounts are writable.

Separate because it is the largest layer and changes with what a worker must see, independently of the
uid, seccomp or probing code. Used from outside through three names only: ``_enter_namespaces``
(``sandbox.enter``), ``_try_namespaces`` (layers.py's probe, which must change with the empty root) and
``links_on_the_way`` (jailtree.py, for the chroot tree). ``root="chroot"`` and ``root="none"`` need no
mounts: see sandbox.py.

What the jail's file system is, for the two roots built here (layer 2 of sandbox.py's docstring):

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
"""

from __future__ import annotations

import ctypes
import errno
import os
import re
import stat
import struct
from dataclasses import dataclass

from grader.jailspec import Jail, _step
from grader.syscalls import (
    AT_FDCWD,
    AT_RECURSIVE,
    CLONE_NEWIPC,
    CLONE_NEWNET,
    CLONE_NEWNS,
    MNT_DETACH,
    MOUNT_ATTR_RDONLY,
    MS_BIND,
    MS_NODEV,
    MS_NOEXEC,
    MS_NOSUID,
    MS_PRIVATE,
    MS_RDONLY,
    MS_REC,
    MS_REMOUNT,
    SYS_MOUNT_SETATTR,
    _mount,
    _pivot_root,
    _syscall,
    _umount2,
    _unshare,
)

_KEPT_MOUNT_FLAGS = {"nosuid": MS_NOSUID, "nodev": MS_NODEV, "noexec": MS_NOEXEC}  # a remount must repeat them
_SCRATCH = ("/tmp", "/var/tmp", "/dev/shm")
_MIRROR_OPTIONS = "size=1m,nr_inodes=4096,mode=0755"
# Pseudo file systems whose refusal to become read-only is tolerated (see the module docstring).
_PSEUDO_FS = frozenset({"proc", "sysfs", "cgroup", "cgroup2", "securityfs", "debugfs", "tracefs", "bpf",
                        "configfs", "fusectl", "pstore", "efivarfs", "binfmt_misc", "selinuxfs"})
_USE_MOUNT_SETATTR = True  # the tests turn it off to exercise the per-mount remount of older kernels
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
# The mount and IPC namespaces: enter's entry into this module


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
# What layers.py tries in a throw-away child: the three namespaces and the steps of the empty root, in small


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
