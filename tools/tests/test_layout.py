"""The repository's shape stays one a TA can hold in their head: no import circle, no two modules or packages
with one name, and sys.path edited only where code must run from a bare folder (each place says why)."""

import os

from tools import REPO, imports

# Where sys.path may be edited, and why: code that runs from a folder nothing installs.
PATH_EDITS = {
    # The grader runs on Gradescope from the bare source folder: it finds the check library in harness/.
    "autograder/grader/__init__.py": "the check library, from the source folder's harness/",
    # ... and the release's one reader of student_files.json (course.py) in its skeleton/.
    "autograder/grader/run.py": "course.py, from the source folder's skeleton/",
    # A student worker's imports: the code under test first, as a student's `make test` finds it.
    "autograder/grader/zygote.py": "a student worker's import path",
    "solutions/checks/worker_loop.py": "a worker's import path (the code under test, the harness)",
    # Tests of the jail: a body running inside it imports as a worker would, from what the jail lets it read.
    "autograder/tests/test_mounts.py": "inside a jail, a worker's import path",
    # The student side is imported from a release's root, never installed: the one place that says where.
    "tools/__init__.py": "tools.student_side(): solutions/ (minddp, grading, answers), as workers find it",
}


def test_no_import_circle():
    found = imports.circles(imports.graph())
    assert not found, "import circles (`python -m tools.imports` lists them): " + "; ".join(
        " <-> ".join(c) for c in found)


def test_the_checks_and_the_pool_import_one_way():
    """The graph sees what the fork server and the workers import by name (strings such as
    "checks.scenarios:warm_up"); the pool names no scenario module, and the registry, not checks.py,
    imports the parts."""
    edges = imports.graph()
    assert {"solutions/checks/error_text.py", "solutions/minddp/reducer.py"} <= edges["solutions/checks/scenarios.py"]
    assert "solutions/checks/scenarios.py" in edges["solutions/checks/check.py"]  # by name, as workers run it
    assert "solutions/checks/part3.py" in edges["solutions/checks/registry.py"]
    reach, todo = set(), list(edges["solutions/checks/pool.py"])
    while todo:
        path = todo.pop()
        if path not in reach:
            reach.add(path)
            todo.extend(edges[path])
    assert "solutions/checks/scenarios.py" not in reach, sorted(reach)


def test_no_two_modules_share_a_name():
    shared = imports.shared_names()
    assert not shared, f"modules or packages that share a name: {shared}"


def test_sys_path_is_edited_only_where_code_runs_from_a_bare_folder():
    unexplained = [edit for edit in imports.path_edits() if edit.split(":")[0] not in PATH_EDITS]
    assert not unexplained, ("sys.path edited outside the places that must (PATH_EDITS says why each may): "
                             f"{unexplained}; import the staff packages (pyproject.toml) instead")


def test_the_checker_finds_a_circle(tmp_path):
    """The graph reads lazy imports and import_module strings: a circle made of those is found."""
    edges = {"a.py": {"b.py"}, "b.py": {"c.py"}, "c.py": {"a.py"}, "d.py": {"a.py"}}
    assert imports.circles(edges) == [["a.py", "b.py", "c.py"]]
    import ast
    tree = ast.parse("def f():\n    import x.y\n    importlib.import_module('p.q')\nfrom .r import s\nW = 'u.v:w'\n")
    assert {"x.y", "p.q", "checks.r", "checks.r.s", "u.v"} <= imports.imported_names("solutions/checks/t.py", tree)


def test_make_runs_this_trees_grader_whatever_the_venv_points_at(tmp_path):
    """A second checkout (or git worktree) sharing .venv re-points the editable install's `grader` at itself;
    the Makefile puts this tree's first, so each tree's commands run its own code. A foreign `grader` earlier
    on the path stands in for the other tree's."""
    import subprocess
    foreign = tmp_path / "grader"
    foreign.mkdir()
    (foreign / "__init__.py").write_text("")
    probe = 'which-grader: ; @$(PY) -c "import grader; print(grader.__file__)"'
    done = subprocess.run(["make", "-s", "--no-print-directory", "-C", REPO, "--eval", probe, "which-grader"],
                          env={**os.environ, "PYTHONPATH": str(tmp_path)}, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == os.path.join(REPO, "autograder", "grader", "__init__.py"), done.stdout
