"""The repository's shape stays one a TA can hold in their head: no import circle, no two modules or packages
with one name, and sys.path edited only where code must run from a bare folder (each place says why)."""

from tools import imports

# Where sys.path may be edited, and why: code that runs from a folder nothing installs.
PATH_EDITS = {
    # The grader runs on Gradescope from the bare source folder: it finds the check library in harness/.
    "autograder/grader/__init__.py": "the check library, from the source folder's harness/",
    # ... and the release's one reader of student_files.json (course.py) in its skeleton/.
    "autograder/grader/run.py": "course.py, from the source folder's skeleton/",
    # A student worker's imports: the code under test first, as a student's `make test` finds it.
    "autograder/grader/zygote.py": "a student worker's import path",
    "solutions/grading/pool.py": "a worker's import path (the code under test, the harness)",
}


def test_no_import_circle():
    found = imports.circles(imports.graph())
    assert not found, "import circles (`python tools/imports.py` lists them): " + "; ".join(
        " <-> ".join(c) for c in found)


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
    tree = ast.parse("def f():\n    import x.y\n    importlib.import_module('p.q')\nfrom .r import s\n")
    assert {"x.y", "p.q", "grading.r", "grading.r.s"} <= imports.imported_names("solutions/grading/t.py", tree)
