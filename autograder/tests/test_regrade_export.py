"""`make regrade` end to end (tools/regrade/): a small Gradescope export of real submissions, the solutions
(a plain folder) and the stubs (a folder holding the zip the student uploaded), graded by the real grader
with one reference pass; the CSV must say what each grading's results.json says, a rerun must grade nothing,
and the changed list, computed from the real gradings, must name exactly the checks whose scores differ.
(The pure parts, without grading: tools/tests/test_regrade.py.)
"""

from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import sys
import time
import zipfile

import pytest

from autograder.assemble import reference_submission, student_paths
from tools import REPO
from tools.regrade import plots, table

FULL = plots.full_marks()  # every point the checks give: the solutions' score

SOLUTIONS, STUBS = "301", "302"
METADATA = f"""\
submission_{SOLUTIONS}:
  :submitters:
  - :name: Sol Ution
    :sid: '1001'
    :email: sol@example.edu
  :created_at: 2026-11-01 10:00:00.000000000 -07:00
  :score: 110.0
submission_{STUBS}:
  :submitters:
  - :name: Stu Bbs
    :sid: '1002'
    :email: stub@example.edu
  :created_at: 2026-11-02 10:00:00.000000000 -07:00
  :score: 0.0
"""


def zip_folder(folder: str, path: str, prefix: str = "") -> str:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for root, _, files in os.walk(folder):
            for name in sorted(files):
                full = os.path.join(root, name)
                zf.write(full, os.path.join(prefix, os.path.relpath(full, folder)))
    return path


@pytest.fixture(scope="module")
def export(tmp_path_factory) -> str:
    """export.zip as Gradescope writes it: one top folder, submission_<id>/ folders, the metadata."""
    work = tmp_path_factory.mktemp("regrade")
    top = work / "assignment_42_export"
    reference_submission(str(top / f"submission_{SOLUTIONS}"))
    stubs = work / "stubs"
    for path in student_paths():
        os.makedirs(os.path.dirname(stubs / path), exist_ok=True)
        shutil.copyfile(os.path.join(REPO, "assignment", path), stubs / path)
    os.makedirs(top / f"submission_{STUBS}")
    zip_folder(str(stubs), str(top / f"submission_{STUBS}" / "submission.zip"))  # the upload, as uploaded
    (top / "submission_metadata.yml").write_text(METADATA)
    return zip_folder(str(top), str(work / "export.zip"), prefix=top.name)


def run_regrade(export: str, out: str) -> tuple[subprocess.CompletedProcess, float]:
    began = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "tools.regrade", export, "--out", out, "--jobs", "2"], cwd=REPO,
                          capture_output=True, text=True, timeout=900, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, f"regrade failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done, time.monotonic() - began


@pytest.fixture(scope="module")
def regraded(export, tmp_path_factory, show):
    out = str(tmp_path_factory.mktemp("out"))
    done, seconds = run_regrade(export, out)
    head = [line for line in done.stdout.splitlines() if line.startswith(("grader ", "score:", "gradings:"))]
    show("\n" + "\n".join(head + [f"regrade of 2 submissions: {seconds:.0f} s"]))
    runs = [d for d in os.listdir(os.path.join(out, "runs")) if not d.startswith(".")]
    assert len(runs) == 1, runs
    single = {}  # each grading's own results.json and graded.json, in its folder laid out like /autograder
    for sid in (SOLUTIONS, STUBS):
        folder = os.path.join(out, "runs", runs[0], "submissions", sid)
        with open(os.path.join(folder, "results", "results.json")) as f, open(os.path.join(folder, "graded.json")) as g:
            single[sid] = (json.load(f), json.load(g))
    return out, done.stdout, single


def test_every_grading_is_clean_and_scores_what_the_work_earns(regraded):
    _, _, single = regraded
    for sid, (_, record) in single.items():
        assert record["problems"] == [] and record["returncode"] == 0, (sid, record)
    assert single[SOLUTIONS][0]["score"] == FULL
    assert single[STUBS][0]["score"] == 0.0 and single[STUBS][0]["tests"], "the stubs' zip was not graded"


def test_the_csv_says_what_each_gradings_results_json_says(regraded):
    out, _, single = regraded
    with open(os.path.join(out, "scores.csv"), newline="") as f:
        rows = list(csv.DictReader(f))
    for sid, who in ((SOLUTIONS, "Sol Ution <sol@example.edu> (1001)"), (STUBS, "Stu Bbs <stub@example.edu> (1002)")):
        mine = [r for r in rows if r["submission"] == sid]
        tests = single[sid][0]["tests"]
        assert [(r["check"], r["name"], float(r["score"]), float(r["max_score"]), r["status"]) for r in mine] == \
            [(t["number"], t["name"], t["score"], t["max_score"], t["status"]) for t in tests]
        assert {r["submitters"] for r in mine} == {who}
    assert len(rows) == sum(len(r["tests"]) for r, _ in single.values())


def test_the_summary_and_the_plots(regraded):
    out, printed, single = regraded
    assert "2 submission(s)" in printed and f"mean {FULL / 2:.2f}, median {FULL / 2:.2f}, min 0, max {FULL:g}" in printed
    failing = [t["number"] for t in single[STUBS][0]["tests"] if t["status"] != "passed"]
    assert failing, "the stubs fail checks"
    for number in failing:  # the solutions pass everything: each check the stubs fail is failed by 1 of 2
        assert any(line.split()[:2] == [number, "1/2"] for line in printed.splitlines()), number
    for name in ("scores.png", "failures.png", "summary.txt"):
        assert os.path.getsize(os.path.join(out, name)) > 1000 or name == "summary.txt", name


def test_a_rerun_grades_nothing(regraded, export):
    out, _, _ = regraded
    done, _ = run_regrade(export, out)
    runs = [d for d in os.listdir(os.path.join(out, "runs")) if not d.startswith(".")]
    assert len(runs) == 1, f"the grader's source changed between the two runs (the tree was edited?): {runs}"
    assert "2 reused from an earlier run" in done.stdout and "graded now" not in done.stdout, done.stdout


def test_the_changed_list_of_real_gradings(regraded, tmp_path):
    """The stubs' grading as the "old" result of a submission and the solutions' as its "new" one."""
    _, _, single = regraded
    stubs, solutions = single[STUBS][0], single[SOLUTIONS][0]
    for name, data in (("old", stubs), ("new", solutions)):
        os.makedirs(tmp_path / name / "results")
        (tmp_path / name / "results" / "7.json").write_text(json.dumps(data))
    found = table.compare_folders(str(tmp_path / "old"), str(tmp_path / "new"))
    before = {t["number"]: t["score"] for t in stubs["tests"]}
    after = {t["number"]: t["score"] for t in solutions["tests"]}
    differ = [n for n in after if before.get(n) != after[n]]
    assert differ and len(differ) < len(after)  # Part 6's public entries and the integrity report score 0 in both
    assert [(c.id, c.old, c.new) for c in found] == [("7", 0.0, FULL)]
    assert [k for k, _, _ in found[0].checks] == differ
    assert all(a == before[k] and b == after[k] for k, a, b in found[0].checks)
    assert table.compare_folders(str(tmp_path / "new"), str(tmp_path / "new")) == []
