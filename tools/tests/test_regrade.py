"""tools/regrade/ without grading: the export and its metadata, the CSV, the summary, the changed list, and
the resumable orchestration with a stand-in for the grader (the real gradings: autograder/tests/test_regrade_export.py)."""

from __future__ import annotations

import csv
import json
import os
import types
import zipfile

import pytest

from tools import regrade
from tools.regrade import batch, export, graders, plots, table

METADATA = """\
---
submission_101:
  :submitters:
  - :name: Alice O'Hara
    :sid: '12345'
    :email: alice@example.edu
  :created_at: 2026-10-01 12:00:00.000000000 -07:00
  :score: 110.0
  :status: processed
  :results:
    :score: 110.0
    :output: |-
      Part 1
      - :name: not a submitter
      :score: 3.0
    :tests:
    - :name: 'Part 1: read_torchrun_env'
      :score: 1.5
submission_102:
  :submitters:
  - :name: "Bob \\"B\\" Lee"
    :sid: '23456'
    :email: bob@example.edu
  - :name: Carol Diaz
    :sid: '34567'
    :email: carol@example.edu
  :created_at: 2026-10-02 08:30:00.000000000 -07:00
  :score: 55.5
submission_103:
  :submitters: []
  :score:
"""


def results(scores: dict[str, float], output: str = "") -> dict:
    """A results.json as the grader writes it: max 1 per check, "passed" at full marks."""
    tests = [{"number": n, "name": f"check {n}", "score": s, "max_score": 1.0,
              "status": "passed" if s == 1.0 else "failed", "output": output if s < 1.0 else ""}
             for n, s in scores.items()]
    return {"score": round(sum(scores.values()), 4), "output": "", "tests": tests}


def write(path, text: str | bytes) -> str:
    os.makedirs(os.path.dirname(str(path)), exist_ok=True)
    with open(path, "wb") as f:
        f.write(text.encode() if isinstance(text, str) else text)
    return str(path)


def zip_of(path, files: dict[str, str]) -> str:
    with zipfile.ZipFile(path, "w") as zf:
        for name, text in files.items():
            zf.writestr(name, text)
    return str(path)


def gradescope_export(tmp_path) -> str:
    """An export zip as Gradescope makes it: one top folder, submission folders (102 holding the zip the
    student uploaded), the metadata."""
    top = tmp_path / "src" / "assignment_7_export"
    write(top / "submission_101" / "minddp" / "reducer.py", "# alice\n")
    write(top / "submission_101" / "answers.py", "A = 1\n")
    os.makedirs(top / "submission_102")
    zip_of(top / "submission_102" / "submission.zip", {"minddp/reducer.py": "# bob\n", "answers.py": "A = 2\n"})
    write(top / "submission_103" / "answers.py", "A = 3\n")
    write(top / "submission_metadata.yml", METADATA)
    write(top / ".DS_Store", "junk")
    archive = tmp_path / "export.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        for root, _, files in os.walk(tmp_path / "src"):
            for name in files:
                full = os.path.join(root, name)
                zf.write(full, os.path.relpath(full, tmp_path / "src"))
    return str(archive)


# -- the export and its metadata --------------------------------------------------------------------------

def test_metadata_in_gradescopes_format(tmp_path):
    found = export.read_metadata(write(tmp_path / "m.yml", METADATA))
    assert set(found) == {"101", "102", "103"}
    assert found["101"]["submitters"] == [{"name": "Alice O'Hara", "sid": "12345", "email": "alice@example.edu"}]
    assert found["101"]["score"] == 110.0 and found["101"]["created_at"].startswith("2026-10-01 12:00")
    assert [p["name"] for p in found["102"]["submitters"]] == ['Bob "B" Lee', "Carol Diaz"]
    assert found["102"]["score"] == 55.5
    assert found["103"] == {"submitters": [], "score": None, "created_at": ""}
    assert export.submitters_text(found["102"]) == ('Bob "B" Lee <bob@example.edu> (23456); '
                                                    "Carol Diaz <carol@example.edu> (34567)")


def test_export_zip_read_with_submitters_and_a_lone_zip_extracted(tmp_path):
    folder = regrade.open_export(gradescope_export(tmp_path), str(tmp_path / "scratch"))
    subs = export.read_export(folder)
    assert [s.id for s in subs] == ["101", "102", "103"]
    assert subs[0].submitters == "Alice O'Hara <alice@example.edu> (12345)"
    assert subs[2].submitters == ""
    assert export.lone_zip(subs[1].path) and not export.lone_zip(subs[0].path)
    laid = batch.lay_out(subs[1].path, str(tmp_path / "graded-102"))
    assert sorted(os.listdir(laid)) == ["answers.py", "minddp"]  # the upload, extracted as Gradescope does
    with open(os.path.join(laid, "minddp", "reducer.py")) as f:
        assert f.read() == "# bob\n"
    laid = batch.lay_out(subs[0].path, str(tmp_path / "graded-101"))
    assert sorted(os.listdir(laid)) == ["answers.py", "minddp"]


def test_a_plain_folder_of_submission_folders_and_zips(tmp_path):
    write(tmp_path / "one" / "bob" / "minddp" / "ddp.py", "# bob\n")  # a lone hand-named submission: not a top folder
    assert [s.id for s in export.read_export(str(tmp_path / "one"))] == ["bob"]
    tmp_path = tmp_path / "many"
    write(tmp_path / "alice" / "answers.py", "A = 1\n")
    zip_of(tmp_path / "submission_9.zip", {"answers.py": "A = 9\n"})
    write(tmp_path / "notes.txt", "not a submission")
    subs = export.read_export(str(tmp_path))
    assert [(s.id, os.path.basename(s.path)) for s in subs] == [("9", "submission_9.zip"), ("alice", "alice")]
    assert os.listdir(batch.lay_out(subs[0].path, str(tmp_path / "laid"))) == ["answers.py"]


@pytest.mark.parametrize("kind, says", [
    ("missing", "no such file or folder"),
    ("not-a-zip", "neither a zip nor a folder"),
    ("empty-folder", "no submissions found"),
    ("empty-zip", "no submissions found"),
])
def test_bad_exports_say_what_to_fix(tmp_path, kind, says):
    path = str(tmp_path / "export")
    if kind == "not-a-zip":
        write(path, "just text")
    elif kind == "empty-folder":
        os.makedirs(path)
    elif kind == "empty-zip":
        path = zip_of(tmp_path / "export.zip", {"readme.txt": "no submissions here", "notes.pdf": "%PDF"})
    with pytest.raises(export.RegradeError, match=says):
        export.read_export(regrade.open_export(path, str(tmp_path / "scratch")))


def test_an_unknown_git_rev_and_bad_jobs_are_errors(tmp_path, capsys):
    with pytest.raises(export.RegradeError, match="OLD=no-such-rev-x is not a commit"):
        graders.old_tree("no-such-rev-x", str(tmp_path))
    first = graders.git("rev-list", "--max-parents=0", "HEAD").split()[0]  # long before any --reference-cache
    with pytest.raises(export.RegradeError, match="has no grader with --reference-cache"):
        graders.old_tree(first, str(tmp_path / "first"))
    with pytest.raises(export.RegradeError, match="JOBS=0"):
        regrade.regrade(str(tmp_path), str(tmp_path / "out"), 0)
    assert regrade.main([]) == 2
    assert "make regrade EXPORT=" in capsys.readouterr().err
    assert regrade.main([str(tmp_path / "nothing.zip"), "--out", str(tmp_path / "out")]) == 2
    assert "no such file or folder" in capsys.readouterr().err


def test_default_jobs_is_bounded_by_the_cpus():
    assert 1 <= batch.default_jobs() <= (os.cpu_count() or 1)


# -- the CSV, the summary, the changes ---------------------------------------------------------------------

SUBS = [export.Submission("101", "/x/101", "Alice <a@x>"), export.Submission("102", "/x/102"),
        export.Submission("103", "/x/103")]
NEW = {"101": {**results({"1.1": 1.0, "1.1h": 1.0, "3.2": 1.0}),
               "extra_data": {"release": {"grader": "bbbbbbbbbbbb", "submission": "aaaaaaaaaaaa", "changed": ["3", "6"]},
                              "grader": {"version": "5e1f0c2a9b3d.41c7a0", "release": "2026.2"}}},
       "102": results({"1.1": 1.0, "1.1h": 0.0, "3.2": 0.0}, output="\n  launched no all-reduce\nmore"),
       "103": None}


def test_scores_csv_one_row_per_submission_and_check(tmp_path):
    path = table.write_csv(str(tmp_path / "scores.csv"), table.CSV_HEADER,
                           table.score_rows(SUBS, NEW, "0123456789ab.000000"))
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    assert [(r["submission"], r["check"], float(r["score"])) for r in rows] == [
        ("101", "1.1", 1.0), ("101", "1.1h", 1.0), ("101", "3.2", 1.0),
        ("102", "1.1", 1.0), ("102", "1.1h", 0.0), ("102", "3.2", 0.0), ("103", "", 0.0)]
    assert rows[0]["submitters"] == "Alice <a@x>" and rows[0]["name"] == "check 1.1"
    assert rows[4]["status"] == "failed" and rows[4]["message"] == "launched no all-reduce"  # the first line
    assert rows[6]["status"] == "error" and "no results.json" in rows[6]["message"]
    assert (rows[0]["release"], rows[0]["release_changed"]) == ("aaaaaaaaaaaa", "3 6")  # a stale release, named
    assert (rows[3]["release"], rows[3]["release_changed"]) == ("", "")
    # which grader graded: results.json's own grader version, else the one the run built (grader_version.py)
    assert (rows[0]["grader_version"], rows[3]["grader_version"]) == ("5e1f0c2a9b3d.41c7a0", "0123456789ab.000000")


def test_summary_counts_scores_and_failure_rates():
    text = table.summary(NEW, "grader abc", {"102": ["the grader exited with code 1"]})
    assert "grader abc: 3 submission(s)" in text
    assert "mean 1.33, median 1.00, min 0, max 3" in text  # 3, 1 and 0 (no results)
    lines = {line.split()[0]: line.split()[1:3] for line in text.splitlines() if line[:1].isdigit()}
    assert lines == {"1.1": ["0/2", "0%"], "1.1h": ["1/2", "50%"], "3.2": ["1/2", "50%"]}
    assert "102: the grader exited with code 1" in text


def test_changes_name_the_submissions_and_exactly_the_checks_that_differ():
    old = {"101": results({"1.1": 1.0, "1.1h": 1.0, "3.2": 0.0}),  # 3.2 was wrongly failed: +1
           "102": results({"1.1": 1.0, "1.1h": 0.0, "3.2": 0.0}),  # unchanged
           "103": results({"1.1": 0.5, "1.1h": 0.5}),              # same total, other checks: not a change
           "104": results({"1.1": 1.0})}                            # gone from the new grading
    new = {**NEW, "103": results({"1.1": 1.0, "1.1h": 0.0}), "105": results({"9.9": 1.0})}
    found = table.changes(old, new)
    assert [(c.id, c.old, c.new, c.checks) for c in found] == [
        ("101", 2.0, 3.0, (("3.2", 0.0, 1.0),)),
        ("104", 1.0, None, (("1.1", 1.0, None),)),
        ("105", None, 1.0, (("9.9", None, 1.0),))]
    rows = table.change_rows(found, {"101": "Alice <a@x>"}, ("aaaaaaaaaaaa.000000", "bbbbbbbbbbbb.000000"))
    assert rows[0] == ["101", "Alice <a@x>", "2", "3", "+1", "3.2: 0 -> 1", "aaaaaaaaaaaa.000000", "bbbbbbbbbbbb.000000"]
    assert "3 of 5 submission(s) change score" in table.change_text(found, {}, 5)
    assert table.changes(new, new) == [] and "no submission's score changed" in table.change_text([], {}, 3)


def test_compare_two_regrade_output_folders(tmp_path):
    for out, data in (("old", {"7": results({"2.1": 0.0, "2.2": 1.0})}), ("new", {"7": results({"2.1": 1.0, "2.2": 1.0})})):
        for sid, value in data.items():
            write(tmp_path / out / "results" / f"{sid}.json", json.dumps(value))
    found = table.compare_folders(str(tmp_path / "old"), str(tmp_path / "new"))
    assert [(c.id, c.checks) for c in found] == [("7", (("2.1", 0.0, 1.0),))]


def test_plots_are_pngs(tmp_path):
    paths = [plots.plot_scores(str(tmp_path / "s.png"), NEW, "t"), plots.plot_failures(str(tmp_path / "f.png"), NEW, "t"),
             plots.plot_old_vs_new(str(tmp_path / "o.png"), {"101": NEW["101"]}, NEW, "old", "new")]
    for path in paths:
        with open(path, "rb") as f:
            assert f.read(8) == b"\x89PNG\r\n\x1a\n", path


# -- the orchestration, with a stand-in for the grader ------------------------------------------------------

class FakeGrader:
    """autograder/grade.py with its ``grade`` standing in (the rest is the real module: laying out the folder):
    scores each file of the submission 1 ("ok" in it) or 0; the first grading writes the reference cache, as
    the grader does."""

    def __init__(self):
        self.graded: list[tuple[str, bool]] = []  # (the submission's answers.py, whether a cache was given filled)
        self.real = batch.entry_point()

    def __getattr__(self, name):
        return getattr(self.real, name)

    def grade(self, folder, reference_cache, log_path):
        source, submission, cache = os.path.join(folder, "source"), os.path.join(folder, "submission"), reference_cache
        assert os.path.isfile(os.path.join(source, "run_autograder")), "not a built source folder"
        assert os.path.isdir(submission)  # laid out in the grading's own folder
        with open(os.path.join(submission, "answers.py")) as f:
            text = f.read()
        self.graded.append((text, os.path.exists(cache)))
        if not os.path.exists(cache):
            write(cache, "{}")
        write(os.path.join(folder, "results", "results.json"),
              json.dumps(results({"6.1": 1.0 if "ok" in text else 0.0, "6.2": 1.0})))
        return types.SimpleNamespace(seconds=0.1, returncode=0, problems=[])


@pytest.fixture
def fake(monkeypatch):
    grader = FakeGrader()
    for module in (regrade, batch, plots):  # each module that calls entry_point (each imports it by name)
        monkeypatch.setattr(module, "entry_point", lambda: grader)
    return grader


def test_regrade_writes_everything_and_resumes(tmp_path, fake):
    export_dir = tmp_path / "export"
    write(export_dir / "submission_1" / "answers.py", "ok\n")
    write(export_dir / "submission_2" / "answers.py", "no\n")
    zip_of(tmp_path / "lone.zip", {"answers.py": "ok zipped\n"})
    os.makedirs(export_dir / "submission_3")
    os.replace(tmp_path / "lone.zip", export_dir / "submission_3" / "upload.zip")
    out = str(tmp_path / "out")
    text = regrade.regrade(str(export_dir), out, jobs=2, progress=False)
    assert sorted(t for t, _ in fake.graded) == ["no\n", "ok\n", "ok zipped\n"]
    assert [cached for _, cached in fake.graded] == [False, True, True]  # one reference pass, then reused
    assert "3 submission(s)" in text and "3 graded now" in text
    for name in ("scores.csv", "summary.txt", "scores.png", "failures.png"):
        assert os.path.getsize(os.path.join(out, name)) > 0, name
    with open(os.path.join(out, "scores.csv"), newline="") as f:
        scored = {(r["submission"], r["check"]): float(r["score"]) for r in csv.DictReader(f)}
    assert scored == {("1", "6.1"): 1.0, ("1", "6.2"): 1.0, ("2", "6.1"): 0.0, ("2", "6.2"): 1.0,
                      ("3", "6.1"): 1.0, ("3", "6.2"): 1.0}
    assert sorted(table.load_results(out)) == ["1", "2", "3"]
    run = [d for d in os.listdir(os.path.join(out, "runs")) if not d.startswith(".")]
    assert len(run) == 1 and sorted(os.listdir(os.path.join(out, "runs", run[0], "submissions", "1"))) == ["graded.json", "results"]

    fake.graded.clear()
    text = regrade.regrade(str(export_dir), out, jobs=2, progress=False)  # same grader, same export: nothing to do
    assert fake.graded == [] and "3 reused from an earlier run" in text

    write(export_dir / "submission_2" / "answers.py", "ok now\n")  # a changed submission is graded again
    os.remove(os.path.join(out, "runs", run[0], "submissions", "3", "graded.json"))  # ... and one whose grading was interrupted
    regrade.regrade(str(export_dir), out, jobs=1, progress=False)
    assert sorted(t for t, _ in fake.graded) == ["ok now\n", "ok zipped\n"]


def test_old_revision_is_built_from_git_and_compared(tmp_path, fake, monkeypatch):
    monkeypatch.setattr(regrade.tempfile, "tempdir", str(tmp_path))  # to see the scratch folder go
    export_dir = tmp_path / "export"
    write(export_dir / "submission_5" / "answers.py", "ok\n")
    out = str(tmp_path / "out")
    text = regrade.regrade(str(export_dir), out, jobs=1, old="HEAD", progress=False)
    runs = [d for d in os.listdir(os.path.join(out, "runs")) if not d.startswith(".")]
    assert 1 <= len(runs) <= 2  # HEAD's grader and this tree's (one folder if the tree is clean)
    assert "grader version" in text and "(OLD=HEAD, release" in text and "no submission's score changed (1 compared)" in text
    assert len({run.split(".")[1] for run in runs}) == 1  # both graders draw the hidden inputs from one secret
    for name in ("changed.csv", "scores-old.csv", "old_vs_new.png"):
        assert os.path.exists(os.path.join(out, name)), name
    assert not [p for p in os.listdir(tmp_path) if p.startswith("minddp-regrade-")]


def test_check_failures_merge_each_checks_public_and_hidden_entries():
    """failures.png's bars: one per check; a submission failing the public inputs counts there, one that passes
    them but fails the hidden ones counts as hidden-only; ungraded submissions count nowhere."""
    assert [row[0] for row in plots.check_failures(NEW)] == ["1.1", "3.2"]  # no bar for the hidden twin
    assert [row[2:] for row in plots.check_failures(NEW)] == [(0, 1, 2), (1, 0, 2)]


def test_a_grader_is_named_by_its_version_and_keeps_its_release_name_current(tmp_path):
    """runs/<grader version>/: a rebuilt grader that differs only by its release's name (which changes no score:
    `make release`) finds its earlier work, and is named by the new release."""
    from tools.regrade.graders import prepare_grader

    def builder(name):
        def build(out):
            write(os.path.join(out, "grader", "run.py"), "# the grader\n")
            write(os.path.join(out, "skeleton", "release.json"), json.dumps({"release": name}))
            return out
        return build
    first = prepare_grader(builder("2026.1"), str(tmp_path), "this tree")
    again = prepare_grader(builder("2026.2"), str(tmp_path), "this tree")
    assert first.runs == again.runs and again.release == "2026.2"
    assert again.name == f"grader version {again.version} (this tree, release 2026.2)"
    assert again.version.endswith(".nosecret")  # no secret drawn: the build of a zip, before setup.sh
