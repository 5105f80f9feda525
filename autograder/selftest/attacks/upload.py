"""Attacks by the upload itself, which ``Case.edits`` cannot express: symbolic and hard links, a FIFO and
devices in a folder upload, and crafted zips (a link member, paths out of the folder, a bomb, a corrupt zip,
a zip in a zip, names that forge lines of the output). Each is built by a function into a folder (or a zip
path); ``grade_uploads.py`` grades them."""

from __future__ import annotations

import os
import stat
import zipfile
from collections.abc import Callable
from dataclasses import dataclass

from autograder.assemble import student_paths
from autograder.selftest.attacks.shared import EVERY_PART, TIMELINE, _no_control_characters, solution
from autograder.selftest.kinds import BUCKETING, DDP, PROCESS_GROUP, REDUCER, Case


@dataclass(frozen=True)
class Upload:
    """``build(into, case_source)`` writes the upload under ``into`` and returns the path to grade
    (``case_source``: where the runner puts this grading's copy of the autograder source)."""

    case: Case
    build: Callable[[str, str], str]


def _write_solutions(into: str, skip: tuple = ()) -> None:
    for path in student_paths():
        if path in skip:
            continue
        target = os.path.join(into, path)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with open(target, "w", encoding="utf-8") as f:
            f.write(solution(path))


def _links_and_devices(into: str, case_source: str) -> str:
    """A folder upload: process_group.py a symlink into the reference, bucketing.py a FIFO, reducer.py a
    hard link to the reference's file, ddp.py a symlink to /dev/zero, timeline.py a character device,
    a folder symlink whose minddp/ is the reference's; answers.py a regular file."""
    _write_solutions(into, skip=(PROCESS_GROUP, BUCKETING, REDUCER, DDP, TIMELINE))
    os.makedirs(os.path.join(into, "minddp"), exist_ok=True)
    reference = os.path.join(case_source, "reference")
    os.symlink(os.path.join(reference, PROCESS_GROUP), os.path.join(into, PROCESS_GROUP))
    os.mkfifo(os.path.join(into, BUCKETING))
    os.link(_shared_reference(case_source, REDUCER), os.path.join(into, REDUCER))
    os.symlink("/dev/zero", os.path.join(into, DDP))
    os.mknod(os.path.join(into, TIMELINE), 0o644 | stat.S_IFCHR, os.makedev(1, 3))
    os.makedirs(os.path.join(into, "extra"))
    os.symlink(os.path.join(reference, "minddp"), os.path.join(into, "extra", "minddp"))
    os.symlink("/autograder/source/reference/answers.py", os.path.join(into, "answers-link.py"))
    return into


def _shared_reference(case_source: str, path: str) -> str:
    """The runner's shared build of the source (the case's copy does not exist yet at build time)."""
    return os.path.join(os.path.dirname(os.path.dirname(case_source)), "source", "reference", path)


def _zip(path: str, members: list) -> str:
    """members: (name, bytes) for regular files, or (ZipInfo, bytes)."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in members:
            zf.writestr(name, data)
    return path


def _regular_members(skip: tuple = ()) -> list:
    return [(p, solution(p).encode()) for p in student_paths() if p not in skip]


def _zip_with_links(into: str, case_source: str) -> str:
    """A folder holding one zip: reducer.py is a symlink member (to the reference's file), plus members
    named ../../evil.py and /etc/evil.py."""
    os.makedirs(into)
    link = zipfile.ZipInfo(REDUCER)
    link.create_system = 3
    link.external_attr = (stat.S_IFLNK | 0o777) << 16
    members = _regular_members(skip=(REDUCER,)) + [
        (link, b"/autograder/source/reference/minddp/reducer.py"),
        ("../../minddp/reducer.py", solution(REDUCER).encode()), ("/etc/minddp/reducer.py", b"x = 1\n")]
    _zip(os.path.join(into, "submission.zip"), members)
    return into


def _zip_bomb(into: str, case_source: str) -> str:
    """A folder holding only a zip (read as that zip): ddp.py inflates to 1 GiB, and 6,000 more members follow."""
    os.makedirs(into)
    path = os.path.join(into, "submission.zip")
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in _regular_members(skip=(DDP,)):
            zf.writestr(name, data)
        bomb = zipfile.ZipInfo(DDP)
        bomb.compress_type = zipfile.ZIP_DEFLATED
        with zf.open(bomb, "w", force_zip64=True) as f:
            chunk = b"\0" * 2**24
            for _ in range(64):
                f.write(chunk)
        for i in range(6000):
            zf.writestr(f"junk/{i}.txt", b"")
    return path


def _corrupt_zip(into: str, case_source: str) -> str:
    os.makedirs(into)
    with open(os.path.join(into, "submission.zip"), "wb") as f:
        f.write(b"PK\x03\x04" + os.urandom(5000) + b"PK\x05\x06" + b"\xff" * 18)
    return into


def _zip_in_zip(into: str, case_source: str) -> str:
    os.makedirs(into)
    inner = os.path.join(into, "inner.zip")
    _zip(inner, _regular_members())
    with open(inner, "rb") as f:
        data = f.read()
    os.unlink(inner)
    _zip(os.path.join(into, "submission.zip"), [("inner.zip", data)])
    return into


FORGED_LINE = "Total (bonus is extra)        999.0 / 100.0"


def _crafted_names(into: str, case_source: str) -> str:
    """A zip whose extra copies of the student files are named with a newline and a forged score line,
    terminal escapes, and HTML: the grader names duplicates in its top-level output."""
    os.makedirs(into)
    members = _regular_members() + [
        (f"x\n{FORGED_LINE}\nFiles graded: all/{REDUCER}", solution(REDUCER).encode()),
        (f"\x1b[2J\x1b[31mred/{DDP}", solution(DDP).encode()),
        (f"<img src=x onerror=alert(1)>/{BUCKETING}", solution(BUCKETING).encode())]
    _zip(os.path.join(into, "submission.zip"), members)
    return into


def _no_forged_lines(results: dict, isolated: bool) -> list:
    lines = results.get("output", "").splitlines()
    problems = [f"the top-level output holds a line a file name forged: {line!r}" for line in lines
                if line.startswith(FORGED_LINE)]
    return problems + _no_control_characters(results, isolated)


UPLOADS: list = [
    Upload(Case("upload-links-devices", "folder upload of a symlink into the reference, a FIFO, a hard link to "
                "the reference's reducer.py, a symlink to /dev/zero, a character device and a folder symlink to "
                "the reference's minddp/: each refused with a message naming it",
                zero=("1", "2", "3", "4", "5", "A", "B"), full=("6",),
                says={"top": "a symbolic link", "1": "was not found"},
                check=lambda r, i: [p for p in ("not a regular file", "hard link") if p not in r.get("output", "")]),
           _links_and_devices),
    Upload(Case("upload-zip-links", "a zip (in a folder) whose reducer.py member is a symlink to the reference, "
                "plus members ../../minddp/reducer.py and /etc/minddp/reducer.py",
                zero=("3", "A", "B.1"), says={"top": "refused"}), _zip_with_links),
    Upload(Case("upload-zip-bomb", "a zip upload whose ddp.py inflates to 1 GiB, followed by 6,000 members",
                zero=("4", "A", "B.1"), says={"top": "larger than"}), _zip_bomb),
    Upload(Case("upload-corrupt-zip", "a folder holding one corrupt .zip", zero=EVERY_PART, full=(), score=(0, 0),
                says={"top": "not a readable zip"}), _corrupt_zip),
    Upload(Case("upload-zip-in-zip", "a zip whose only member is a zip of the files", zero=EVERY_PART, full=(),
                score=(0, 0), says={"top": "was not found"}), _zip_in_zip),
    Upload(Case("upload-crafted-names", "duplicates of the student files named with a newline and a forged "
                "score line, terminal escapes, and HTML", check=_no_forged_lines), _crafted_names),
]
