"""Hiding tests from the public release: '# HIDDEN' on a def/class line, '# HIDDEN FILE' for a file."""

from __future__ import annotations

import ast
import os
import textwrap

import pytest

from conftest import write
from markers import MarkerError, strip_hidden
from release import ReleaseError, build_release

FILE = "solutions/tests/test_x.py"

SOURCE = textwrap.dedent('''\
    import pytest


    def test_public():
        assert True


    # Checks the secret edge case.
    @pytest.mark.parametrize("n", [1, 2])
    def test_secret(n):  # HIDDEN
        assert n


    class TestHiddenGroup:  # HIDDEN
        def test_a(self):
            pass


    def test_also_public():
        assert True
    ''')


def test_hidden_defs_go_with_their_decorators_and_comment():
    public = strip_hidden(SOURCE, FILE)
    assert "test_secret" not in public and "secret edge case" not in public and "parametrize" not in public
    assert "TestHiddenGroup" not in public and "def test_a(" not in public
    assert "def test_public():\n    assert True\n\n\ndef test_also_public():" in public
    names = [node.name for node in ast.parse(public).body if isinstance(node, ast.FunctionDef)]
    assert names == ["test_public", "test_also_public"]


def test_hidden_last_def_leaves_no_trailing_blank_lines():
    public = strip_hidden("def test_a():\n    pass\n\n\ndef test_b():  # HIDDEN\n    pass\n", FILE)
    assert public == "def test_a():\n    pass\n"


def test_hidden_file_is_left_out():
    assert strip_hidden('"""Secret tests."""\n# HIDDEN FILE\n\ndef test_x():\n    pass\n', FILE) is None


@pytest.mark.parametrize("source, line", [
    ("x = 1  # HIDDEN\n", 1),  # not a def
    ("class T:\n    def test_m(self):  # HIDDEN\n        pass\n", 2),  # not top level
    ("# HIDDEN\ndef test_x():\n    pass\n", 1),  # alone on its line: that is what HIDDEN FILE is for
    ("def test_x():  # HIDDEN FILE\n    pass\n", 1),  # HIDDEN FILE after code
    ("def test_x():  # HIDDEN TEST\n    pass\n", 1),  # unknown form
])
def test_misplaced_hidden_markers_name_file_and_line(source, line):
    with pytest.raises(MarkerError) as error:
        strip_hidden(source, FILE)
    assert str(error.value).startswith(f"{FILE}:{line}: ")


def test_release_leaves_hidden_tests_out(mini):
    write(os.path.join(mini.solutions, "tests", "test_more.py"), SOURCE)
    write(os.path.join(mini.solutions, "tests", "test_secret.py"), "# HIDDEN FILE\ndef test_s():\n    pass\n")
    files = build_release(mini).files
    assert "tests/test_secret.py" not in files
    public = str(files["tests/test_more.py"], "utf-8")
    assert "test_public" in public and "test_secret" not in public


def test_a_part_whose_test_file_is_hidden_is_an_error(mini):
    write(os.path.join(mini.solutions, "tests", "test_part.py"), "# HIDDEN FILE\ndef test_s():\n    pass\n")
    with pytest.raises(ReleaseError, match="names the test file tests/test_part.py, which is not in the public"):
        build_release(mini)
