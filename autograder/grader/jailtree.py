"""The tree a student worker is chrooted into where no mount namespace can be made (SECURITY.md: layers).

A default Docker container (Gradescope's) has ``CAP_SYS_CHROOT`` but not ``CAP_SYS_ADMIN``: a worker cannot
get a file system built for it at fork time (``mounts.py``'s empty root needs mounts), but it can be
chrooted into a tree prepared in advance. setup.sh builds that tree once, when the image is built
(``python -m grader --build-jail``); a grading checks it is still the tree for this Python and uses it.

What the tree holds, each at its own absolute path (a forked worker keeps the paths its parent imported
from, so a module torch imports lazily must be found where it was outside):

* the import folders of the Python installation that runs the grader (the entries of ``sys.path`` under
  ``sys.prefix`` / ``sys.base_prefix``: the standard library, lib-dynload, the venv's site-packages), and
  nothing of the grader, the reference or the hidden inputs;
* the shared libraries those folders' extension modules and the interpreter load, found with ``ldd`` (the
  dynamic loader's own answer), and the symbolic links on the way to each (merged /usr: /lib -> usr/lib);
* the world-readable files of /etc (hosts, nsswitch.conf, passwd: what gloo's name lookups read);
* /dev/null, zero, full, random and urandom, where ``mknod`` is allowed (Docker allows it);
* ``minddp/`` (mode 0711): one folder per grading, made by the grader (``isolation.py``): the code and the
  harness it grades with;
* ``tmp``: made afresh by the grader for each set of workers, their uid's alone (0700), and ``var/tmp`` and
  ``dev/shm`` symlinks to it: the one place they can write, at the paths it has on any machine (one grading
  at a time uses a tree: ``Isolation`` holds its lock). Where the Python installation itself is under /tmp
  (a clone there), the folder is ``/scratch`` instead, and the workers' TMPDIR and HOME name it.

Only what every user could read anyway goes in: regular files of root's that are world-readable and writable
by no one else, hard-linked, never copied (the tree must be on the Python installation's file system;
overlayfs copies a file up the first time it is linked); folders root's, 0755; symbolic links as they are. No /proc (it cannot be mounted without
``CAP_SYS_ADMIN``: a worker sees no process at all), no /sys, /home, /run, nothing else of /var.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
import stat
import subprocess
import sys
import time
from collections.abc import Iterator

from grader.mounts import links_on_the_way
from grader.uids import remove_tree

MANIFEST = ".minddp-jail.json"
AREA = "minddp"  # the folder of the gradings' own folders, inside the tree
SCRATCH = "tmp"  # the workers' writable folder, inside the tree (made by the grader for each set of workers)
DEVICES = ("null", "zero", "full", "random", "urandom")
_LDD_BATCH = 100  # files per ldd call


class TreeError(RuntimeError):
    """The tree could not be built or is not the one this grading needs (the message says what)."""


# -- what goes in --------------------------------------------------------------------------------------------

def python_import_dirs() -> list[str]:
    """The import folders of this Python installation: sys.path entries under its prefixes (never the
    folders the grader itself added, such as its source or PYTHONPATH), real paths, existing."""
    prefixes = {os.path.realpath(p) for p in (sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix)}
    found = []
    for entry in sys.path:
        if not entry or not os.path.isabs(entry) or not os.path.exists(entry):
            continue
        real = os.path.realpath(entry)
        if any(real == p or real.startswith(p + os.sep) for p in prefixes) and entry not in found:
            found.append(entry)
    return found


def fingerprint() -> dict:
    """What a tree is built for: a grading with another Python (or other import folders) needs another."""
    return {"python": sys.version, "executable": os.path.realpath(sys.executable), "dirs": python_import_dirs()}


def _shared_objects(folders: list[str]) -> Iterator[str]:
    for folder in folders:
        for root, _dirs, files in os.walk(folder):
            for name in files:
                if name.endswith(".so") or ".so." in name:
                    yield os.path.join(root, name)


def shared_libraries(objects: list[str]) -> list[str]:
    """Every library the dynamic loader maps for ``objects`` (ldd), the loader itself included."""
    ldd = shutil.which("ldd", path="/usr/bin:/bin:/usr/sbin:/sbin")
    if ldd is None:
        raise TreeError("ldd is not installed (Debian/Ubuntu: libc-bin), so the shared libraries cannot be found")
    found: list[str] = []
    for start in range(0, len(objects), _LDD_BATCH):
        done = subprocess.run([ldd, *objects[start:start + _LDD_BATCH]], capture_output=True, text=True,
                              stdin=subprocess.DEVNULL, timeout=300)
        for line in done.stdout.splitlines():
            match = re.search(r"=> (/\S+) \(0x", line) or re.match(r"\s+(/\S+) \(0x", line)
            if match and match.group(1) not in found:
                found.append(match.group(1))
    return found


# -- building ------------------------------------------------------------------------------------------------

class _Builder:
    def __init__(self, tree: str):
        self.tree = tree
        self.linked = self.skipped = 0

    def inside(self, path: str) -> str:
        return os.path.join(self.tree, path.lstrip("/"))

    def folder(self, path: str) -> None:
        """``path`` (a host path) as a folder of the tree, with its parents: root's, 0755."""
        target = self.inside(path)
        missing = []
        while not os.path.lexists(target) and target != self.tree:
            missing.append(target)
            target = os.path.dirname(target)
        for directory in reversed(missing):
            os.mkdir(directory, 0o755)
            os.chmod(directory, 0o755)

    def symlink(self, where: str, text: str) -> None:
        target = self.inside(where)
        if os.path.islink(target):
            return
        if os.path.lexists(target):
            raise TreeError(f"{where} is a symbolic link on this machine, but something else in the tree "
                            f"{self.tree} (remove the tree: the next grading builds it again)")
        self.folder(os.path.dirname(where))
        os.symlink(text, target)

    def file(self, path: str, st: os.stat_result) -> None:
        if not stat.S_ISREG(st.st_mode) or st.st_uid != 0 or not st.st_mode & stat.S_IROTH or st.st_mode & 0o022:
            self.skipped += 1  # root's files that everyone may read and no one else write, or nothing:
            return  # a hard link is the file itself, so one writable by others would join the gradings
        target = self.inside(path)
        if os.path.lexists(target):
            return
        self.folder(os.path.dirname(path))
        try:
            os.link(path, target, follow_symlinks=False)
        except OSError as error:  # never a copy: a Python installation is a GB (a CI run once filled its disk so)
            raise TreeError(f"cannot link {path} into the jail tree {self.tree} ({error.strerror}): the tree must be "
                            "on the same file system as the Python installation (setup.sh builds it so)") from None
        self.linked += 1

    def path(self, path: str) -> None:
        """A file or folder of this machine at the same path in the tree, and the symlinks on the way. One that
        already is in the tree (setup.sh installs the venv there, behind a symlink) stays as it is."""
        real = os.path.realpath(path)
        if real.startswith(self.tree + os.sep):
            return
        for where, text in links_on_the_way(path):
            self.symlink(where, text)
        st = os.lstat(real)
        if not stat.S_ISDIR(st.st_mode):
            self.file(real, st)
            return
        for root, dirs, files in os.walk(real):
            self.folder(root)
            for name in dirs + files:
                full = os.path.join(root, name)
                entry = os.lstat(full)
                if stat.S_ISLNK(entry.st_mode):
                    self.symlink(full, os.readlink(full))
                elif not stat.S_ISDIR(entry.st_mode):
                    self.file(full, entry)
            dirs[:] = [d for d in dirs if not os.path.islink(os.path.join(root, d))]

    def devices(self) -> str:
        self.folder("/dev")
        made = []
        for name in DEVICES:
            if os.path.lexists(self.inside(f"/dev/{name}")):
                made.append(name)
                continue
            try:
                os.mknod(self.inside(f"/dev/{name}"), 0o666 | stat.S_IFCHR, os.stat(f"/dev/{name}").st_rdev)
                os.chmod(self.inside(f"/dev/{name}"), 0o666)
                made.append(name)
            except OSError as error:
                return f"none (mknod: {error.strerror})"
        return ", ".join(made)


def build(tree: str) -> dict:
    """Build the tree at ``tree`` and return its manifest. What is there already stays (the venv setup.sh made
    in it; what an earlier build linked), except the gradings' folders."""
    began = time.monotonic()
    tree = os.path.realpath(tree)
    dirs = python_import_dirs()
    # The workers' folder is the tree's /tmp, as on any machine, unless the Python installation lives under
    # /tmp (a clone in /tmp, a staff member's `make grade`): then /scratch, and TMPDIR says so.
    scratch = "/scratch" if any(_under(d, "/tmp") for d in dirs) else "/" + SCRATCH
    os.makedirs(tree, mode=0o755, exist_ok=True)
    os.chmod(tree, 0o755)
    remove_tree(os.path.join(tree, AREA))
    builder = _Builder(tree)
    for folder in dirs:
        builder.path(folder)
    objects = [os.path.realpath(sys.executable), *_shared_objects([os.path.realpath(d) for d in dirs])]
    libraries = shared_libraries(objects)
    for library in libraries:
        builder.path(library)
    for root, _dirs, files in os.walk("/etc"):
        for name in files:
            full = os.path.join(root, name)
            entry = os.lstat(full)
            if stat.S_ISLNK(entry.st_mode):
                builder.symlink(full, os.readlink(full))
            else:
                builder.file(full, entry)
    devices = builder.devices()
    os.mkdir(os.path.join(tree, AREA), 0o711)  # traversable, not listable: each grading's folder is its own
    os.chmod(os.path.join(tree, AREA), 0o711)
    if scratch == "/" + SCRATCH:
        remove_tree(os.path.join(tree, SCRATCH))
        for link in ("/var/tmp", "/dev/shm"):  # (no mount can make them folders of their own)
            if not any(_under(d, link) for d in dirs):
                builder.symlink(link, os.path.relpath(scratch, os.path.dirname(link)))
    manifest = {**fingerprint(), "scratch": scratch, "libraries": len(libraries), "linked": builder.linked,
                "left_out": builder.skipped,
                "devices": devices, "seconds": round(time.monotonic() - began, 1)}
    with open(os.path.join(tree, MANIFEST), "w", encoding="utf-8") as f:
        json.dump(manifest, f, indent=1)
    os.chmod(os.path.join(tree, MANIFEST), 0o644)
    return manifest


def _under(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder + "/")


def problem(tree: str) -> str | None:
    """Why ``tree`` cannot be used by this grading (None: it can): it must be root's, 0755, writable by no
    one else at its top, and built for this Python."""
    try:
        st = os.lstat(tree)
    except FileNotFoundError:
        return f"there is no jail tree at {tree}"
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != 0 or stat.S_IMODE(st.st_mode) != 0o755:
        return f"{tree} is not a folder of root's with mode 0755"
    for name in os.listdir(tree):
        if name in (SCRATCH, "scratch") and os.lstat(os.path.join(tree, name)).st_uid != 0:
            continue  # the workers' folder (the grader makes it afresh for each set of them)
        entry = os.lstat(os.path.join(tree, name))
        if entry.st_uid != 0 or (not stat.S_ISLNK(entry.st_mode) and entry.st_mode & 0o022):
            return f"{tree}/{name} is not root's alone (owner {entry.st_uid}, mode {stat.filemode(entry.st_mode)})"
    try:
        with open(os.path.join(tree, MANIFEST), encoding="utf-8") as f:
            manifest = json.load(f)
    except (OSError, ValueError):
        return f"{tree} has no readable {MANIFEST}"
    if {k: manifest.get(k) for k in fingerprint()} != fingerprint():
        return f"{tree} was built for another Python or other import folders"
    return None


def lock(tree: str):
    """The tree's lock, held (exclusively) by whoever builds the tree or grades in it: one at a time."""
    handle = open(tree.rstrip("/") + ".lock", "w")
    fcntl.flock(handle, fcntl.LOCK_EX)
    return handle


def ready(tree: str) -> tuple[bool, dict]:
    """Make sure ``tree`` can be used, building it if needed; the caller holds ``lock(tree)``.
    Returns (whether it was built now, its manifest)."""
    built = problem(tree) is not None
    if built:
        build(tree)
    with open(os.path.join(tree, MANIFEST), encoding="utf-8") as f:
        return built, json.load(f)


def describe(manifest: dict) -> str:
    return (f"{len(manifest['dirs'])} import folders, {manifest['libraries']} shared libraries and /etc "
            f"({manifest['linked']} files linked), devices: {manifest['devices']}")
