"""The student's front door, run as a student would: unpacked release, `make test`, `make submit`."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile

import pytest
from conftest import REPO, make, replace_stubs_with_solutions, run_assign

from tools import on_student_side
from tools.validate import _judge_stub, provided_reason

STUDENT_PATHS = ["minddp/process_group.py", "minddp/bucketing.py", "minddp/reducer.py", "minddp/ddp.py",
                 "minddp/timeline.py", "answers.py"]


def test_submit_refuses_a_stub_naming_file_and_function(real_release):
    replace_stubs_with_solutions(real_release)
    reducer = os.path.join(real_release, "minddp", "reducer.py")
    with open(reducer, encoding="utf-8") as f:
        text = f.read()
    with open(reducer, "w", encoding="utf-8") as f:  # one function left unfinished
        f.write(text.replace("        self.all_reduce_bucket(self.buckets[self.next_bucket])\n",
                             '        raise NotImplementedError("Part 3: Reducer.mark_bucket_ready — see handout §3")\n'))
    result = make(real_release, "submit")
    assert result.returncode != 0
    assert "minddp/reducer.py:" in result.stderr and "Reducer.mark_bucket_ready still raises the stub" in result.stderr
    assert "ddp.py" not in result.stderr  # only what is unfinished is named
    assert not os.path.exists(os.path.join(real_release, "submission.zip"))


def test_submit_zips_exactly_the_student_files(real_release):
    replace_stubs_with_solutions(real_release)
    result = make(real_release, "submit")
    assert result.returncode == 0, result.stderr
    with zipfile.ZipFile(os.path.join(real_release, "submission.zip")) as zf:
        assert sorted(zf.namelist()) == sorted([*STUDENT_PATHS, "release.json"])  # which release: the grader reads it
        assert zf.read("release.json") == open(os.path.join(real_release, "release.json"), "rb").read()


def test_submit_force_hands_in_unfinished_work_with_warnings(real_release):
    result = make(real_release, "submit", "FORCE=1")
    assert result.returncode == 0
    assert "warning (FORCE=1): minddp/process_group.py:" in result.stderr
    assert os.path.exists(os.path.join(real_release, "submission.zip"))


def test_unknown_part_lists_the_parts(real_release):
    result = make(real_release, "test", "PART=nope")
    assert result.returncode != 0
    assert "unknown PART='nope'; choose one of: process_group (1), bucketing (2), reducer (3)" in result.stderr


def test_student_zip_make_test_fails_only_by_stubs(tmp_path):
    """The zip students get, unpacked, tested with their `make test PART=bucketing` (one part: `validate`
    runs every test this way)."""
    archive = tmp_path / "student.zip"
    result = run_assign("student-zip", str(archive))
    assert result.returncode == 0, result.stderr
    with zipfile.ZipFile(archive) as zf:
        zf.extractall(tmp_path / "unpacked")
    outcomes = tmp_path / "outcomes.json"
    result = make(str(tmp_path / "unpacked" / "assignment"), "test", "PART=bucketing",
                  f"PYTEST_ARGS=-p no:cacheprovider -p pytest_outcomes --outcomes-json={outcomes}")
    assert result.returncode != 0 and "failed" in result.stdout, result.stdout[-3000:] + result.stderr[-3000:]
    with open(outcomes) as f:
        tests = json.load(f)["tests"]
    with on_student_side():
        from checks.registry import public_checks
    assert len(tests) == sum(1 for check in public_checks() if check.part == "2")
    problems = [p for nodeid, test in tests.items() for p in _judge_stub(nodeid, test, provided_reason(nodeid))]
    assert not problems, "\n".join(problems)


def test_install_takes_torch_from_the_cpu_index_on_linux_only(tmp_path):
    from tools.student import install
    assert install.torch_index("linux", {}) == install.TORCH_CPU_INDEX
    assert install.torch_index("darwin", {}) == ""  # macOS: PyPI's wheel is the CPU build
    assert install.torch_index("linux", {"TORCH_INDEX_URL": ""}) == ""
    assert install.torch_index("darwin", {"TORCH_INDEX_URL": "https://example.org/simple"}) == "https://example.org/simple"
    requirements = tmp_path / "requirements.txt"
    requirements.write_text("# pins\nnumpy==2.2.6\ntorch==2.13.0  # the CPU build\npytest==9.2.0\n")
    # torch first and alone from the index; then everything from pip's index (torch is then satisfied)
    assert install.steps([str(requirements)], "https://cpu") == [["torch==2.13.0", "--index-url", "https://cpu"],
                                                                 ["-r", str(requirements)]]
    assert install.steps([str(requirements)], "") == [["-r", str(requirements)]]
    requirements.write_text("numpy==2.2.6\n")
    with pytest.raises(SystemExit, match="no torch== pin"):
        install.steps([str(requirements)], "https://cpu")


def test_an_index_that_does_not_answer_is_asked_once_and_named(tmp_path):
    import socket

    from tools.student import install
    with socket.socket() as closed:  # a port nobody listens on: refused at once
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    assert "refused" in install.reachable(f"http://127.0.0.1:{port}/whl/cpu").lower()
    import functools
    import http.server
    import threading
    (tmp_path / "torch").mkdir()
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(tmp_path))
    with http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler) as server:  # an index that answers
        threading.Thread(target=server.serve_forever, daemon=True).start()
        try:
            assert install.reachable(f"http://127.0.0.1:{server.server_address[1]}") is None
        finally:
            server.shutdown()


def test_part_3_runs_its_own_tests_and_the_bonus_has_its_own_part_names(real_release):
    """`make test PART=3` is Part 3's checks only (its README says they need no Part 4); the bonus checks, which
    need Parts 3 and 4, are PART=A, PART=B or PART=bonus."""
    def tests(part: str) -> str:
        done = subprocess.run([sys.executable, "course.py", "tests", part], cwd=real_release, capture_output=True,
                              text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        return done.stdout.strip()
    assert tests("3") == tests("reducer") == "tests/test_reducer.py"
    assert tests("4") == "tests/test_ddp.py"
    assert tests("A") == tests("a") == "tests/test_bonus.py::test_bonus_a"
    assert tests("bonus") == "tests/test_bonus.py::test_bonus_a tests/test_bonus.py::test_bonus_b"
    assert "make test PART=B" in make(real_release, "parts").stdout
    wrong = make(real_release, "test", "PART=C")
    assert "A (bonus A), B (bonus B), bonus (A and B)" in wrong.stderr


def test_an_error_of_the_reducers_construction_says_the_driver_built_it(real_release):
    """Part 3 before Part 4: the Reducer raises as the provided driver builds it; the message says so, and
    nothing blames the (unwritten) DDP wrapper."""
    replace_stubs_with_solutions(real_release)
    shutil.copyfile(os.path.join(REPO, "assignment", "minddp", "ddp.py"), os.path.join(real_release, "minddp", "ddp.py"))
    reducer = os.path.join(real_release, "minddp", "reducer.py")
    with open(reducer, encoding="utf-8") as f:
        text = f.read()
    marker = '        Bonus B\'s rebuild, it replaces the buckets."""\n'
    assert marker in text
    with open(reducer, "w", encoding="utf-8") as f:
        f.write(text.replace(marker, marker + '        raise ValueError("a mistake of my own")\n'))
    result = make(real_release, "test", "PART=3", "PYTEST_ARGS=-x -k 3.1 -p no:cacheprovider")
    assert result.returncode != 0 and "1 failed" in result.stdout, result.stdout[-3000:] + result.stderr[-2000:]
    assert "a mistake of my own [raised in the construction of your Reducer by the provided driver" in result.stdout
    assert "DDP's construction" not in result.stdout and "DistributedDataParallel" not in result.stdout
    assert "test_bonus" not in result.stdout
