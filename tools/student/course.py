"""Course helper for the minddp homework (standard library only; the Makefile calls it).

    python course.py files                      the parts and the files you edit
    python course.py tests [PART]               the test files of PART (all tests without PART)
    python course.py test [PART] [-- OPTIONS]   run pytest on PART's tests (make test PART=reducer)
    python course.py submit [--force]           build submission.zip (make submit)
    python course.py hint [PART] [--level N]    open the next hint level of PART; without PART, the list

PART is a file's name without ``.py`` (``reducer``), a part number (``3``), a bonus part (``A``, ``B``) or
``bonus`` (both, for tests). The list of files you edit, their parts and the bonus parts come from
``student_files.json`` beside this file; the hints from ``hints/``.
"""

from __future__ import annotations

import argparse
import ast
import base64
import json
import os
import re
import sys
import zipfile
import zlib
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


@dataclass(frozen=True)
class BonusPart:
    """An optional part (an entry of student_files.json's "bonus"): its functions sit in the files above."""

    part: str  # "A": what `make test PART=` and `make hint PART=` accept (any case)
    name: str
    section: str
    tests: tuple[str, ...]  # pytest node ids: a test file, or file::test


def _read_config(config_path: str) -> dict:
    try:
        with open(config_path, encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, ValueError) as error:
        raise CourseError(f"{config_path}: cannot read the list of student files: {error}") from None
    return data if isinstance(data, dict) else {}


def load_student_files(config_path: str) -> list[StudentFile]:
    """Read and check student_files.json; a mistake raises CourseError naming the entry and the field."""
    data = _read_config(config_path)
    entries = data.get("files")
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


def load_bonus_parts(config_path: str) -> list[BonusPart]:
    """student_files.json's "bonus" entries (none: no bonus part), checked like the files."""
    entries = _read_config(config_path).get("bonus", [])
    if not isinstance(entries, list):
        raise CourseError(f'{config_path}: "bonus" must be a list of {{"part": "A", "name": ..., ...}}')
    parts = []
    for index, entry in enumerate(entries):
        where = f"{config_path}: bonus[{index}]"
        fields = ("part", "name", "section")
        if not isinstance(entry, dict) or any(not isinstance(entry.get(k), str) for k in fields) \
                or set(entry) != {*fields, "tests"}:
            raise CourseError(f"{where}: expected exactly part, name, section (strings) and tests")
        if not re.fullmatch(r"[A-Z]", entry["part"]):
            raise CourseError(f"{where}: part {entry['part']!r} must be one capital letter (PART=A)")
        tests = entry["tests"]
        if not isinstance(tests, list) or not tests or not all(isinstance(t, str) for t in tests):
            raise CourseError(f"{where}: 'tests' must list at least one pytest node id (tests/file.py[::test])")
        parts.append(BonusPart(entry["part"], entry["name"], entry["section"], tuple(tests)))
    return parts


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

def part_names(part: str, files: list[StudentFile], bonus: list[BonusPart] = ()) -> list[str]:
    """The parts PART names ("3", "A"; ``bonus``: every bonus part), as `make test` and `make hint` read it:
    a file stem, a part number, a bonus letter (any case)."""
    named = [str(f.part) for f in files if part in (f.key, str(f.part))]
    named += [b.part for b in bonus if part.upper() == b.part or (part == "bonus")]
    if not named:
        choices = [f"{f.key} ({f.part})" for f in files] + [f"{b.part} (bonus {b.part})" for b in bonus]
        if bonus:
            choices.append(f"bonus ({' and '.join(b.part for b in bonus)})")
        raise CourseError(f"unknown PART={part!r}; choose one of: {', '.join(choices)}")
    return list(dict.fromkeys(named))


def resolve_part(files: list[StudentFile], part: str | None, bonus: list[BonusPart] = ()) -> list[str]:
    """Test paths for PART (see ``part_names``); [] means every test."""
    if not part:
        return []
    chosen = part_names(part, files, bonus)
    tests = [t for f in files if str(f.part) in chosen for t in f.tests]
    tests += [t for b in bonus if b.part in chosen for t in b.tests]
    return list(dict.fromkeys(tests))


def parts_table(files: list[StudentFile], bonus: list[BonusPart] = ()) -> str:
    rows = [f"  Part {f.part}  {f.name:<20}  handout §{f.section:<4}  edit {f.path:<26}  "
            f"make test PART={f.key}" for f in files]
    rows += [f"  Bonus {b.part} {b.name:<20}  handout §{b.section:<4}  {'(in the files above)':<31}  "
             f"make test PART={b.part}" for b in bonus]
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


# -- hints (make hint) ----------------------------------------------------------------------------------------
# The release's hints/ holds index.json (per part: its name and the titles of the levels released, and how many
# the course withholds this term) and hints/<part>/level-<n>.sealed (seal_hint); OPENED records, in the student's folder, how
# far each part was opened. Nothing here is graded, and make submit never ships OPENED.

HINTS = "hints"
HINT_INDEX = "index.json"
OPENED = ".hints-opened.json"


def part_label(part: str) -> str:
    """"Part 3", "Bonus A"."""
    return f"Part {part}" if part.isdigit() else f"Bonus {part}"


def hint_path(part: str, level: int) -> str:
    """Where level ``level`` of ``part``'s hints sits in the release (tools/release.py writes it there)."""
    return f"{HINTS}/{part}/level-{level}.sealed"


SEALED_MARK = "sealed hint:"  # a sealed level's first line begins so
SEALED = SEALED_MARK + " `make hint PART={part}` opens it, one level at a time (nothing here is graded)\n"


def seal_hint(part: str, text: str) -> bytes:
    """A hint level as the release keeps it: compressed, then base64, so that a search of the folder (an editor's,
    grep, an assistant's) does not show a level the student did not choose to open. A courtesy, not a lock:
    staff withhold levels in solutions/hints/released.json."""
    body = base64.encodebytes(zlib.compress(text.encode("utf-8"), 9)).decode("ascii")
    return (SEALED.format(part=part) + body).encode("ascii")


def unseal_hint(data: bytes) -> str:
    first, _, body = data.decode("ascii").partition("\n")
    if not first.startswith(SEALED_MARK):
        raise CourseError("a hint file is damaged; download the release's hints/ folder again")
    return zlib.decompress(base64.decodebytes(body.encode("ascii"))).decode("utf-8")


def load_hints(root: str) -> dict[str, dict]:
    """hints/index.json: part -> {"name", "levels": [titles of the released levels], "withheld": count}."""
    path = os.path.join(root, HINTS, HINT_INDEX)
    if not os.path.isfile(path):
        return {}
    with open(path, encoding="utf-8") as f:
        return json.load(f)["parts"]


def load_opened(root: str) -> dict[str, int]:
    path = os.path.join(root, OPENED)
    if not os.path.isfile(path):
        return {}
    try:
        with open(path, encoding="utf-8") as f:
            opened = json.load(f)
        return {str(part): int(level) for part, level in opened.items()}
    except (OSError, ValueError, TypeError, AttributeError) as error:
        raise CourseError(f"{OPENED} cannot be read ({error}); delete it to start the hints over") from None


def save_opened(root: str, opened: dict[str, int]) -> None:
    partial = os.path.join(root, OPENED + ".partial")
    with open(partial, "w", encoding="utf-8") as f:
        json.dump(opened, f, indent=1, sort_keys=True)
    os.replace(partial, os.path.join(root, OPENED))


def hints_list(hints: dict[str, dict], opened: dict[str, int]) -> str:
    if not hints:
        return "This release has no hints."
    rows = []
    for part, entry in hints.items():
        count, seen = len(entry["levels"]), min(opened.get(part, 0), len(entry["levels"]))
        more = f" (the course has not released {entry['withheld']} more yet)" if entry["withheld"] else ""
        rows.append(f"  PART={part:<3} {entry['name']:<24} {count} level{'s' * (count != 1)}, "
                    f"{seen or 'none'} opened{more}")
    first = next(iter(hints))
    return "\n".join(["Hints, one level at a time; each gives away more of the design than the one before, and none",
                      "is needed for full marks. `make hint PART=" + first + "` opens the next level of that part.",
                      *rows])


def show_hint(root: str, part: str, level: int | None) -> str:
    """Level ``level`` of ``part`` (default: the next one not opened yet), recorded as opened: its text, then
    how many levels remain and how to open the next."""
    hints = load_hints(root)
    if part not in hints:
        having = ", ".join(hints) or "none"
        raise CourseError(f"{part_label(part)} has no hints (parts with hints: {having}); `make hint` lists them")
    entry, opened, name = hints[part], load_opened(root), part_label(part)
    released, seen = len(entry["levels"]), min(opened.get(part, 0), len(entry["levels"]))
    make = f"make hint PART={part}"
    withheld = f"The course has not released more hints for {name} (yet)." if entry["withheld"] else ""
    again = f"To see an opened level again: `{make} LEVEL=n`."
    if level is None and seen == released:
        done = f"You have opened all {released} hint levels of {name}. {again}" if released else ""
        return " ".join(filter(None, [done, withheld])) or f"{name} has no hints."
    level = seen + 1 if level is None else level
    if not 1 <= level <= released:
        raise CourseError(f"{name} has hint levels 1 to {released}. {withheld}".strip() if released else withheld)
    if level > seen + 1:
        raise CourseError(f"open the hints of {name} in order: level {seen + 1} is next (`{make}`)")
    with open(os.path.join(root, hint_path(part, level)), "rb") as f:
        text = unseal_hint(f.read())
    again_shown = level <= seen
    if not again_shown:
        seen = opened[part] = level
        save_opened(root, opened)
    left = released - seen
    if left:
        after = (f"{left} more level{'s' * (left != 1)} of {name}: `{make}` opens level {seen + 1} "
                 f"({entry['levels'][seen]}).")
    elif again_shown:
        after = f"You have opened all {released} levels of {name}. {withheld}".strip()
    else:
        after = f"That was the last level of {name}. {withheld}".strip()
    return f"{text.rstrip()}\n\n-- {name}, hint level {level} of {released} ({entry['levels'][level - 1]}). {after}\n   {again}"


def run_tests(files: list[StudentFile], bonus: list[BonusPart], part: str | None, pytest_args: list[str]) -> None:
    command = [sys.executable, "-m", "pytest", *resolve_part(files, part, bonus), *pytest_args]
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
    hint_parser = commands.add_parser("hint", help="open the next hint level of a part; without PART, the list")
    hint_parser.add_argument("part", nargs="?", default="")
    hint_parser.add_argument("--level", type=int, default=None, help="show this level (an opened one, or the next)")
    submit_parser = commands.add_parser("submit", help="build submission.zip")
    submit_parser.add_argument("--force", action="store_true", help="submit even with unfinished stubs")
    submit_parser.add_argument("--output", default=None)
    args = parser.parse_args(argv)
    try:
        files = load_student_files(os.path.join(args.root, CONFIG_NAME))
        bonus = load_bonus_parts(os.path.join(args.root, CONFIG_NAME))
        if args.command == "files":
            print(parts_table(files, bonus))
        elif args.command == "tests":
            print(" ".join(resolve_part(files, args.part, bonus)) or "tests")
        elif args.command == "test":
            run_tests(files, bonus, args.part, extra)
        elif args.command == "hint":
            if not args.part:
                print(hints_list(load_hints(args.root), load_opened(args.root)))
            else:
                parts = part_names(args.part, files, bonus)
                if len(parts) != 1:
                    raise CourseError(f"PART={args.part} names several parts ({', '.join(parts)}); choose one")
                print(show_hint(args.root, parts[0], args.level))
        else:
            output = args.output or os.path.join(args.root, SUBMISSION_NAME)
            return submit(args.root, files, output, args.force)
    except CourseError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
