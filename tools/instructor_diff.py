"""`assign.py diff`: per student file and function, the stub (or a student's version) next to the solution.

Functions are matched by qualified name (``Reducer.mark_variable_ready``), so a submission may move code
around or add helpers without confusing the comparison. A submission is compared as code: comments,
docstrings and blank lines dropped on both sides (``comments=True`` keeps them), so a leftover
``# YOUR CODE HERE`` is not a difference. With a results.json (``read_verdicts``), each part's first function
carries that part's score, and each failed entry's whole message (as the student reads it) sits under the
function it concerns (``concerned``).
"""

from __future__ import annotations

import ast
import difflib
import io
import os
import re
import textwrap
import tokenize
from dataclasses import dataclass, field

from grader.stage import locate, read_upload  # the autograder's one rule for finding files
from tools.markers import BEGIN_RE, END_RE, PlacedRegion
from tools.student.course import StudentFile, find_stubs, iter_functions

ANSI = {"-": "\033[31m", "+": "\033[32m", "@": "\033[36m", "title": "\033[1m", "reset": "\033[0m"}


@dataclass
class FunctionReport:
    entry: StudentFile
    qualname: str
    solution_lines: int
    status: str  # "stub" (stub mode) or, for a submission: identical / differs / still a stub / missing
    diff: list[str] = field(default_factory=list)


def _is_marker(line: str) -> bool:
    return bool(BEGIN_RE.match(line.strip()) or END_RE.match(line.strip()))


def function_lines(lines: list[str], node: ast.AST, through: int = 0) -> list[str]:
    """The lines of a def (decorators included), extended to ``through`` (a tail region's END marker)."""
    start = min([node.lineno, *(d.lineno for d in node.decorator_list)])
    return lines[start - 1:max(node.end_lineno or node.lineno, through)]


def solution_functions(text: str, placed: list[PlacedRegion]) -> dict[str, tuple[list[str], int]]:
    """qualname -> (the function's solution source without marker lines, its solution line count): every
    function holding a region, and every whole function of a design region (all of it is solution)."""
    lines = text.splitlines()
    nodes = dict(iter_functions(ast.parse(text)))
    owners: dict[str, list] = {}
    for p in placed:
        if p.qualname in nodes:
            owners.setdefault(p.qualname, []).append(p.region)
        for name in p.defines:
            owners.setdefault(name, [])
    result = {}
    for qualname, mine in owners.items():
        source = function_lines(lines, nodes[qualname], through=max((r.end for r in mine), default=0))
        source = [line for line in source if not _is_marker(line)]
        count = sum(1 for r in mine for line in lines[r.begin:r.end - 1] if line.strip()) if mine \
            else sum(1 for line in source if line.strip())
        result[qualname] = (source, count)
    return result


def designed(placed: list[PlacedRegion]) -> set[str]:
    """The functions the stubs leave out entirely: the student designs that part."""
    return {name for p in placed for name in p.defines}


class Submission:
    """A student's folder or .zip, read and searched exactly as the autograder stages it."""

    def __init__(self, path: str):
        if not os.path.exists(path):
            raise FileNotFoundError(f"{path}: not a folder or a .zip file")
        self.path = path
        upload = read_upload(path)
        self.files, self.problems = upload.files, upload.problems

    def text(self, relpath: str) -> str | None:
        """The file the autograder would grade for ``relpath``; None if absent."""
        hits = locate(list(self.files), relpath)
        return self.files[hits[0]].decode("utf-8", "replace") if hits else None


def code_only(lines: list[str]) -> list[str]:
    """A function's lines without comments, docstrings and blank lines (the code as Python reads it)."""
    dedented = textwrap.dedent("\n".join(lines))
    shift = len(lines[0]) - len(dedented.splitlines()[0]) if lines else 0
    try:
        tree = ast.parse(dedented)
        comments = {t.start[0]: t.start[1] + shift for t in tokenize.generate_tokens(io.StringIO(dedented).readline)
                    if t.type == tokenize.COMMENT}
    except (SyntaxError, tokenize.TokenError):
        return lines  # compare it as it is
    docstrings = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and body and \
                isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) and \
                isinstance(body[0].value.value, str):
            docstrings.update(range(body[0].lineno, (body[0].end_lineno or body[0].lineno) + 1))
    kept = [line[:comments[n]].rstrip() if n in comments else line.rstrip()
            for n, line in enumerate(lines, start=1) if n not in docstrings]
    return [line for line in kept if line.strip()]


def _unified(a: list[str], b: list[str], names: tuple[str, str], context: int) -> list[str]:
    return list(difflib.unified_diff(a, b, *names, n=context, lineterm=""))


def stub_reports(entry: StudentFile, solution: str, stub: str, placed: list[PlacedRegion],
                 context: int = 2) -> list[FunctionReport]:
    """Stub vs solution for each function of ``entry`` that holds a solution region."""
    stub_lines, stub_nodes = stub.splitlines(), dict(iter_functions(ast.parse(stub)))
    reports = []
    for qualname, (source, count) in solution_functions(solution, placed).items():
        stubbed = function_lines(stub_lines, stub_nodes[qualname]) if qualname in stub_nodes else []
        diff = _unified(stubbed, source, ("stub", "solution"), context)
        reports.append(FunctionReport(entry, qualname, count, "stub", diff))
    return reports


def submission_reports(entry: StudentFile, solution: str, placed: list[PlacedRegion], submitted: str | None,
                       context: int = 2, comments: bool = False) -> tuple[list[FunctionReport], str]:
    """Solution vs the student's version of each function (as code only, unless ``comments``); the note says
    what is missing or added."""
    functions = solution_functions(solution, placed)
    if submitted is None:
        return [FunctionReport(entry, q, n, "missing") for q, (_, n) in functions.items()], "file missing"
    try:
        tree = ast.parse(submitted)
    except SyntaxError as error:
        return ([FunctionReport(entry, q, n, "missing") for q, (_, n) in functions.items()],
                f"does not compile: line {error.lineno}: {error.msg}")
    lines, nodes = submitted.splitlines(), dict(iter_functions(tree))
    stubbed = {s.qualname for s in find_stubs(submitted, entry.path)}
    reports = []
    for qualname, (source, count) in functions.items():
        if qualname not in nodes:  # a function of the reference's design need not exist in theirs
            reports.append(FunctionReport(entry, qualname, count, "designed otherwise" if qualname in
                                          designed(placed) else "missing"))
            continue
        theirs = [line for line in function_lines(lines, nodes[qualname]) if not _is_marker(line)]
        mine = source if comments else code_only(source)
        diff = _unified(mine, theirs if comments else code_only(theirs), ("solution", "submission"), context)
        status = "still a stub" if qualname in stubbed else "differs" if diff else "identical"
        reports.append(FunctionReport(entry, qualname, count, status, diff))
    solution_names = {name for name, _ in iter_functions(ast.parse(solution))}
    added = [name for name in nodes if name not in solution_names]
    return reports, f"added: {', '.join(added)}" if added else ""


@dataclass
class Verdicts:
    """What a results.json says, placed beside the code: each part's score (at its first function) and each
    failed entry's whole message (at the function it concerns: ``concerned``)."""

    headers: dict[str, str]  # part -> its score line
    failed: list[dict]  # the failed entries, in results.json's order
    names: dict[str, set[str]] = field(default_factory=dict)  # check number -> the functions its runs call


def part_of(number: str) -> str:
    return str(number).split(".")[0]


def read_verdicts(results: dict, bonus_points: dict[str, float] | None = None,
                  names: dict[str, set[str]] | None = None) -> Verdicts:
    """``bonus_points``: each bonus part's points (its entries' maximum is 0: extra credit); ``names``: the
    functions each check's runs call (``check_function_names``), to place its failures."""
    tests = [t for t in results.get("tests") or [] if part_of(t.get("number", "")) != "0"]  # not the staff entry
    headers = {}
    for part in dict.fromkeys(part_of(t.get("number", "")) for t in tests):
        mine = [t for t in tests if part_of(t.get("number", "")) == part]
        got, full = sum(t.get("score", 0) for t in mine), sum(t.get("max_score", 0) for t in mine)
        passed = sum(t.get("status") == "passed" for t in mine)
        if part.isdigit():
            points = f"{got:g}/{full:g} points"
        else:  # extra credit: results.json gives these entries a maximum of 0
            of = (bonus_points or {}).get(part)
            points = f"{got:g}" + (f"/{of:g}" if of is not None else "") + " points of extra credit"
        label = f"Part {part}" if part.isdigit() else f"Bonus {part}"
        headers[part] = f"   {label} verdicts: {points}, {passed} of {len(mine)} entries passed"
    return Verdicts(headers, [t for t in tests if t.get("status") != "passed"], names or {})


def check_function_names(checks: list) -> dict[str, set[str]]:
    """{check number: the names its runs' arguments give as ``fn`` (Part 5's cases name the function they
    call)}: where a failure's message does not name the function, its check may."""
    def walk(value, found: set[str]) -> set[str]:
        if isinstance(value, dict):
            if isinstance(value.get("fn"), str):
                found.add(value["fn"])
            for item in value.values():
                walk(item, found)
        elif isinstance(value, (list, tuple)):
            for item in value:
                walk(item, found)
        return found
    return {check.number: walk([run.kwargs for run in check.runs], set()) for check in checks}


def concerned(test: dict, reports: list[FunctionReport], names: set[str]) -> FunctionReport:
    """The function a failed entry concerns, of ``reports`` (its part's): one its message, its name or its
    check's runs name (one that differs from the solution first), else the first that differs, else the first."""
    text = f"{test.get('name', '')}\n{test.get('output', '')}"

    def named(r: FunctionReport) -> bool:
        short = r.qualname.split(".")[-1]
        return short in names or r.qualname in names or re.search(rf"\b{re.escape(short)}\b", text) is not None
    differs = [r for r in reports if r.status not in ("identical", "designed otherwise")]
    return next((r for r in reports if named(r) and r in differs), None) or next(
        (r for r in reports if named(r)), None) or (differs or reports)[0]


def failure_lines(test: dict) -> list[str]:
    """A failed entry: its number, name and points, then its whole message as the student reads it."""
    points = f"{test.get('score', 0):g}/{test.get('max_score', 0):g}" if test.get("max_score") else \
        f"{test.get('score', 0):g}, extra credit"
    lines = [f"   ✗ {test.get('number')} {test.get('name', '')} ({points} points)"]
    return lines + [f"     │ {line}".rstrip() for line in str(test.get("output", "")).strip("\n").splitlines()]


def placed_verdicts(reports: list[FunctionReport], verdicts: Verdicts) -> dict[int, list[str]]:
    """{index of a report: the verdict lines shown under it}: each part's score at its first function, each
    failure at the function it concerns (the bonus parts: of Parts 3 and 4, whose files they grade)."""
    placed: dict[int, list[str]] = {}
    of_part: dict[str, list[int]] = {}
    for i, r in enumerate(reports):
        for part in (str(r.entry.part), *(("A", "B") if str(r.entry.part) in ("3", "4") else ())):
            of_part.setdefault(part, []).append(i)
    for part, header in verdicts.headers.items():
        if of_part.get(part):
            placed.setdefault(of_part[part][0], []).append(header)
    for test in verdicts.failed:
        indices = of_part.get(part_of(test.get("number", "")))
        if indices:
            number = str(test.get("number", "")).rstrip("h")
            chosen = concerned(test, [reports[i] for i in indices], verdicts.names.get(number, set()))
            placed.setdefault(reports.index(chosen), []).extend(failure_lines(test))
    return placed


def render(reports: list[FunctionReport], notes: dict[str, str], color: bool, submission: bool,
           verdicts: Verdicts | None = None) -> str:
    paint = (lambda key, text: f"{ANSI[key]}{text}{ANSI['reset']}") if color else (lambda key, text: text)
    placed = placed_verdicts(reports, verdicts) if verdicts else {}
    out = []
    for i, r in enumerate(reports):
        title = f"── Part {r.entry.part} · {r.entry.path} · {r.qualname} · {r.solution_lines} solution lines"
        if submission:
            title += f" · {r.status}"
        out.append(paint("title", title))
        out += placed.get(i, [])
        for line in r.diff:
            out.append(paint(line[0], line) if line[:1] in "-+@" and not line.startswith(("---", "+++"))
                       else line)
        out.append("")
    out += summary_table(reports, notes, submission)
    return "\n".join(out)


def summary_table(reports: list[FunctionReport], notes: dict[str, str], submission: bool) -> list[str]:
    columns = ["Part", "File", "Functions", "Solution lines"]
    if submission:
        columns += ["Identical", "Differ", "Stubs left", "Missing", "Note"]
    rows, entries = [], list(dict.fromkeys(r.entry for r in reports))
    for entry in entries:
        mine = [r for r in reports if r.entry == entry]
        row = [str(entry.part), entry.path, str(len(mine)), str(sum(r.solution_lines for r in mine))]
        if submission:
            row += [str(sum(r.status == s for r in mine)) for s in ("identical", "differs", "still a stub",
                                                                     "missing")]
            row.append(notes.get(entry.path, ""))
        rows.append(row)
    rows.append(["", "total", str(len(reports)), str(sum(r.solution_lines for r in reports))]
                + ([str(sum(r.status == s for r in reports)) for s in ("identical", "differs", "still a stub",
                                                                       "missing")] + [""] if submission else []))
    widths = [max(len(row[i]) for row in [columns, *rows]) for i in range(len(columns))]
    text_columns = {1, len(columns) - 1} if submission else {1}
    fmt = lambda row: "  ".join(cell.ljust(w) if i in text_columns else cell.rjust(w)  # noqa: E731
                                for i, (cell, w) in enumerate(zip(row, widths, strict=True))).rstrip()
    return [fmt(columns), fmt(["-" * w for w in widths]), *map(fmt, rows)]
