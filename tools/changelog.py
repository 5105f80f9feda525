"""CHANGELOG.md: which release of the homework is which, and what each changed (staff and students read it).

    python -m tools.changelog check             # the format, every problem named with its line (make check)
    python -m tools.changelog current           # the current release's name (e.g. 2026.1)
    python -m tools.changelog release --grader CODE   # `make release`: the Unreleased entries become the next
                                                      # release, naming the grader (autograder.assemble version)

A release (``## 2026.2 — 2026-12-10 — grader 5e1f0c2a9b3d``) names the student release and its grader: the
grader's CODE (autograder/grader/grader_version.py), the first part of the grader version that `make grade`,
results.json's staff entry and `make regrade` show. Its name is YEAR.N, N counting the releases of that year.
The current release's name is what the student release's release.json carries (tools/release.py), so the
grader can tell a student which release their files come from.

An entry is one line (continued on lines indented by two spaces): ``- KIND (PARTS): what changed``, KIND one of
KINDS, PARTS ``Part 3``, ``Parts 3, 4``, ``Bonus A``, ``Parts 2, 5, Bonus B`` or ``all``.
"""

from __future__ import annotations

import argparse
import datetime
import os
import re
import sys
from dataclasses import dataclass, field

from tools import REPO

PATH = os.path.join(REPO, "CHANGELOG.md")
KINDS = {"handout": "the handout (the specification, the questions)",
         "code": "what students get: stubs, provided code, checks and their messages or points, public tests",
         "grader": "the hidden side only: hidden inputs, the grader's own code or settings"}
PARTS = ("1", "2", "3", "4", "5", "6", "A", "B")
UNRELEASED = "## Unreleased"
RELEASE_RE = re.compile(r"## (\d{4})\.(\d+) — (\d{4}-\d{2}-\d{2}) — grader ([0-9a-f]{12})$")
ENTRY_RE = re.compile(r"- (\w+) \(([^()]*)\): (\S.*)$")
ENTRY_FORM = f"`- KIND (PARTS): what changed`, KIND one of {', '.join(KINDS)}"


class ChangelogError(Exception):
    """CHANGELOG.md cannot be read; the message names every line to fix."""


@dataclass(frozen=True)
class Entry:
    kind: str
    parts: tuple[str, ...]  # of PARTS, or ("all",)
    text: str
    line: int


@dataclass
class Release:
    name: str  # "2026.1"
    date: str
    grader: str  # the grader version's CODE
    line: int
    entries: list[Entry] = field(default_factory=list)


@dataclass
class Changelog:
    unreleased: list[Entry]
    releases: list[Release]  # newest first

    @property
    def current(self) -> str | None:
        return self.releases[0].name if self.releases else None


def parse_parts(text: str) -> tuple[str, ...] | None:
    """"Parts 3, 4, Bonus A" -> ("3", "4", "A"); None if it names no known part."""
    if text.strip() == "all":
        return ("all",)
    found = []
    for token in (t.strip() for t in text.split(",")):
        token = re.sub(r"^(Parts?|Bonus) ", "", token)
        if token not in PARTS:
            return None
        found.append(token)
    return tuple(found) or None


def parse(text: str, where: str = "CHANGELOG.md") -> Changelog:
    problems, unreleased, releases = [], None, []
    section: list[Entry] | None = None
    for number, line in enumerate(text.splitlines(), start=1):
        if line.startswith("## "):
            found = RELEASE_RE.match(line)
            if line.rstrip() == UNRELEASED and unreleased is None and not releases:
                section = unreleased = []
            elif found:
                releases.append(Release(f"{found[1]}.{found[2]}", found[3], found[4], number))
                section = releases[-1].entries
            else:
                problems.append(f"{where}:{number}: a heading is `{UNRELEASED}` (once, first) or "
                                "`## YEAR.N — YYYY-MM-DD — grader CODE` (CODE: 12 hex digits)")
                section = None
        elif line.startswith("- ") and section is not None:
            found = ENTRY_RE.match(line)
            parts = parse_parts(found[2]) if found else None
            if not found or found[1] not in KINDS or parts is None:
                problems.append(f"{where}:{number}: an entry is {ENTRY_FORM}; PARTS e.g. `Part 3`, `Parts 3, 4`, "
                                f"`Bonus A` or `all` (got {line[:60]!r})")
            else:
                section.append(Entry(found[1], parts, found[3], number))
    if unreleased is None:
        problems.append(f"{where}: no `{UNRELEASED}` section before the releases (where new entries go)")
    names = [r.name for r in releases]
    if names != sorted(names, key=lambda n: tuple(int(x) for x in n.split(".")), reverse=True) or \
            len(set(names)) != len(names):
        problems.append(f"{where}: the releases are not newest first, each once: {', '.join(names)}")
    problems += [f"{where}:{r.line}: release {r.name} has no entry" for r in releases if not r.entries]
    if problems:
        raise ChangelogError("\n".join(problems))
    return Changelog(unreleased or [], releases)


def read(path: str = PATH) -> Changelog:
    try:
        with open(path, encoding="utf-8") as f:
            return parse(f.read(), os.path.relpath(path))
    except OSError as error:
        raise ChangelogError(f"{path}: {error.strerror}") from None


def current_release(path: str = PATH) -> str | None:
    """The newest release's name; None where there is no CHANGELOG.md (a test's miniature repository)."""
    return read(path).current if os.path.exists(path) else None


def next_name(current: str | None, today: datetime.date) -> str:
    year, count = (int(x) for x in current.split(".")) if current else (0, 0)
    return f"{today.year}.{count + 1 if year == today.year else 1}"


def cut(text: str, name: str, today: datetime.date, code: str) -> str:
    """The text with the Unreleased entries moved under a new release heading (Unreleased left empty)."""
    changelog = parse(text)
    if not changelog.unreleased:
        raise ChangelogError(f"nothing to release: `{UNRELEASED}` in CHANGELOG.md has no entry (add one line per "
                             f"change: {ENTRY_FORM})")
    lines = text.splitlines()
    start = lines.index(UNRELEASED)
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("## ")), len(lines))
    body = "\n".join(lines[start + 1:end]).strip("\n")
    heading = f"## {name} — {today.isoformat()} — grader {code}"
    return "\n".join(lines[:start] + [UNRELEASED, "", heading, "", body, ""] + lines[end:]).rstrip("\n") + "\n"


def release(code: str, path: str = PATH, today: datetime.date | None = None) -> str:
    """`make release`: the next release's name, written into CHANGELOG.md with the grader's CODE (what
    `python -m autograder.assemble version` prints for this tree)."""
    today = today or datetime.date.today()
    with open(path, encoding="utf-8") as f:
        text = f.read()
    name = next_name(parse(text).current, today)
    new = cut(text, name, today, code)
    with open(path + ".partial", "w", encoding="utf-8") as f:
        f.write(new)
    os.replace(path + ".partial", path)
    return name


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.changelog", description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=["check", "current", "release"])
    parser.add_argument("--grader", help="release: the grader version's CODE of this tree")
    args = parser.parse_args(argv)
    if args.command == "release" and not re.fullmatch(r"[0-9a-f]{12}", args.grader or ""):
        parser.error("release needs --grader CODE (12 hex digits: `python -m autograder.assemble version`)")
    try:
        if args.command == "check":
            changelog = read()
            print(f"CHANGELOG.md: release {changelog.current}, {len(changelog.unreleased)} unreleased entr"
                  f"{'y' if len(changelog.unreleased) == 1 else 'ies'}")
        elif args.command == "current":
            print(read().current)
        else:
            name = release(args.grader)
            print(f"CHANGELOG.md: release {name} cut (grader {read().releases[0].grader}); now `make assignment` "
                  "writes it into the student release's release.json")
    except ChangelogError as error:
        print(f"changelog: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
