"""Fixtures for the tools' tests: a miniature repository, and helpers to run the CLIs."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap

import pytest

from tools.release import Layout

TOOLS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REPO = os.path.dirname(TOOLS)
ASSIGN = os.path.join(TOOLS, "assign.py")

PART_PY = '''\
"""A student module."""

from __future__ import annotations


def double(x: int) -> int:
    """Twice x."""
    # BEGIN SOLUTION
    return 2 * x
    # END SOLUTION


class Counter:
    def __init__(self) -> None:
        self.count = 0

    def bump(self, by: int) -> int:
        """Add ``by``; return the new count."""
        if by < 0:
            raise ValueError("by must be >= 0")
        # BEGIN SOLUTION  hint: one addition, then return
        self.count += by
        # END SOLUTION
        return self.count
'''

TEST_PART_PY = '''\
from minddp.part import Counter, double


def test_double():
    assert double(2) == 4


def test_bump():
    assert Counter().bump(3) == 3
'''


def write(path: str, text: str) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write(textwrap.dedent(text) if text.startswith("\n") else text)


@pytest.fixture
def mini(tmp_path) -> Layout:
    """solutions/ with one student module (minddp/part.py, Part 2, §2.1), one provided module and tests."""
    root = tmp_path / "repo"
    solutions = root / "solutions"
    write(str(solutions / "minddp" / "__init__.py"), '"""The package."""\n')
    write(str(solutions / "minddp" / "part.py"), PART_PY)
    write(str(solutions / "minddp" / "helper.py"), "def provided():\n    return 1\n")
    write(str(solutions / "tests" / "test_part.py"), TEST_PART_PY)
    write(str(solutions / "pytest.ini"), "[pytest]\ntestpaths = tests\npythonpath = . tests\n")
    write(str(solutions / "bench.py"), "# staff only\n")
    config = {"files": [{"path": "minddp/part.py", "part": 2, "name": "The part", "section": "2.1",
                         "tests": ["tests/test_part.py"]}]}
    write(str(solutions / "student_files.json"), json.dumps(config))
    write(str(root / "requirements.txt"), "torch==2.13.0\npytest==9.2.0\n")
    shutil.copytree(os.path.join(TOOLS, "student"), str(root / "tools" / "student"))
    return Layout.of_repo(str(root))


def run_assign(*args: str, repo: str = REPO) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, ASSIGN, "--repo", repo, *args], capture_output=True, text=True,
                          timeout=120)


def copy_release(destination: str) -> str:
    """A fresh copy of the real release (what students unpack), without touching assignment/."""
    from tools.release import build_release, write_release
    write_release(build_release(Layout.of_repo(REPO)).files, destination)
    return destination


@pytest.fixture
def real_release(tmp_path) -> str:
    return copy_release(str(tmp_path / "assignment"))


def make(folder: str, *args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    """The student's make, with this venv (VENV= means: use it, install nothing)."""
    env = {**os.environ, "PYTHONPATH": os.path.join(TOOLS, "plugins")}
    return subprocess.run(["make", "--no-print-directory", "-C", folder, *args, f"VENV={sys.prefix}"],
                          capture_output=True, text=True, env=env, timeout=timeout)


def replace_stubs_with_solutions(folder: str) -> None:
    from tools.student.course import load_student_files
    for entry in load_student_files(os.path.join(REPO, "solutions", "student_files.json")):
        shutil.copyfile(os.path.join(REPO, "solutions", entry.path), os.path.join(folder, entry.path))
