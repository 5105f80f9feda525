"""The staff front door as staff use it: a student's `make submit` zip, graded by `make grade SUBMISSION=...`
(autograder/build.py grade: run_autograder in a folder laid out like Gradescope's /autograder), in every
form Gradescope accepts: the zip itself (extracted as Gradescope does), a folder holding that one zip (a
student who zipped the zip), and the plain folder. Each must score what the work earns: 110.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "tools", "student"))

from course import load_student_files  # noqa: E402


@pytest.fixture(scope="module")
def submitted(tmp_path_factory) -> str:
    """submission.zip, written by the students' `make submit` in a release holding the solutions' files."""
    folder = tmp_path_factory.mktemp("student") / "assignment"
    shutil.copytree(os.path.join(REPO, "assignment"), folder, ignore=shutil.ignore_patterns("__pycache__", ".venv"))
    for entry in load_student_files(os.path.join(REPO, "solutions", "student_files.json")):
        shutil.copyfile(os.path.join(REPO, "solutions", entry.path), folder / entry.path)
    done = subprocess.run(["make", "--no-print-directory", "-C", str(folder), "submit", f"VENV={sys.prefix}"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    return str(folder / "submission.zip")


@pytest.fixture(scope="module")
def cache(tmp_path_factory) -> str:
    return str(tmp_path_factory.mktemp("reference") / "cache.json")


def make_grade(submission: str, root: str, cache: str) -> dict:
    """`make grade SUBMISSION=...` (the same build.py command), keeping the folder to read results.json."""
    env = {**os.environ, "MINDDP_REFERENCE_CACHE": cache}
    done = subprocess.run([sys.executable, os.path.join(REPO, "autograder", "build.py"), "grade", "--submission",
                           submission, "--keep", root], capture_output=True, text=True, env=env, timeout=1200)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    with open(os.path.join(root, "results", "results.json"), encoding="utf-8") as f:
        return json.load(f)


def failures(results: dict) -> list[str]:
    return [f"{t['number']}: {t['output'][:200]}" for t in results["tests"] if t["status"] != "passed"]


def test_the_zip_make_submit_builds(submitted, cache, tmp_path):
    with zipfile.ZipFile(submitted) as zf:
        assert sorted(zf.namelist()) == sorted(e.path for e in load_student_files(
            os.path.join(REPO, "solutions", "student_files.json")))
    results = make_grade(submitted, str(tmp_path / "ag"), cache)
    assert results["score"] == 110.0, failures(results)


def test_a_folder_holding_the_zip(submitted, cache, tmp_path):
    upload = tmp_path / "upload"
    upload.mkdir()
    shutil.copyfile(submitted, upload / "my-homework.zip")
    results = make_grade(str(upload), str(tmp_path / "ag"), cache)
    assert results["score"] == 110.0, failures(results)


def test_the_plain_folder(submitted, cache, tmp_path):
    upload = tmp_path / "upload"
    with zipfile.ZipFile(submitted) as zf:
        zf.extractall(upload)
    results = make_grade(str(upload), str(tmp_path / "ag"), cache)
    assert results["score"] == 110.0, failures(results)
