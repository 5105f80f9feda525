"""The hints students open one level at a time (`make hint PART=3`), from solutions/hints/ into the release.

Source: one markdown file per part, ``solutions/hints/<part>.md``, named as `make test PART=` names the part
(``3``, ``A``), one section per level, each level giving away more than the one before::

    # Part 3: the Reducer            (anything before the first level is for staff: not released)

    ## Level 1: nudges
    - Where does a gradient go when it is ready? ...

    ## Level 2: torch's design
    ...

Levels are numbered 1, 2, ... in order; any part may have any number of them. The one setting,
``solutions/hints/released.json``'s ``highest_level``, says how many levels students get this term: ``null``
(every level), a number (levels 1..n of every part; 0: none) or ``{"3": 2, "A": 0}`` (per part; a part not
listed gets every level). A withheld level is not in the release at all; `make hint` says that the course has
not released more.

Release: ``hints/<part>/level-<n>.sealed`` (course.hint_path; compressed and base64, course.seal_hint, so that
a search of the folder does not show them), and ``hints/index.json`` (per part: its name, the
titles of the released levels, and how many are withheld), which the student's ``course.py hint`` reads.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass

from tools.student.course import HINT_INDEX, HINTS, hint_path, part_label, seal_hint

SOURCE = "hints"  # under solutions/
SETTING = "released.json"
LEVEL_RE = re.compile(r"## Level (\d+): (\S.*?)\s*")


class HintError(Exception):
    """The hints cannot be released; the message names the file (and line) to fix."""


@dataclass(frozen=True)
class Level:
    number: int
    title: str
    text: str  # markdown, without its heading


def parse(text: str, label: str) -> list[Level]:
    """The levels of one part's file, checked: numbered 1, 2, ... in order, none empty."""
    levels: list[Level] = []
    body: list[str] = []

    def close() -> None:
        if levels:
            content = "\n".join(body).strip()
            if not content:
                raise HintError(f"{label}: level {levels[-1].number} ({levels[-1].title}) is empty")
            levels[-1] = Level(levels[-1].number, levels[-1].title, content)
        body.clear()

    for line_number, line in enumerate(text.splitlines(), 1):
        if line.startswith("## "):
            match = LEVEL_RE.fullmatch(line)
            if match is None:
                raise HintError(f"{label}:{line_number}: a '## ' heading must read '## Level N: title'")
            close()
            if int(match[1]) != len(levels) + 1:
                raise HintError(f"{label}:{line_number}: level {match[1]} where level {len(levels) + 1} comes next")
            levels.append(Level(int(match[1]), match[2], ""))
        else:
            body.append(line)
    close()
    if not levels:
        raise HintError(f"{label}: no level ('## Level 1: title')")
    return levels


def read_sources(solutions: str, parts: dict[str, str]) -> dict[str, list[Level]]:
    """Every part's levels, in the order of ``parts`` (part -> name: the parts `make test PART=` knows)."""
    folder = os.path.join(solutions, SOURCE)
    if not os.path.isdir(folder):
        return {}
    names = sorted(n for n in os.listdir(folder) if n != SETTING)
    unknown = [n for n in names if not n.endswith(".md") or n[:-3] not in parts]
    if unknown:
        raise HintError(f"solutions/{SOURCE}/{unknown[0]}: not a part's hints; name it <part>.md, part one of "
                        f"{', '.join(parts)} (as `make test PART=` names it)")
    found = {}
    for part in parts:
        path = os.path.join(folder, f"{part}.md")
        if os.path.isfile(path):
            with open(path, encoding="utf-8") as f:
                found[part] = parse(f.read(), f"solutions/{SOURCE}/{part}.md")
    return found


def highest_levels(solutions: str, parts: list[str]) -> dict[str, int | None]:
    """The setting, per part: the highest level released (None: all)."""
    path = os.path.join(solutions, SOURCE, SETTING)
    label = f"solutions/{SOURCE}/{SETTING}"
    if not os.path.isfile(path):
        return dict.fromkeys(parts)
    try:
        with open(path, encoding="utf-8") as f:
            value = json.load(f)["highest_level"]
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise HintError(f"{label}: cannot read \"highest_level\" ({error!r})") from None

    def count(v: object, where: str) -> int | None:
        if v is None or (isinstance(v, int) and not isinstance(v, bool) and v >= 0):
            return v
        raise HintError(f"{label}: {where} must be null (every level) or a number >= 0, got {v!r}")
    if isinstance(value, dict):
        unknown = sorted(set(value) - set(parts))
        if unknown:
            raise HintError(f"{label}: no hints for part {unknown[0]!r} (parts with hints: {', '.join(parts)})")
        return {part: count(value.get(part), f"highest_level[{part!r}]") for part in parts}
    return dict.fromkeys(parts, count(value, "highest_level"))


def release_files(solutions: str, parts: dict[str, str], edit_hint: str) -> dict[str, bytes]:
    """The release's hints/: each released level's file (sealed), and index.json (its header ends with ``edit_hint``)."""
    sources = read_sources(solutions, parts)
    if not sources:
        return {}
    highest = highest_levels(solutions, list(sources))
    files, index = {}, {}
    for part, levels in sources.items():
        released = levels[:highest[part]] if highest[part] is not None else levels
        for level in released:
            title = f"# {part_label(part)}, {parts[part]}: hint level {level.number} ({level.title})\n\n"
            files[hint_path(part, level.number)] = seal_hint(part, title + level.text + "\n")
        index[part] = {"name": parts[part], "levels": [level.title for level in released],
                       "withheld": len(levels) - len(released)}
    files[f"{HINTS}/{HINT_INDEX}"] = (json.dumps(
        {"generated": f"GENERATED from solutions/{SOURCE}/ by tools/assign.py ({edit_hint}); `make hint` reads it",
         "parts": index}, indent=1) + "\n").encode("utf-8")
    return files
