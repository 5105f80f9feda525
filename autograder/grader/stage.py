"""Staging: read an upload safely, find the files students edit in it, and lay them onto the release.

An upload is what Gradescope puts in /autograder/submission (or what `make grade SUBMISSION=` is given):
a folder of files, a .zip, or a folder holding one .zip (a student who zipped the zip). Only REGULAR files
are read: a symbolic link, FIFO, device or hard link is refused with a message naming it (root reads the
upload, and must never be tricked into reading something else), and sizes and counts are bounded.
Files are found by ONE rule (``locate``, also used by `make diff SUBMISSION=`): the path as `make submit`
writes it, at any depth; else the file name alone; the shortest match wins.
"""

from __future__ import annotations

import io
import os
import shutil
import stat
import zipfile
from dataclasses import dataclass, field

MAX_FILE_BYTES = 2_000_000  # a student file larger than this is not source code
MAX_TOTAL_BYTES = 50_000_000
MAX_ENTRIES = 5_000
SKIPPED_DIRS = ("__pycache__", "__MACOSX")


@dataclass
class Upload:
    files: dict[str, bytes] = field(default_factory=dict)  # relative "/" path -> content
    problems: list[str] = field(default_factory=list)  # what was refused, and why (shown to the student)


def read_upload(path: str) -> Upload:
    """The regular files of a folder or a .zip (a folder holding only a .zip is read as that zip)."""
    upload = Upload()
    if os.path.isdir(path) and not os.path.islink(path):
        _read_folder(path, upload)
        zips = [name for name in upload.files if name.lower().endswith(".zip")]
        if len(zips) == 1 and not any(name.endswith(".py") for name in upload.files):
            inner = Upload(problems=upload.problems)
            _read_zip(zips[0], upload.files[zips[0]], inner)
            return inner
    else:
        data = _read_regular(path, MAX_TOTAL_BYTES, upload, os.path.basename(path))
        if data is not None:
            _read_zip(os.path.basename(path), data, upload)
    return upload


def shown(name: str) -> str:
    """A file name as the output shows it: printable characters only, quoted when it holds anything else, so
    that a crafted name (a newline, a terminal escape) cannot pose as a line of the grader's output."""
    return name if name.isprintable() else repr(name)


def _read_folder(root: str, upload: Upload) -> None:
    total, count = 0, 0
    for folder, dirs, names in os.walk(root):  # never follows symbolic links to folders
        keep = []
        for d in sorted(dirs):
            rel = os.path.relpath(os.path.join(folder, d), root).replace(os.sep, "/")
            if os.path.islink(os.path.join(folder, d)):
                upload.problems.append(f"{shown(rel)}: refused (a symbolic link; upload regular files only)")
            elif d not in SKIPPED_DIRS and not d.startswith("."):
                keep.append(d)
        dirs[:] = keep
        for name in sorted(names):
            count += 1
            if count > MAX_ENTRIES:
                upload.problems.append(f"more than {MAX_ENTRIES} files uploaded: the rest were not read")
                return
            rel = os.path.relpath(os.path.join(folder, name), root).replace(os.sep, "/")
            data = _read_regular(os.path.join(folder, name), MAX_FILE_BYTES, upload, rel)
            if data is not None:
                total += len(data)
                if total > MAX_TOTAL_BYTES:
                    upload.problems.append(f"the upload is larger than {MAX_TOTAL_BYTES:,} bytes: the rest was not read")
                    return
                upload.files[rel] = data


def _read_regular(path: str, limit: int, upload: Upload, rel: str) -> bytes | None:
    """The bytes of ``path`` if it is a regular file with one link and at most ``limit`` bytes."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as error:
        what = "a symbolic link" if os.path.islink(path) else f"cannot be read ({error.strerror})"
        upload.problems.append(f"{shown(rel)}: refused ({what}; upload regular files only)")
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            upload.problems.append(f"{shown(rel)}: refused (not a regular file; upload regular files only)")
            return None
        if info.st_nlink > 1:
            upload.problems.append(f"{shown(rel)}: refused (a hard link to another file; upload regular files only)")
            return None
        with os.fdopen(os.dup(fd), "rb") as f:
            data = f.read(limit + 1)
    finally:
        os.close(fd)
    if len(data) > limit:
        upload.problems.append(f"{shown(rel)}: refused (larger than {limit:,} bytes)")
        return None
    return data


def _read_zip(name: str, data: bytes, upload: Upload) -> None:
    """The regular members of a zip, with the limits above; a broken zip is a problem, never a crash."""
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
        members = archive.infolist()
    except (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError, OSError) as error:
        upload.problems.append(f"{shown(name)}: not a readable zip file ({error}); build it with `make submit`")
        return
    total = 0
    for info in members[:MAX_ENTRIES]:
        member = info.filename
        mode = info.external_attr >> 16
        if info.is_dir():
            continue
        if stat.S_IFMT(mode) not in (0, stat.S_IFREG):  # a link, a device...; 0: the zip did not say (regular)
            upload.problems.append(f"{shown(name)}: {shown(member)}: refused (not a regular file; upload regular files only)")
            continue
        parts = member.replace("\\", "/").split("/")
        if member.startswith("/") or ".." in parts or any(p in SKIPPED_DIRS or p.startswith(".") for p in parts[:-1]):
            continue  # outside the upload, or a folder nobody submits
        try:
            with archive.open(info) as f:
                content = f.read(MAX_FILE_BYTES + 1)  # the header's size is not trusted
        except (zipfile.BadZipFile, OSError, ValueError, NotImplementedError, EOFError) as error:
            upload.problems.append(f"{shown(name)}: {shown(member)}: cannot be extracted ({error})")
            continue
        if len(content) > MAX_FILE_BYTES:
            upload.problems.append(f"{shown(name)}: {shown(member)}: refused (larger than {MAX_FILE_BYTES:,} bytes)")
            continue
        total += len(content)
        if total > MAX_TOTAL_BYTES:
            upload.problems.append(f"{shown(name)}: larger than {MAX_TOTAL_BYTES:,} bytes uncompressed: the rest was not read")
            return
        upload.files["/".join(parts)] = content
    if len(members) > MAX_ENTRIES:
        upload.problems.append(f"{shown(name)}: more than {MAX_ENTRIES} members: the rest were not read")


def locate(names: list[str], wanted: str) -> list[str]:
    """Every name where ``wanted`` ("minddp/reducer.py") sits: at that path below any folder, else by its
    file name alone; shortest first (the first is the one graded)."""
    exact = [n for n in names if n == wanted or n.endswith("/" + wanted)]
    base = os.path.basename(wanted)
    return sorted(exact or [n for n in names if os.path.basename(n) == base], key=lambda n: (len(n), n))


@dataclass
class Staged:
    student_dir: str  # the release's code + the student's files
    found: dict[str, str] = field(default_factory=dict)  # path -> where it was found in the upload
    missing: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)  # refused files, duplicates


def stage(upload: Upload, skeleton: str, paths: list[str], into: str) -> Staged:
    """A copy of ``skeleton`` (the release) with each student file of ``paths`` taken from the upload."""
    student_dir = os.path.join(into, "student")
    shutil.copytree(skeleton, student_dir, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    staged = Staged(student_dir, problems=list(upload.problems))
    for path in paths:
        hits = locate(list(upload.files), path)
        if not hits:
            staged.missing.append(path)
            continue
        if len(hits) > 1:
            staged.problems.append(f"{path}: found {len(hits)} copies ({', '.join(shown(h) for h in hits)}); graded "
                                   f"{shown(hits[0])}")
        with open(os.path.join(student_dir, path), "wb") as f:
            f.write(upload.files[hits[0]])
        staged.found[path] = shown(hits[0])
    return staged
