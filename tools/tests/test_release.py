"""generate / check on a miniature repository and on the real one."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile

import pytest
from conftest import REPO, TOOLS, run_assign, write

from tools.release import Layout, ReleaseError, build_release, compare, write_release, write_student_zip
from tools.student.course import find_stubs, load_student_files


def generate(layout: Layout) -> dict[str, bytes]:
    files = build_release(layout).files
    write_release(files, layout.assignment)
    return files


def test_release_contents(mini):
    files = generate(mini)
    assert sorted(files) == [".gitignore", "AGENTS.md", "CLAUDE.md", "Makefile", "README.md", "course.py", "install.py", "minddp/__init__.py",
                             "minddp/helper.py", "minddp/part.py", "pytest.ini", "release.json",
                             "requirements.txt", "student_files.json", "tests/test_part.py"]  # no bench.py: staff only
    part = str(files["minddp/part.py"], "utf-8")
    assert part.startswith("# GENERATED from solutions/minddp/part.py by tools/assign.py")
    assert "this is your copy; edit the stubs" in part.splitlines()[1]
    assert 'raise NotImplementedError("Part 2: Counter.bump — see handout §2.1")' in part
    helper = str(files["minddp/helper.py"], "utf-8")
    assert "GENERATED from solutions/minddp/helper.py" in helper and "do not edit it by hand" in helper
    assert helper.endswith("def provided():\n    return 1\n")
    assert "| 2. The part | §2.1 | `minddp/part.py` | `double`, `Counter.bump` | `make test PART=part` |" \
        in str(files["README.md"], "utf-8")


def test_requirements_are_the_pins(mini):
    requirements = str(generate(mini)["requirements.txt"], "utf-8")
    assert "torch==2.13.0" in requirements and "pytest==9.2.0" in requirements


def test_check_is_clean_after_generate_and_idempotent(mini):
    files = generate(mini)
    assert not compare(files, mini.assignment)
    assert not write_release(build_release(mini).files, mini.assignment)  # nothing left to change


def test_check_detects_a_hand_edit_a_missing_and_an_extra_file(mini):
    files = generate(mini)
    write(os.path.join(mini.assignment, "minddp", "part.py"), str(files["minddp/part.py"], "utf-8") + "# edited\n")
    os.unlink(os.path.join(mini.assignment, "tests", "test_part.py"))
    write(os.path.join(mini.assignment, "minddp", "stray.py"), "x = 1\n")
    write(os.path.join(mini.assignment, "minddp", "__pycache__", "part.cpython-311.pyc"), "")  # build product
    difference = compare(build_release(mini).files, mini.assignment)
    assert (difference.modified, difference.missing, difference.extra) == (
        ["minddp/part.py"], ["tests/test_part.py"], ["minddp/stray.py"])


def test_check_cli_names_the_stale_file(mini):
    generate(mini)
    write(os.path.join(mini.solutions, "minddp", "helper.py"), "def provided():\n    return 2\n")
    result = run_assign("check", repo=os.path.dirname(mini.solutions))
    assert result.returncode == 1
    assert "modified: " in result.stderr and os.path.join("minddp", "helper.py") in result.stderr


def test_generate_removes_files_gone_from_solutions(mini):
    generate(mini)
    os.unlink(os.path.join(mini.solutions, "minddp", "helper.py"))
    difference = write_release(build_release(mini).files, mini.assignment)
    assert difference.extra == ["minddp/helper.py"]
    assert not os.path.exists(os.path.join(mini.assignment, "minddp", "helper.py"))


@pytest.mark.parametrize("change, message", [
    ({"kind": "essay"}, "kind 'essay' is not supported (supported: code, answers)"),
    ({"path": "minddp/gone.py"}, "lists minddp/gone.py, but solutions/minddp/gone.py does not exist"),
    ({"part": "2"}, "'part' must be a int"),
    ({"colour": "red"}, "unknown field(s) colour"),
    ({"tests": []}, "'tests' must list at least one test file path"),
])
def test_config_mistakes_are_named(mini, change, message):
    config_path = os.path.join(mini.solutions, "student_files.json")
    with open(config_path) as f:
        config = json.load(f)
    config["files"].append({**config["files"][0], "path": "minddp/helper.py", **change})  # a second entry
    write(config_path, json.dumps(config))
    with pytest.raises(ReleaseError, match=message.replace("(", r"\(").replace(")", r"\)")):
        build_release(mini)


def test_student_zip_holds_assignment_and_handout(mini, tmp_path):
    files = build_release(mini).files
    output = str(tmp_path / "dist" / "student.zip")
    assert "handout.pdf" not in write_student_zip(files, mini, output)
    write(mini.handout_pdfs[0], "%PDF-fake")
    names = write_student_zip(files, mini, output)
    assert "handout.pdf" in names and "assignment/minddp/part.py" in names
    with zipfile.ZipFile(output) as zf:
        assert zf.read("assignment/Makefile") == files["Makefile"]


# -- the real repository -------------------------------------------------------------------------------------

def test_real_assignment_is_in_sync():
    result = run_assign("check")
    assert result.returncode == 0, result.stderr


def test_files_command_lists_the_student_files():
    result = run_assign("files", "--paths")
    assert result.stdout.split() == ["minddp/process_group.py", "minddp/bucketing.py", "minddp/reducer.py",
                                     "minddp/ddp.py", "minddp/timeline.py", "answers.py"]


def test_every_real_region_became_a_stub_of_its_part():
    layout = Layout.of_repo(REPO)
    release = build_release(layout)
    for entry in load_student_files(os.path.join(REPO, "solutions", "student_files.json")):
        text = str(release.files[entry.path], "utf-8")
        stubs = find_stubs(text, entry.path)
        assert [s.qualname for s in stubs] == [p.qualname for p in release.regions[entry.path] if not p.region.design]
        assert {s.part for s in stubs} == {entry.part}
        assert "SOLUTION" not in text


def test_every_generated_python_file_says_it_is_generated():
    release = build_release(Layout.of_repo(REPO))
    for path, data in release.files.items():
        if path.endswith(".py"):
            assert data.startswith(b"# GENERATED from "), path


def test_generated_stubs_import_cleanly(real_release):
    modules = [f"minddp.{name[:-3]}" for name in sorted(os.listdir(os.path.join(real_release, "minddp")))
               if name.endswith(".py") and name != "__init__.py"]
    code = "import importlib, sys\nfor m in sys.argv[1:]:\n    importlib.import_module(m)\n"
    result = subprocess.run([sys.executable, "-c", code, *modules], cwd=real_release, capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 0, result.stderr


def test_tools_need_nothing_newer_than_python_3_10():
    vermin = os.path.join(os.path.dirname(sys.executable), "vermin")
    if not os.path.exists(vermin):
        pytest.skip("vermin is not installed (requirements-dev.txt)")
    result = subprocess.run([vermin, "--quiet", "--no-tips", "--violations", "-t=3.10-", "--eval-annotations",
                             TOOLS], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr


def test_generate_cli_stops_on_a_malformed_marker_with_file_and_line(mini):
    part = os.path.join(mini.solutions, "minddp", "part.py")
    with open(part) as f:
        text = f.read()
    write(part, text.replace("    # END SOLUTION\n", "", 1))  # double() loses its END: the next BEGIN (line 20) nests
    result = run_assign("generate", repo=os.path.dirname(mini.solutions))
    assert result.returncode == 2
    assert "error: solutions/minddp/part.py:20: BEGIN SOLUTION inside the region opened at line 8" in result.stderr
    assert not os.path.exists(mini.assignment)  # nothing half-written


def test_the_release_stamp_names_what_changed(mini):
    """release.json: one version for the whole release, one digest per part; a change to one part's checks
    changes that part's digest (and the version) only."""
    import json
    before = json.loads(build_release(mini).files["release.json"])
    checks = os.path.join(mini.solutions, "tests", "test_part.py")
    with open(checks, "a", encoding="utf-8") as f:
        f.write("\n# a new input\n")
    after = json.loads(build_release(mini).files["release.json"])
    assert before["version"] != after["version"]
    assert [p for p in after["parts"] if after["parts"][p] != before["parts"][p]] == ["2"]
    assert before["shared"] == after["shared"]


def test_staff_only_tests_stay_out_of_the_release():
    """The tests that state torch's facts the handout asks students to observe exist, and only on the staff side."""
    from tools.release import STAFF_ONLY
    release = build_release(Layout.of_repo())
    for path in STAFF_ONLY:
        assert os.path.isfile(os.path.join(REPO, "solutions", path)), path
        assert path not in release.files and not os.path.exists(os.path.join(REPO, "assignment", path)), path
