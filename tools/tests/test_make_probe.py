"""`make probe` and `make probe-buckets` (solutions/probe.py, provided to students), run as a student runs them:
on the reference (IMPL=both: the reference beside torch's DDP) and on the stubs (before any part is done).
The probe's own facts about torch are staff-only tests (solutions/tests/test_probe_facts.py: not in the release)."""

from __future__ import annotations

import re

import pytest
from conftest import copy_release, make, replace_stubs_with_solutions

# A sequence that meets every behaviour of Part 4 and Bonus B that torch's DDP shows on Conv + BatchNorm.
OPS = "F B nograd(F) F B eval F B train nosync(nosync(F) F B) F B step zero"


@pytest.fixture(scope="module")
def stubs(tmp_path_factory) -> str:
    return copy_release(str(tmp_path_factory.mktemp("stubs") / "assignment"))


def test_the_reference_does_what_torch_does_but_what_the_checks_leave_out(tmp_path):
    """IMPL=both on the reference with Bonus B on: it differs from torch's DDP only where the checks do not compare
    (torch's single bucket in its first backward, the rebuild's broadcasts), and the report says where."""
    release = copy_release(str(tmp_path / "assignment"))
    replace_stubs_with_solutions(release)
    result = make(release, "probe", f"OPS={OPS}", "IMPL=both", "KWARGS=rebuild_buckets=True bucket_cap_mb=0.001")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "minddp (yours) did what torch DDP did in every operation the checks compare." in result.stdout, result.stdout
    assert ("Also different, where the checks do not compare: #2 B (torch's first synchronised backward), #4 F "
            "(torch's bucket rebuild).") in " ".join(result.stdout.split()), result.stdout
    rows = result.stdout.split("\n  2  B", 1)[1].split("\n  3  ", 1)[0]
    assert re.search(r"all_reduce 1610 Float\s+at p\d+'s gradient\n\s+\* yours: all_reduce \d+ Float", rows), rows
    assert result.stdout.count("-> .grad: averaged over the ranks (all 10 parameters)") == 4


def test_a_backward_shows_at_which_gradient_each_all_reduce_went(tmp_path):
    """Bonus A's A1 (when torch counts unused parameters ready) is observable: with branch b (p2, p3) unused, its
    buckets go at the next used gradient after their turn comes (p4's), not after every hook ran; the reference
    does the same, and the usage bitmap's all-reduce (its moment is the student's) carries no mark."""
    release = copy_release(str(tmp_path / "assignment"))
    replace_stubs_with_solutions(release)
    result = make(release, "probe", "MODEL=branchy", "OPS=F-b B", "IMPL=both",
                  "KWARGS=find_unused_parameters=True bucket_cap_mb=0")
    assert result.returncode == 0, result.stdout + result.stderr
    rows = result.stdout.split("\n  2  B", 1)[1]
    assert re.findall(r"all_reduce (\d+) Float\s+at (p\d)'s gradient", rows) == [
        ("4", "p5"), ("64", "p4"), ("16", "p4"), ("256", "p4"), ("16", "p1"), ("256", "p0")], rows
    assert re.search(r"all_reduce 6 Int\n", rows) and "after every hook ran" not in rows, rows
    assert "minddp (yours) did what torch DDP did in every operation the checks compare." in result.stdout, result.stdout


def test_on_the_stubs_torch_runs_and_yours_says_it_is_not_written(stubs):
    result = make(stubs, "probe", "OPS=F B", "IMPL=both")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "all_reduce 1610 Float" in result.stdout
    assert "* yours: !! every rank raised NotImplementedError: Part 4:" in result.stdout, result.stdout
    assert "DistributedDataParallel.__init__ — see handout §4" in result.stdout, result.stdout
    assert "  1  F " in result.stdout and "* yours: (not run: stopped at an error before)" in result.stdout
    result = make(stubs, "probe", "OPS=F nosync(B")  # bad input: make fails with the probe's words
    assert result.returncode != 0
    assert "probe: OPS: this nosync( is never closed: add ')' (at 'nosync(', column 3)" in result.stderr


def test_make_probe_buckets_prints_torchs_buckets(stubs):
    result = make(stubs, "probe-buckets", "TENSORS=10MiB 2MiB 8MiB 20MiB 4MiB", "LIMITS=12MiB")
    assert result.returncode == 0, result.stdout + result.stderr
    assert re.search(r"bucket 0\s+t4 t3\s+24 MiB.*\n\s+bucket 1\s+t2 t1 t0\s+20 MiB", result.stdout), result.stdout
