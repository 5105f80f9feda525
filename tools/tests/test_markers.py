"""Solution regions -> stubs: the stub keeps signature, docstring and scaffolding; bad markers say file:line."""

from __future__ import annotations

import ast
import textwrap

import pytest

from tools.markers import MarkerError, make_stubs, refuse_markers
from tools.student.course import find_stubs

FILE = "solutions/minddp/x.py"


def stubs_of(source: str) -> str:
    return make_stubs(textwrap.dedent(source), FILE, part=2, section="2")[0]


def test_tail_region_becomes_the_raise():
    stub = stubs_of('''
        def f(a: int, b: int = 2) -> int:
            """Docstring stays."""
            scaffold = a + 1  # provided, outside the markers
            # BEGIN SOLUTION
            secret = scaffold * b
            return secret
            # END SOLUTION
        ''')
    assert 'def f(a: int, b: int = 2) -> int:\n    """Docstring stays."""\n    scaffold = a + 1' in stub
    assert 'raise NotImplementedError("Part 2: f — see handout §2")' in stub
    assert "secret" not in stub and "SOLUTION" not in stub
    assert "provided code below" not in stub  # nothing follows a tail region
    ast.parse(stub)


def test_mid_body_region_keeps_the_provided_code_after_the_raise():
    stub = stubs_of('''
        class Reducer:
            def prepare(self, unused=()):
                if unused is None:
                    raise ValueError("no")
                # BEGIN SOLUTION
                self.pending = 3
                # END SOLUTION
                self.unused = list(unused)
        ''')
    lines = stub.splitlines()
    raise_at = next(i for i, line in enumerate(lines) if "NotImplementedError" in line)
    assert lines[raise_at].strip() == 'raise NotImplementedError("Part 2: Reducer.prepare — see handout §2")'
    assert "the provided code below it then runs" in lines[raise_at - 1]
    assert lines[raise_at + 1].strip() == "self.unused = list(unused)"
    assert "self.pending" not in stub
    assert [s.qualname for s in find_stubs(stub, FILE)] == ["Reducer.prepare"]


def test_hint_becomes_a_comment_in_the_stub():
    stub = stubs_of('''
        def f():
            # BEGIN SOLUTION  hint: divmod does both at once
            return divmod(7, 2)
            # END SOLUTION
        ''')
    assert "    # Hint: divmod does both at once\n    raise NotImplementedError" in stub


def test_markers_inside_strings_are_not_markers():
    stub = stubs_of('''
        def f():
            """Write:
            # BEGIN SOLUTION
            """
            # BEGIN SOLUTION
            return 1
            # END SOLUTION
        ''')
    assert stub.count("# BEGIN SOLUTION") == 1  # the docstring's, untouched
    ast.parse(stub)


def test_every_function_keeps_its_name_and_only_regions_change():
    source = textwrap.dedent('''
        def a():
            # BEGIN SOLUTION
            return 1
            # END SOLUTION


        def b():
            return 2
        ''')
    stub, placed = make_stubs(source, FILE, 1, "1")
    assert [p.qualname for p in placed] == ["a"]
    assert "def b():\n    return 2\n" in stub


def test_design_regions_leave_only_a_comment_and_may_hold_whole_definitions():
    stub, placed = make_stubs(textwrap.dedent('''
        import dataclasses


        # BEGIN SOLUTION  design: what you keep per bucket
        @dataclasses.dataclass
        class Record:
            count: int

            def done(self) -> bool:
                return self.count == 0
        # END SOLUTION


        class Reducer:
            def __init__(self):
                self.params = []
                # BEGIN SOLUTION  design: your state
                self.records = []
                # END SOLUTION
                self.start()

            def start(self):
                # BEGIN SOLUTION
                self.records.append(Record(1))
                # END SOLUTION

            # BEGIN SOLUTION  design: your helpers
            def helper(self):
                return self.records
            # END SOLUTION
        '''), FILE, 3, "3")
    assert "# YOUR DESIGN (handout §3): what you keep per bucket\n" in stub
    assert "        self.params = []\n        # YOUR DESIGN (handout §3): your state\n        self.start()" in stub
    assert "    # YOUR DESIGN (handout §3): your helpers" in stub
    assert "Record" not in stub and "helper(" not in stub and "records" not in stub
    assert [s.qualname for s in find_stubs(stub, FILE)] == ["Reducer.start"]  # a design region raises nothing
    assert [(p.qualname, p.defines) for p in placed] == [
        ("<module>", ("Record.done",)), ("Reducer.__init__", ()), ("Reducer.start", ()),
        ("Reducer", ("Reducer.helper",))]
    ast.parse(stub)


def test_a_design_region_may_not_empty_its_body():
    with pytest.raises(MarkerError, match="does not compile"):
        stubs_of('''
            class C:
                # BEGIN SOLUTION  design: everything
                def f(self):
                    return 1
                # END SOLUTION
            ''')


MALFORMED = {
    "nested BEGIN": ('''
        def f():
            # BEGIN SOLUTION
            x = 1
            # BEGIN SOLUTION
            return x
            # END SOLUTION
        ''', 5, "regions do not nest"),
    "END without BEGIN": ('''
        def f():
            return 1
            # END SOLUTION
        ''', 4, "END SOLUTION without a BEGIN SOLUTION"),
    "unclosed BEGIN": ('''
        def f():
            # BEGIN SOLUTION
            return 1
        ''', 3, "never closed"),
    "unknown marker (typo)": ('''
        def f():
            # BEGIN SOLUTIONS
            return 1
            # END SOLUTION
        ''', 3, "unknown solution marker"),
    "unknown marker (lower case)": ('''
        def f():
            # begin solution
            return 1
        ''', 3, "unknown solution marker"),
    "unknown marker (trailing words)": ('''
        def f():
            # BEGIN SOLUTION
            return 1
            # END SOLUTION here
        ''', 5, "unknown solution marker"),
    "marker after code": ('''
        def f():
            return 1  # BEGIN SOLUTION
        ''', 3, "alone on its line"),
    "region inside an if": ('''
        def f(x):
            if x:
                # BEGIN SOLUTION
                return 1
                # END SOLUTION
            return 0
        ''', 4, "inside the if statement of line 3"),
    "region outside a function": ('''
        # BEGIN SOLUTION
        X = 1
        # END SOLUTION
        ''', 2, "outside a function body"),
    "region in a class body": ('''
        class C:
            # BEGIN SOLUTION
            x = 1
            # END SOLUTION
        ''', 3, "outside a function body"),
    "region cuts a statement": ('''
        def f(x):
            # BEGIN SOLUTION
            for i in x:
                print(i)
            # END SOLUTION
                print(i + 1)
        ''', 4, "continues past END SOLUTION"),
    "empty region": ('''
        def f():
            # BEGIN SOLUTION
            # nothing here
            # END SOLUTION
            return 1
        ''', 3, "empty solution region"),
    "END indented unlike BEGIN": ('''
        def f():
            # BEGIN SOLUTION
            return 1
        # END SOLUTION
        ''', 5, "indented differently"),
}


@pytest.mark.parametrize("source, line, message", MALFORMED.values(), ids=MALFORMED.keys())
def test_malformed_markers_stop_generation_with_file_and_line(source, line, message):
    with pytest.raises(MarkerError) as error:
        stubs_of(source)
    assert str(error.value).startswith(f"{FILE}:{line}: "), str(error.value)
    assert message in str(error.value)


def test_student_file_without_a_region_is_an_error():
    with pytest.raises(MarkerError, match=rf"^{FILE}:1: listed in student_files.json but has no"):
        stubs_of("def f():\n    return 1\n")


def test_solution_markers_outside_student_files_are_an_error():
    source = "def f():\n    # BEGIN SOLUTION\n    return 1\n    # END SOLUTION\n"
    with pytest.raises(MarkerError, match=r"^solutions/tests/t.py:2: solution marker in a file that is not in"):
        refuse_markers(source, "solutions/tests/t.py")
