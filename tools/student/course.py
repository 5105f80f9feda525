"""Course helper for the minddp homework (standard library only; the Makefile calls it).

    python course.py files                      the parts and the files you edit
    python course.py tests [PART]               the test files of PART (all tests without PART)
    python course.py test [PART] [-- OPTIONS]   run pytest on PART's tests (make test PART=reducer)
    python course.py submit [--force]           build submission.zip (make submit)

PART is a file's name without ``.py`` (``reducer``) or a part number (``3``). The list of files you edit
and their parts comes from ``student_files.json`` beside this file.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import re
import sys
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass

HERE = os.path.dirname(os.path.abspath(__file__))
CONFIG_NAME = "student_files.json"
SUBMISSION_NAME = "submission.zip"
RELEASE_STAMP = "release.json"  # which release this folder is (tools/release.py writes it; make submit ships it)
KINDS = ("code", "answers")  # answers: the written questions, one function per question (handout §6)

# A stub is `raise NotImplementedError(stub_message(...))`; the exact text lets `submit` (and staff tools)
# tell an unfinished stub from a NotImplementedError a student raises on purpose.
STUB_RE = re.compile(r"Part (\d+): ([\w.<>]+) — see handout §")


OPTIONAL = " (optional: bonus)"  # ends the message of a bonus stub; `make submit` lets it through


def stub_message(part: int, qualname: str, section: str, bonus: bool = False) -> str:
    return f"Part {part}: {qualname} — see handout §{section}" + (OPTIONAL if bonus else "")


class CourseError(Exception):
    """Something the user must fix; the message says what."""


@dataclass(frozen=True)
class StudentFile:
    """One file students edit (an entry of student_files.json)."""

    path: str  # relative, "/"-separated, the same in solutions/, assignment/ and the submission
    part: int
    name: str
    section: str
    tests: tuple[str, ...]
    kind: str = "code"

    @property
    def key(self) -> str:
        """What `make test PART=...` accepts besides the part number: the file name without .py."""
        return os.path.splitext(os.path.basename(self.path))[0]


def load_student_files(config_path: str) -> list[StudentFile]:
    """Read and check student_files.json; a mistake raises CourseError naming the entry and the field."""
    try:
        with open(config_path, encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, ValueError) as error:
        raise CourseError(f"{config_path}: cannot read the list of student files: {error}") from None
    entries = data.get("files") if isinstance(data, dict) else None
    if not isinstance(entries, list) or not entries:
        raise CourseError(f'{config_path}: expected {{"files": [{{"path": ..., "part": ...}}, ...]}}')
    files = [_student_file(config_path, i, entry) for i, entry in enumerate(entries)]
    paths = [f.path for f in files]
    duplicates = sorted({p for p in paths if paths.count(p) > 1})
    if duplicates:
        raise CourseError(f"{config_path}: listed more than once: {', '.join(duplicates)}")
    return files


def _student_file(config_path: str, index: int, entry: object) -> StudentFile:
    where = f"{config_path}: files[{index}]"
    if not isinstance(entry, dict):
        raise CourseError(f"{where}: expected an object with path, part, name, section, tests")
    fields = {"path": str, "part": int, "name": str, "section": str, "tests": list, "kind": str}
    for field, kind in fields.items():
        if field == "kind" and field not in entry:
            continue
        if not isinstance(entry.get(field), kind) or isinstance(entry.get(field), bool):
            raise CourseError(f"{where}: '{field}' must be a {kind.__name__}, got {entry.get(field)!r}")
    unknown = sorted(set(entry) - set(fields))
    if unknown:
        raise CourseError(f"{where}: unknown field(s) {', '.join(unknown)}; known: {', '.join(fields)}")
    path = entry["path"]
    if path.startswith("/") or "\\" in path or ".." in path.split("/"):
        raise CourseError(f"{where}: path {path!r} must be relative, '/'-separated, without '..'")
    kind = entry.get("kind", "code")
    if kind not in KINDS:
        raise CourseError(f"{where} ({path}): kind {kind!r} is not supported (supported: {', '.join(KINDS)})")
    if not entry["tests"] or not all(isinstance(t, str) for t in entry["tests"]):
        raise CourseError(f"{where}: 'tests' must list at least one test file path (make test PART=...)")
    return StudentFile(path, entry["part"], entry["name"], entry["section"], tuple(entry["tests"]), kind)


# -- finding functions and stubs ----------------------------------------------------------------------------

FunctionNode = (ast.FunctionDef, ast.AsyncFunctionDef)


def iter_functions(tree: ast.AST, prefix: str = "") -> Iterator[tuple[str, ast.AST]]:
    """Every function and method with its qualified name: ``Reducer.mark_variable_ready``, ``outer.inner``."""
    for child in ast.iter_child_nodes(tree):
        if isinstance(child, (*FunctionNode, ast.ClassDef)):
            name = prefix + child.name
            if isinstance(child, FunctionNode):
                yield name, child
            yield from iter_functions(child, name + ".")
        else:
            yield from iter_functions(child, prefix)


@dataclass(frozen=True)
class Stub:
    qualname: str  # the function the stub sits in ("<module>" outside any function)
    line: int
    part: int
    bonus: bool = False  # an optional (bonus) function: unfinished is fine


def find_stubs(source: str, filename: str) -> list[Stub]:
    """The unfinished stubs in ``source``: ``raise NotImplementedError("Part N: ... — see handout §N")``."""
    tree = ast.parse(source, filename)
    spans = [(node.lineno, node.end_lineno or node.lineno, name) for name, node in iter_functions(tree)]
    stubs = []
    for node in ast.walk(tree):
        message = _stub_text(node)
        if message is None:
            continue
        inside = [span for span in spans if span[0] <= node.lineno <= span[1]]
        qualname = max(inside)[2] if inside else "<module>"  # innermost = latest start
        stubs.append(Stub(qualname, node.lineno, int(STUB_RE.match(message).group(1)), message.endswith(OPTIONAL)))
    return sorted(stubs, key=lambda s: s.line)


def _stub_text(node: ast.AST) -> str | None:
    if not (isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call) and node.exc.args):
        return None
    func, arg = node.exc.func, node.exc.args[0]
    if isinstance(func, ast.Name) and func.id == "NotImplementedError" and isinstance(arg, ast.Constant) \
            and isinstance(arg.value, str) and STUB_RE.match(arg.value):
        return arg.value
    return None


# -- commands -----------------------------------------------------------------------------------------------

def resolve_part(files: list[StudentFile], part: str | None) -> list[str]:
    """Test paths for PART (a file stem or a part number); [] means every test."""
    if not part:
        return []
    chosen = [f for f in files if part in (f.key, str(f.part))]
    if not chosen:
        choices = ", ".join(f"{f.key} ({f.part})" for f in files)
        raise CourseError(f"unknown PART={part!r}; choose one of: {choices}")
    return list(dict.fromkeys(t for f in chosen for t in f.tests))


def parts_table(files: list[StudentFile]) -> str:
    rows = [f"  Part {f.part}  {f.name:<20}  handout §{f.section:<4}  edit {f.path:<26}  "
            f"make test PART={f.key}" for f in files]
    return "\n".join(rows)


def check_submission(root: str, files: list[StudentFile]) -> tuple[list[str], list[str]]:
    """(unfinished work, files that cannot be zipped at all) under ``root``; both empty when ready."""
    unfinished, missing = [], []
    for f in files:
        path = os.path.join(root, f.path)
        if not os.path.isfile(path):
            missing.append(f"{f.path}: missing (Part {f.part}); restore it from the release")
            continue
        with open(path, encoding="utf-8") as handle:
            source = handle.read()
        try:
            stubs = find_stubs(source, f.path)
        except SyntaxError as error:
            unfinished.append(f"{f.path}:{error.lineno}: syntax error ({error.msg}); the file must compile")
            continue
        unfinished += [f"{f.path}:{s.line}: {s.qualname} still raises the stub NotImplementedError "
                       f"(Part {s.part}, handout §{f.section})" for s in stubs if not s.bonus]
    return unfinished, missing


def write_submission(root: str, files: list[StudentFile], output: str) -> None:
    """Zip exactly the student files, at the paths the grader expects; atomic, so no half-written zip."""
    partial = output + ".partial"
    with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as zf:
        for f in files:
            zf.write(os.path.join(root, f.path), f.path)
        if os.path.isfile(os.path.join(root, RELEASE_STAMP)):  # so the grader can tell a stale release
            zf.write(os.path.join(root, RELEASE_STAMP), RELEASE_STAMP)
    os.replace(partial, output)


def submit(root: str, files: list[StudentFile], output: str, force: bool) -> int:
    unfinished, missing = check_submission(root, files)
    if missing:
        print("Cannot submit:\n  " + "\n  ".join(missing), file=sys.stderr)
        return 1
    if unfinished and not force:
        print("Not submitting: some work is unfinished:\n  " + "\n  ".join(unfinished), file=sys.stderr)
        print("Replace each `raise NotImplementedError(...)` stub with your code, or run "
              "`make submit FORCE=1` to submit anyway (unfinished functions fail their tests).", file=sys.stderr)
        return 1
    for problem in unfinished:
        print(f"warning (FORCE=1): {problem}", file=sys.stderr)
    write_submission(root, files, output)
    print(f"wrote {os.path.relpath(output)} with {len(files)} files: {', '.join(f.path for f in files)}")
    print("Upload it to Gradescope.")
    return 0


def run_tests(files: list[StudentFile], part: str | None, pytest_args: list[str]) -> None:
    command = [sys.executable, "-m", "pytest", *resolve_part(files, part), *pytest_args]
    print("running:", " ".join(["python", *command[1:]]), flush=True)
    os.chdir(HERE)
    os.execv(sys.executable, command)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    extra: list[str] = []
    if "--" in argv:  # everything after -- goes to pytest untouched
        cut = argv.index("--")
        argv, extra = argv[:cut], argv[cut + 1:]
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--root", default=HERE, help=argparse.SUPPRESS)  # tests point it at a copy
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("files", help="the parts and the files you edit")
    for name in ("tests", "test"):
        commands.add_parser(name).add_argument("part", nargs="?", default="")
    submit_parser = commands.add_parser("submit", help="build submission.zip")
    submit_parser.add_argument("--force", action="store_true", help="submit even with unfinished stubs")
    submit_parser.add_argument("--output", default=None)
    args = parser.parse_args(argv)
    try:
        files = load_student_files(os.path.join(args.root, CONFIG_NAME))
        if args.command == "files":
            print(parts_table(files))
        elif args.command == "tests":
            print(" ".join(resolve_part(files, args.part)) or "tests")
        elif args.command == "test":
            run_tests(files, args.part, extra)
        else:
            output = args.output or os.path.join(args.root, SUBMISSION_NAME)
            return submit(args.root, files, output, args.force)
    except CourseError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
