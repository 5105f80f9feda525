"""Fast tests of the grader's pieces that need no workers: static checks, staging, results.json, answers."""

from __future__ import annotations

import json
import os
import sys
import zipfile

import pytest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from grader.checks import ALL_CHECKS, _answer_matches  # noqa: E402
from grader.results import MAX_OUTPUT_CHARS, clip, write_fallback, write_results  # noqa: E402
from grader.results import TestResult as Result  # noqa: E402 (pytest would try to collect "Test...")
from grader.stage import StudentFile, find_in_upload, stage, unpack_if_zip  # noqa: E402
from grader.static import banned_uses, check_file, compile_error  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FILES = [StudentFile("minddp/reducer.py", 3, "The Reducer", "3"), StudentFile("answers.py", 6, "Answers", "6")]


@pytest.mark.parametrize("line, banned", [
    ("from torch.nn.parallel import DistributedDataParallel", True),
    ("import torch.nn.parallel.distributed", True),
    ("x = torch.nn.parallel.DistributedDataParallel(m)", True),
    ("b = dist._compute_bucket_assignment_by_size(t, [1])", True),
    ("from torch.distributed.algorithms.ddp_comm_hooks import default_hooks", True),
    ("r = torch._C._distributed_c10d.Reducer", True),
    ("f = getattr(dist, '_broadcast_coalesced')", True),
    ("import importlib; importlib.import_module('torch.nn.parallel')", True),
    ("class DistributedDataParallel(nn.Module): pass", False),
    ("from .reducer import Reducer", False),
    ("'''Unlike torch.nn.parallel.DistributedDataParallel, ours is Python.'''", False),
    ("dist.all_reduce(t, async_op=True)", False),
])
def test_banned_api_scan(line, banned):
    assert bool(banned_uses(line + "\n", "ddp.py")) == banned


def test_reference_files_are_clean():
    for path in ("minddp/process_group.py", "minddp/bucketing.py", "minddp/reducer.py", "minddp/ddp.py",
                 "minddp/timeline.py", "answers.py"):
        full = os.path.join(REPO, "solutions", path)
        assert check_file(full, path) == (None, []), path


def test_compile_error_names_the_line():
    assert "line 2" in compile_error("x = 1\ndef f(:\n", "bucketing.py")


def test_staging_finds_nested_files_and_takes_only_student_files(tmp_path):
    skeleton = tmp_path / "skeleton"
    (skeleton / "minddp").mkdir(parents=True)
    (skeleton / "minddp" / "reducer.py").write_text("stub")
    (skeleton / "minddp" / "workers.py").write_text("pristine")
    (skeleton / "answers.py").write_text("stub")
    upload = tmp_path / "upload"
    (upload / "hw" / "minddp").mkdir(parents=True)
    (upload / "hw" / "minddp" / "reducer.py").write_text("mine")
    (upload / "hw" / "minddp" / "workers.py").write_text("tampered")
    staged = stage(str(upload), str(skeleton), FILES, str(tmp_path / "work"))
    student = tmp_path / "work" / "student"
    assert (student / "minddp" / "reducer.py").read_text() == "mine"
    assert (student / "minddp" / "workers.py").read_text() == "pristine", "provided files are never taken"
    assert staged.missing == ["answers.py"]


def test_zip_members_cannot_escape(tmp_path):
    archive = tmp_path / "sub.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("../../evil.py", "x")
        zf.writestr("minddp/reducer.py", "mine")
    folder = unpack_if_zip(str(archive), str(tmp_path / "out"))
    assert find_in_upload(folder, "minddp/reducer.py") == [os.path.join("minddp", "reducer.py")]
    assert not (tmp_path / "evil.py").exists()


def test_results_are_complete_clipped_and_atomic(tmp_path):
    path = str(tmp_path / "results" / "results.json")
    write_fallback(path, "stopped early")
    assert json.loads(open(path).read())["score"] == 0.0
    tests = [Result("a", "1.1", 2.0, 2.0, "passed"), Result("b", "1.2", 3.0, output="x" * 200_000),
             Result("bonus", "A.1", 5.0, 5.0, "passed", extra_credit=True)]
    data = write_results(path, tests, "summary", 1.0)
    assert data["score"] == 7.0 and [t["max_score"] for t in data["tests"]] == [2.0, 3.0, 0.0]
    assert len(data["tests"][1]["output"]) <= MAX_OUTPUT_CHARS
    assert json.loads(open(path).read()) == data
    assert [p for p in os.listdir(tmp_path / "results")] == ["results.json"], "no temporary file left behind"
    assert clip("short", 100) == "short"


def test_answer_tolerance():
    assert _answer_matches(10.0005, 10.0)
    assert not _answer_matches(10.1, 10.0)
    assert _answer_matches([["p1", "p0"], ["p2"]], [["p1", "p0"], ["p2"]])
    assert not _answer_matches([["p0", "p1"], ["p2"]], [["p1", "p0"], ["p2"]])
    assert not _answer_matches(True, 1) and not _answer_matches("3", 3)


def test_checks_are_numbered_weighted_and_sum_to_100():
    numbers = [c.__number__ for c in ALL_CHECKS]
    assert len(numbers) == len(set(numbers)), "check numbers are unique"
    regular = sum(c.__weight__ for c in ALL_CHECKS if not c.__scenario__.bonus)
    bonus = sum(c.__weight__ for c in ALL_CHECKS if c.__scenario__.bonus)
    assert regular == 100 and bonus == 10  # exactly: Gradescope shows the sum
    assert all((c.__doc__ or "").strip() for c in ALL_CHECKS), "each check has a name for Gradescope"


# -- feedback that names the mistake: the grader's plain-Python models must agree with the reference ------

def test_bucket_rules_agree_with_the_reference():
    """bucket_rules (no torch, in the grading process) names bucketing mistakes; without a mistake it must
    give exactly the reference's buckets (themselves equal to torch's: solutions/tests/test_bucketing.py)."""
    import torch

    sys.path.insert(0, os.path.join(REPO, "solutions"))
    from minddp.bucketing import compute_bucket_assignment

    from grader.checks import BASIC_CASES, BUCKET_MISTAKES, DTYPE_CASES, ORDER_CASES, bucket_rules, random_bucket_cases

    cases = BASIC_CASES + DTYPE_CASES + ORDER_CASES + random_bucket_cases(seed=3, count=400)
    differs = dict.fromkeys(BUCKET_MISTAKES, 0)
    for case in cases:
        tensors = [torch.empty(n, dtype=getattr(torch, d), device="meta") for n, d in zip(case["sizes"], case["dtypes"])]
        assert bucket_rules(case) == compute_bucket_assignment(tensors, case["limits"], case.get("order")), case
        for mistake in BUCKET_MISTAKES:
            differs[mistake] += bucket_rules(case, mistake) != bucket_rules(case)
    assert all(differs.values()), f"a mistake these cases cannot tell apart from the rules: {differs}"


def test_timeline_mistakes_agree_with_the_reference():
    """Each modelled mistake differs from the reference answer on some case, and the plain-Python
    simulator without a mistake matches the reference (so the feedback never names a wrong mistake)."""
    sys.path.insert(0, os.path.join(REPO, "solutions"))
    from minddp import timeline

    from grader.checks import TIMELINE_CASES, _close, _ring, _simulate, timeline_mistakes

    named = set()
    for case in TIMELINE_CASES:
        args = case["args"]
        if case["fn"] == "ring_allreduce_time":
            assert _close(_ring(*args), timeline.ring_allreduce_time(*args))
        if case["fn"] == "simulate_step":
            tl = timeline.simulate_step(*args)
            assert _close(_simulate(*args)["comm_end"], list(tl.comm_end))
        reference = timeline.backward_ready_times(*args) if case["fn"] == "backward_ready_times" else None
        for mistake, value in timeline_mistakes(case).items():
            if case["fn"] == "ring_allreduce_time":
                reference = timeline.ring_allreduce_time(*args)
            elif case["fn"] == "simulate_step":
                reference = _simulate(*args)
            if not _close(value, reference):
                named.add(mistake)
    assert len(named) == 5, f"mistakes never distinguishable on the hidden cases: {named}"
