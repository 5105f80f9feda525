"""The front doors as their users walk them: a student's `make install` (a fresh venv, torch's CPU build),
`make test` and `make submit`; then the staff's `make grade SUBMISSION=...` on that zip
(autograder/grade.py: run_autograder in a folder laid out like Gradescope's /autograder), in every
form Gradescope accepts: the zip itself (extracted as Gradescope does), a folder holding that one zip (a
student who zipped the zip), and the plain folder. Each must score what the work earns: full marks.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import zipfile

import pytest

from autograder.grade import expected_score
from tools import REPO
from tools.student.course import RELEASE_STAMP, load_student_files

FULL = expected_score("full")  # every point the checks give


def student_make(folder, *args: str, timeout: int = 300) -> subprocess.CompletedProcess:
    done = subprocess.run(["make", "--no-print-directory", "-C", str(folder), *args], capture_output=True,
                          text=True, timeout=timeout)
    assert done.returncode == 0, f"make {' '.join(args)}:\n{done.stdout[-4000:]}\n{done.stderr[-4000:]}"
    return done


@pytest.fixture(scope="module")
def student(tmp_path_factory):
    """A student's copy of the release, after their own `make install` (a fresh .venv in it) and with the
    solutions' files in place of the stubs: (folder, what `make install` printed)."""
    folder = tmp_path_factory.mktemp("student") / "assignment"
    shutil.copytree(os.path.join(REPO, "assignment"), folder, ignore=shutil.ignore_patterns("__pycache__", ".venv"))
    installed = student_make(folder, "install", timeout=1800)
    for entry in load_student_files(os.path.join(REPO, "solutions", "student_files.json")):
        shutil.copyfile(os.path.join(REPO, "solutions", entry.path), folder / entry.path)
    return folder, installed.stdout + installed.stderr


@pytest.fixture(scope="module")
def submitted(student) -> str:
    """submission.zip, written by the students' `make submit`."""
    folder, _ = student
    student_make(folder, "submit")
    return str(folder / "submission.zip")


def test_students_make_install_takes_the_cpu_build_and_says_how_much(student):
    folder, printed = student
    assert "will download" in printed and re.search(r"torch 2\.13\.0\S*\s+[\d,.]+ MB", printed), printed[-3000:]
    python = str(folder / ".venv" / "bin" / "python")
    done = subprocess.run([python, "-c", "import torch; print(torch.__version__, torch.version.cuda)"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    if sys.platform.startswith("linux"):
        assert done.stdout.split()[1] == "None", f"make install took a CUDA build: {done.stdout}"
    # The README's disk figure is a measurement: the venv must round to what it says.
    with open(folder / "README.md", encoding="utf-8") as f:
        stated = float(re.search(r"about ([\d.]+) GB of disk", f.read()).group(1))
    used = sum(os.path.getsize(os.path.join(d, n)) for d, _, names in os.walk(folder / ".venv") for n in names
               if not os.path.islink(os.path.join(d, n))) / 1e9
    assert 0.5 * stated <= used <= 1.5 * stated, f"the README says about {stated} GB; the venv takes {used:.2f} GB"


def test_students_make_test_runs_in_their_venv(student):
    folder, _ = student
    done = student_make(folder, "test", "PART=1")
    assert " passed" in done.stdout and " failed" not in done.stdout, done.stdout[-2000:]


@pytest.fixture(scope="module")
def cache(tmp_path_factory) -> str:
    return str(tmp_path_factory.mktemp("reference") / "cache.json")


def make_grade(submission: str, root: str, cache: str) -> dict:
    """`make grade SUBMISSION=...` (the same grade.py command), keeping the folder to read results.json."""
    env = {**os.environ, "MINDDP_REFERENCE_CACHE": cache}
    done = subprocess.run([sys.executable, "-m", "autograder.grade", "--submission", submission, "--keep", root],
                          cwd=REPO, capture_output=True, text=True, env=env, timeout=1200)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    with open(os.path.join(root, "results", "results.json"), encoding="utf-8") as f:
        return json.load(f)


def failures(results: dict) -> list[str]:
    return [f"{t['number']}: {t['output'][:200]}" for t in results["tests"] if t["status"] != "passed"]


def test_the_zip_make_submit_builds(submitted, cache, tmp_path):
    with zipfile.ZipFile(submitted) as zf:
        assert sorted(zf.namelist()) == sorted([e.path for e in load_student_files(
            os.path.join(REPO, "solutions", "student_files.json"))] + [RELEASE_STAMP])  # which release they come from
    results = make_grade(submitted, str(tmp_path / "ag"), cache)
    assert results["score"] == FULL, failures(results)
    assert "Release:" not in results["output"] and results["extra_data"]["release"]["changed"] == []  # current


def test_a_folder_holding_the_zip(submitted, cache, tmp_path):
    upload = tmp_path / "upload"
    upload.mkdir()
    shutil.copyfile(submitted, upload / "my-homework.zip")
    results = make_grade(str(upload), str(tmp_path / "ag"), cache)
    assert results["score"] == FULL, failures(results)


def test_the_plain_folder(submitted, cache, tmp_path):
    upload = tmp_path / "upload"
    with zipfile.ZipFile(submitted) as zf:
        zf.extractall(upload)
    results = make_grade(str(upload), str(tmp_path / "ag"), cache)
    assert results["score"] == FULL, failures(results)


def test_a_submission_from_an_older_release_is_named_as_such(submitted, cache, tmp_path):
    """The release that a student's Part 3 checks changed since: graded as usual, and told so visibly."""
    upload = tmp_path / "upload"
    with zipfile.ZipFile(submitted) as zf:
        zf.extractall(upload)
    stamp = json.loads((upload / "release.json").read_text())
    stamp["version"], stamp["parts"]["3"] = "0" * 12, "1" * 12
    (upload / "release.json").write_text(json.dumps(stamp))
    results = make_grade(str(upload), str(tmp_path / "ag"), cache)
    assert results["score"] == FULL, failures(results)
    release = json.loads((tmp_path / "ag" / "source" / "skeleton" / "release.json").read_text())["release"]
    assert results["output"].startswith(f"Release: your files come from release {release} (000000000000), older"), \
        results["output"]  # named as students and the CHANGELOG name it, with the digest that tells them apart
    assert "Changed since: Part 3." in results["output"]
    assert results["extra_data"]["release"]["changed"] == ["3"]


def test_a_weight_changed_in_solutions_is_what_make_grade_grades(tmp_path):
    """A TA's edit of a check's weight in solutions/checks/, with no `make assignment` after it, is what the
    next `make grade` grades (the autograder is built from solutions/ as it is, not from the generated copy)."""
    scratch = tmp_path / "repo"
    for name in ("solutions", "tools", "autograder", "assignment"):
        shutil.copytree(os.path.join(REPO, name), scratch / name, ignore=shutil.ignore_patterns(
            "__pycache__", ".venv", "hidden-secret"))
    shutil.copyfile(os.path.join(REPO, "requirements.txt"), scratch / "requirements.txt")
    part5 = scratch / "solutions" / "checks" / "part5.py"
    text = part5.read_text()
    declared = re.search(r'Check\("5\.1", [^\n]*?weight=([\d.]+)', text)
    assert declared, "check 5.1's declaration moved: update this test"
    old = float(declared.group(1))
    part5.write_text(text[:declared.start(1)] + f"{old + 1:g}" + text[declared.end(1):])
    root = tmp_path / "ag"
    # Run as the Makefile does (python -m, from the clone's root): the clone's own code, not this checkout's.
    done = subprocess.run([sys.executable, "-m", "autograder.grade", "--keep", str(root)], cwd=scratch,
                          capture_output=True, text=True, timeout=1800)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    with open(root / "results" / "results.json", encoding="utf-8") as f:
        results = json.load(f)
    weights = {t["number"]: t["max_score"] for t in results["tests"]}
    assert weights["5.1"] + weights["5.1h"] == old + 1, weights
    assert results["score"] == FULL + 1, failures(results)
