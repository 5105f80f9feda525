"""Stage a submission: a pristine copy of the homework plus exactly the files students may edit.

Students edit a fixed list of files (``student_files.json``, the same list `make submit` packs). Only those
are taken from the submission; everything else comes from the pristine skeleton, so a submission cannot
replace the provided code (the worker pool, the models) or add modules. Files are found wherever they
sit in the upload (``minddp/reducer.py``, ``reducer.py``, ``assignment/minddp/reducer.py``, in a zip or not).
"""

from __future__ import annotations

import json
import os
import py_compile
import shutil
import zipfile
from dataclasses import dataclass, field

MAX_FILE_BYTES = 2_000_000  # a student file larger than this is not source code


@dataclass(frozen=True)
class StudentFile:
    path: str  # relative to the code folder, e.g. "minddp/reducer.py"
    part: int
    name: str
    section: str


@dataclass
class Staged:
    student_dir: str  # pristine skeleton + the student's files
    found: dict[str, str] = field(default_factory=dict)  # path -> where it was found in the upload
    missing: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)  # e.g. a file too large or found twice


def load_student_files(path: str) -> list[StudentFile]:
    with open(path, encoding="utf-8") as f:
        entries = json.load(f)["files"]
    return [StudentFile(e["path"], int(e["part"]), e["name"], str(e["section"])) for e in entries]


def unpack_if_zip(submission: str, into: str) -> str:
    """A folder to read the submission from (a .zip is extracted safely first)."""
    if os.path.isdir(submission):
        return submission
    os.makedirs(into, exist_ok=True)
    with zipfile.ZipFile(submission) as zf:
        for info in zf.infolist():
            target = os.path.realpath(os.path.join(into, info.filename))
            if not target.startswith(os.path.realpath(into) + os.sep) or info.file_size > MAX_FILE_BYTES:
                continue  # no path escapes, no huge members
            zf.extract(info, into)
    return into


def find_in_upload(upload: str, wanted: str) -> list[str]:
    """Every file in ``upload`` whose path ends with ``wanted`` (or with its base name, at any depth)."""
    hits = []
    for root, dirs, files in os.walk(upload):
        dirs[:] = sorted(d for d in dirs if d not in ("__pycache__", "__MACOSX") and not d.startswith("."))
        for name in sorted(files):
            if name == os.path.basename(wanted):
                full = os.path.join(root, name)
                hits.append(os.path.relpath(full, upload))
    exact = [h for h in hits if h.replace(os.sep, "/").endswith(wanted)]
    return exact or hits


def stage(upload: str, skeleton: str, files: list[StudentFile], into: str) -> Staged:
    student_dir = os.path.join(into, "student")
    shutil.copytree(skeleton, student_dir, ignore=shutil.ignore_patterns("__pycache__"))
    staged = Staged(student_dir)
    for entry in files:
        hits = find_in_upload(upload, entry.path)
        if not hits:
            staged.missing.append(entry.path)
            continue
        source = os.path.join(upload, sorted(hits, key=len)[0])
        if len(hits) > 1:
            staged.problems.append(f"{entry.path}: found {len(hits)} copies ({', '.join(hits)}); graded "
                                   f"{os.path.relpath(source, upload)}")
        if os.path.getsize(source) > MAX_FILE_BYTES:
            staged.problems.append(f"{entry.path}: larger than {MAX_FILE_BYTES} bytes, not graded")
            staged.missing.append(entry.path)
            continue
        shutil.copyfile(source, os.path.join(student_dir, entry.path))
        staged.found[entry.path] = os.path.relpath(source, upload)
    return staged


def make_variant(student_dir: str, reference_dir: str, use_reference: set[str], into: str) -> str:
    """A code folder: the staged student code with the files in ``use_reference`` replaced by the reference's.

    The reference files go in as bytecode only (``reducer.pyc`` in place of ``reducer.py``, which Python
    imports as is): student code runs in the same process and could read a source file beside it and
    raise its text into the test output.
    """
    if not use_reference:
        return student_dir
    name = "variant-" + "-".join(sorted(os.path.splitext(os.path.basename(p))[0] for p in use_reference))
    variant = os.path.join(into, name)
    if not os.path.exists(variant):
        shutil.copytree(student_dir, variant, ignore=shutil.ignore_patterns("__pycache__"))
        for path in use_reference:
            target = os.path.join(variant, path)
            if os.path.exists(target):
                os.remove(target)
            py_compile.compile(os.path.join(reference_dir, path), cfile=target + "c", dfile=path, doraise=True)
            os.chmod(target + "c", 0o644)  # the student's workers import it, whatever the umask
    return variant


def from_reference(code_dir: str, path: str) -> bool:
    """Whether ``make_variant`` put the reference's ``path`` in ``code_dir``."""
    return os.path.exists(os.path.join(code_dir, path) + "c") and not os.path.exists(os.path.join(code_dir, path))
