"""Solution regions -> stubs (the rules are in tools/README.md).

Every error is a ``MarkerError`` whose message starts with ``file:line:`` and says what to fix.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from dataclasses import dataclass

from tools.student.course import FunctionNode, iter_functions, stub_message

BEGIN_RE = re.compile(r"# BEGIN SOLUTION(?:\s+hint:\s*(?P<hint>\S.*)|\s+design:\s*(?P<design>\S.*))?$")
END_RE = re.compile(r"# END SOLUTION$")
# Anything that looks like a solution marker but is not one of the two forms above is a mistake, not a
# comment: a typo'd marker would otherwise ship the solution to students. "Looks like": SOLUTION in upper
# case anywhere in a comment, or begin/end + solution in any case.
SOLUTION_WORD_RE = re.compile(r"SOLUTION")
SOLUTION_PHRASE_RE = re.compile(r"#\s*(begin|end)\W*solution", re.IGNORECASE)
MARKER_FORMS = ("'# BEGIN SOLUTION' (or '# BEGIN SOLUTION  hint: text', '# BEGIN SOLUTION  design: text') and "
                "'# END SOLUTION'")


class MarkerError(ValueError):
    """A malformed marker; the message is ``file:line: what is wrong and how to fix it``."""


@dataclass(frozen=True)
class Marker:
    kind: str  # "begin" or "end"
    line: int
    col: int
    hint: str | None = None
    design: str | None = None


@dataclass(frozen=True)
class Region:
    """Lines ``begin`` .. ``end`` (the marker lines, 1-based, inclusive) of one solution region.

    A region is a stub (a ``raise`` in its function) unless it has a ``design`` text: then it is part of the
    student's design (state, helpers, a record type) and the stub is only a comment saying what goes there.
    """

    begin: int
    end: int
    indent: str
    hint: str | None
    design: str | None = None


@dataclass(frozen=True)
class PlacedRegion:
    region: Region
    qualname: str  # the function whose body holds the region ("<module>" or the class for a design region)
    at_tail: bool  # nothing follows the region in that body
    defines: tuple[str, ...] = ()  # a design region's functions (the stub leaves them to the student)


def _is_solution_like(text: str) -> bool:
    return bool(SOLUTION_WORD_RE.search(text) or SOLUTION_PHRASE_RE.match(text))


def scan_markers(source: str, filename: str) -> list[Marker]:
    """Every solution marker in ``source``'s comments (tokenize, so strings never count)."""
    lines = source.splitlines()
    markers = []
    try:
        comments = [t for t in tokenize.generate_tokens(io.StringIO(source).readline) if t.type == tokenize.COMMENT]
    except (tokenize.TokenError, SyntaxError) as error:
        raise MarkerError(f"{filename}:1: cannot tokenize the file ({error}); fix its syntax first") from None
    for token in comments:
        line, col = token.start
        text = token.string.rstrip()
        alone = not lines[line - 1][:col].strip()
        marker = _marker(text, line, col, alone, filename)
        if marker is not None:
            markers.append(marker)
    return markers


def _marker(text: str, line: int, col: int, alone: bool, filename: str) -> Marker | None:
    where = f"{filename}:{line}"
    if _is_solution_like(text):
        begin, end = BEGIN_RE.match(text), END_RE.match(text)
        if not (begin or end):
            raise MarkerError(f"{where}: unknown solution marker {text!r}; the markers are {MARKER_FORMS}")
        if not alone:
            raise MarkerError(f"{where}: a solution marker must be alone on its line, not after code")
        return Marker("begin", line, col, begin.group("hint"), begin.group("design")) if begin \
            else Marker("end", line, col)
    return None


def pair_regions(markers: list[Marker], filename: str) -> list[Region]:
    """BEGIN/END markers -> regions; nesting, a stray END or an unclosed BEGIN is an error."""
    regions, opened = [], None
    for marker in markers:
        if marker.kind == "begin":
            if opened is not None:
                raise MarkerError(f"{filename}:{marker.line}: BEGIN SOLUTION inside the region opened at line "
                                  f"{opened.line}; regions do not nest: add '# END SOLUTION' before it")
            opened = marker
        elif marker.kind == "end":
            if opened is None:
                raise MarkerError(f"{filename}:{marker.line}: END SOLUTION without a BEGIN SOLUTION before it")
            if marker.col != opened.col:
                raise MarkerError(f"{filename}:{marker.line}: END SOLUTION is indented differently from its "
                                  f"BEGIN SOLUTION (line {opened.line}); indent both like the code between them")
            regions.append(Region(opened.line, marker.line, " " * opened.col, opened.hint, opened.design))
            opened = None
    if opened is not None:
        raise MarkerError(f"{filename}:{opened.line}: BEGIN SOLUTION is never closed; add '# END SOLUTION' "
                          "after the solution code")
    return regions


# -- where a region sits --------------------------------------------------------------------------------------

def _parents(tree: ast.AST) -> dict[ast.AST, tuple[ast.AST, str]]:
    """statement -> (the node whose list field holds it, that field's name)."""
    parents = {}
    for node in ast.walk(tree):
        for field, value in ast.iter_fields(node):
            if isinstance(value, list):
                for child in value:
                    if isinstance(child, ast.stmt):
                        parents[child] = (node, field)
    return parents


def place_region(tree: ast.Module, region: Region, filename: str,
                 parents: dict[ast.AST, tuple[ast.AST, str]] | None = None) -> PlacedRegion:
    """Check that ``region`` holds whole statements of one function body; say which function.

    The stub replaces the region by a ``raise``. Inside an ``if``/loop/``with`` the rest of the block could
    be left empty or half a statement could remain, so regions must sit directly in a function's body.
    """
    parents = _parents(tree) if parents is None else parents
    where = f"{filename}:{region.begin}"
    inside = [s for s in parents if region.begin < s.lineno < region.end]
    if not inside:
        raise MarkerError(f"{where}: empty solution region; put the solution code between the markers")
    for statement in parents:
        if statement.lineno < region.begin < (statement.end_lineno or 0) and \
                not isinstance(statement, (*FunctionNode, ast.ClassDef)):
            raise MarkerError(f"{where}: the region is inside the {type(statement).__name__.lower()} statement "
                              f"of line {statement.lineno}; a region must hold whole statements of a function "
                              "body: move both markers out to the function's body level")
    outermost = [s for s in inside if parents[s][0] not in inside]
    for statement in outermost:
        if (statement.end_lineno or 0) > region.end:
            raise MarkerError(f"{filename}:{statement.lineno}: this statement continues past END SOLUTION "
                              f"(line {region.end}); a region must hold whole statements")
    owner, field = parents[outermost[0]]
    bodies = (*FunctionNode, ast.ClassDef, ast.Module) if region.design else FunctionNode
    if not isinstance(owner, bodies) or field != "body" or any(parents[s] != (owner, field) for s in outermost):
        raise MarkerError(f"{where}: solution region outside a function body; regions must sit in the body of "
                          "a function or method (the stub becomes `raise NotImplementedError` there)"
                          + ("" if region.design else "; a '# BEGIN SOLUTION  design: text' region may also "
                             "hold whole definitions of a class body or of the module"))
    if outermost[0].col_offset != len(region.indent):
        raise MarkerError(f"{where}: indent the markers like the code they enclose (column "
                          f"{outermost[0].col_offset}, not {len(region.indent)})")
    names = {node: name for name, node in _iter_scopes(tree)}
    defines = tuple(name for name, node in iter_functions(tree) if region.begin < node.lineno < region.end)
    return PlacedRegion(region, names.get(owner, "<module>"), at_tail=owner.body[-1] in outermost, defines=defines)


def _iter_scopes(tree: ast.AST, prefix: str = ""):
    """Every function and class with its qualified name (a design region may sit in a class body)."""
    for child in ast.iter_child_nodes(tree):
        if isinstance(child, (*FunctionNode, ast.ClassDef)):
            yield prefix + child.name, child
            yield from _iter_scopes(child, prefix + child.name + ".")
        else:
            yield from _iter_scopes(child, prefix)


def find_regions(source: str, filename: str) -> list[PlacedRegion]:
    """Every solution region, placed and checked."""
    regions = pair_regions(scan_markers(source, filename), filename)
    if not regions:
        return []
    tree = _parse(source, filename)
    parents = _parents(tree)
    return [place_region(tree, region, filename, parents) for region in regions]


def _parse(source: str, filename: str) -> ast.Module:
    try:
        return ast.parse(source, filename)
    except SyntaxError as error:
        raise MarkerError(f"{filename}:{error.lineno}: syntax error: {error.msg}") from None


# -- stubs ------------------------------------------------------------------------------------------------------

def stub_lines(placed: PlacedRegion, part: int, section: str) -> list[str]:
    """What replaces a region: a comment saying what to do, the hint if any, and the raise; for a design
    region only the comment (what is yours to design there)."""
    indent = placed.region.indent
    if placed.region.design:
        return [f"{indent}# YOUR DESIGN (handout §{section}): {placed.region.design}"]
    todo = "# YOUR CODE HERE: replace this raise"
    if not placed.at_tail:  # a raise mid-body makes the provided code after it unreachable until replaced
        todo += "; the provided code below it then runs"
    lines = [f"{indent}{todo}."]
    if placed.region.hint:
        lines.append(f"{indent}# Hint: {placed.region.hint}")
    bonus = (placed.region.hint or "").startswith("Bonus")  # a hint "Bonus ..." marks an optional part
    own = re.search(r"handout §([\d.]+)", placed.region.hint or "") if bonus else None
    section = own.group(1) if own else section  # a bonus stub points at the bonus's own section
    lines.append(f'{indent}raise NotImplementedError("{stub_message(part, placed.qualname, section, bonus)}")')
    return lines


def make_stubs(source: str, filename: str, part: int, section: str) -> tuple[str, list[PlacedRegion]]:
    """``source`` with every solution region replaced by its stub; the regions that were replaced."""
    placed = find_regions(source, filename)
    if not placed:
        raise MarkerError(f"{filename}:1: listed in student_files.json but has no '# BEGIN SOLUTION' region; "
                          "mark what students write, or remove the file from the list")
    lines = source.splitlines()
    for region in sorted(placed, key=lambda p: p.region.begin, reverse=True):  # bottom-up keeps line numbers
        lines[region.region.begin - 1:region.region.end] = stub_lines(region, part, section)
    stubbed = "\n".join(lines) + "\n"
    _check_stubbed(source, stubbed, filename, {name for p in placed for name in p.defines})
    return stubbed, placed


def _check_stubbed(source: str, stubbed: str, filename: str, designed: set[str]) -> None:
    """Guard against the generator itself: the stub compiles and keeps every function of the solution but
    those of design regions (``designed``)."""
    try:
        tree = ast.parse(stubbed, filename)
    except SyntaxError as error:
        raise MarkerError(f"{filename}:{error.lineno}: the generated stub does not compile ({error.msg}); "
                          "check the solution markers around this line") from None
    before = {name for name, _ in iter_functions(ast.parse(source, filename))} - designed
    after = {name for name, _ in iter_functions(tree)}
    if before != after:
        raise MarkerError(f"{filename}:1: the stub lost function(s) {sorted(before - after)}; only a "
                          "'# BEGIN SOLUTION  design: text' region may hold a whole def")


def refuse_markers(source: str, filename: str) -> None:
    """Solution markers are only for the files listed in student_files.json."""
    solution = scan_markers(source, filename)
    if solution:
        raise MarkerError(f"{filename}:{solution[0].line}: solution marker in a file that is not in "
                          "solutions/student_files.json; add the file there or remove the markers")
