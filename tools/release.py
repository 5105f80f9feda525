"""The student release: the tree `generate` writes to assignment/, `check` compares and `student-zip` packs.

The release is built in memory (relative path -> bytes) from solutions/, the templates in tools/student/,
the top-level requirements.txt and (for `make trace`) pins of requirements-dev.txt; nothing else decides what
students get.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import zipfile
from dataclasses import dataclass

from tools import on_student_side
from tools.hints import HintError, release_files
from tools.markers import MarkerError, make_stubs, refuse_markers
from tools.student.course import (
    CONFIG_NAME,
    HINTS,
    OPENED,
    RELEASE_STAMP,
    BonusPart,
    CourseError,
    StudentFile,
    load_bonus_parts,
    load_student_files,
)

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# What of solutions/ students get (folders are copied whole); bench.py and the like stay with the staff.
RELEASED = ("minddp", "checks", "tests", "pytest.ini", "demo.py", "tracer.py", "measure.py", "probe.py", "answers.py")
# Released when present (answers.py: the written questions, Part 6; tracer.py: `make trace`; measure.py:
# `make measure`, the data of Part 6's Q8; probe.py: `make probe`, `make probe-buckets`).
OPTIONAL = {"demo.py", "tracer.py", "measure.py", "probe.py", "answers.py", "checks"}
# Files under the released folders that stay with the staff: tests that state, as facts about torch, what the
# handout asks students to observe with the probe (they run on solutions/ with the public tests).
STAFF_ONLY = ("tests/test_probe_facts.py",)
TEMPLATES = {"README.md": "README.md", "Makefile": "Makefile", "course.py": "course.py", "install.py": "install.py", ".gitignore": "gitignore",
             "AGENTS.md": "AGENTS.md", "CLAUDE.md": "AGENTS.md"}  # the policy for AI assistants, where they look
# Build products that may sit in assignment/ (students' or staff's runs) without being part of the release.
IGNORED_NAMES = {"__pycache__", ".pytest_cache", ".venv", "submission.zip", "submission.zip.partial", "trace",
                 OPENED, OPENED + ".partial"}  # OPENED: the hint levels a student opened (`make hint`)
# What `make trace` installs on first use for its picture, with the pins of the top-level requirements-dev.txt
# (one pin for staff and students; `make install` stays small without it).
TRACE_REQUIREMENTS = ("matplotlib",)
IGNORED_SUFFIXES = (".pyc",)
EDIT_HINT = "staff: edit that file, then `make assignment`"


class ReleaseError(Exception):
    """The release cannot be built; the message names the file (and line) to fix."""


@dataclass(frozen=True)
class Layout:
    """Where the inputs and the output live; tests point it at a temporary copy."""

    solutions: str
    templates: str
    requirements: str
    assignment: str
    handout_pdfs: tuple[str, ...]  # the first that exists goes into the student zip
    changelog: str = ""  # CHANGELOG.md: the release's name (release.json), and the student zip has it

    @classmethod
    def of_repo(cls, root: str = REPO) -> Layout:
        return cls(solutions=os.path.join(root, "solutions"), templates=os.path.join(root, "tools", "student"),
                   requirements=os.path.join(root, "requirements.txt"),
                   assignment=os.path.join(root, "assignment"),
                   handout_pdfs=(os.path.join(root, "handout.pdf"), os.path.join(root, "handout", "handout.pdf")),
                   changelog=os.path.join(root, "CHANGELOG.md"))

    def student_files(self) -> list[StudentFile]:
        try:
            return load_student_files(os.path.join(self.solutions, CONFIG_NAME))
        except CourseError as error:
            raise ReleaseError(str(error)) from None

    def bonus_parts(self) -> list[BonusPart]:
        try:
            return load_bonus_parts(os.path.join(self.solutions, CONFIG_NAME))
        except CourseError as error:
            raise ReleaseError(str(error)) from None


def ignored(relpath: str) -> bool:
    parts = relpath.split("/")
    return any(p in IGNORED_NAMES for p in parts) or relpath.endswith(IGNORED_SUFFIXES)


def read_tree(root: str) -> dict[str, bytes]:
    """Every file under ``root`` (relative "/" paths) except build products."""
    tree = {}
    for folder, dirs, names in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in IGNORED_NAMES)
        for name in sorted(names):
            relpath = os.path.relpath(os.path.join(folder, name), root).replace(os.sep, "/")
            if not ignored(relpath):
                with open(os.path.join(folder, name), "rb") as f:
                    tree[relpath] = f.read()
    return tree


# -- headers ----------------------------------------------------------------------------------------------------

def with_header(text: str, comment_lines: list[str], prefix: str = "# ") -> str:
    """``text`` with a comment header, after a shebang or coding line (which must stay first)."""
    lines = text.splitlines(keepends=True)
    keep = 0
    while keep < min(2, len(lines)) and (lines[keep].startswith("#!") or re.match(r"#.*coding[:=]", lines[keep])):
        keep += 1
    header = "".join(f"{prefix}{line}\n" for line in comment_lines)
    return "".join(lines[:keep]) + header + "".join(lines[keep:])


def header_for(relpath: str, entry: StudentFile | None) -> list[str]:
    generated = f"GENERATED from solutions/{relpath} by tools/assign.py ({EDIT_HINT})."
    if entry is not None:
        return [generated, f"Part {entry.part}, {entry.name} (handout §{entry.section}): this is your copy; edit "
                           "the stubs (each `raise NotImplementedError`)."]
    if relpath.startswith("tests/"):
        return [generated, "Public tests: do not edit them by hand; the grader runs its own copy (and more tests)."]
    return [generated, "Provided code: do not edit it by hand; the grader uses its own copy."]


# -- building ---------------------------------------------------------------------------------------------------

@dataclass
class Release:
    files: dict[str, bytes]
    regions: dict[str, list]  # student path -> its PlacedRegions (for the README and `diff`)


def released_sources(solutions: str) -> list[str]:
    """Relative paths of the solutions/ files that go into the release."""
    paths = []
    for name in RELEASED:
        full = os.path.join(solutions, name)
        if os.path.isdir(full):
            paths += [f"{name}/{rel}" for rel in read_tree(full) if f"{name}/{rel}" not in STAFF_ONLY]
        elif os.path.isfile(full):
            paths.append(name)
        elif name not in OPTIONAL:
            raise ReleaseError(f"solutions/{name} is missing; the release needs it")
    return paths


def build_release(layout: Layout) -> Release:
    entries = {f.path: f for f in layout.student_files()}
    release = Release({}, {})
    for relpath in released_sources(layout.solutions):
        _release_source(layout, relpath, entries.get(relpath), release)
    for path, entry in entries.items():
        if path not in release.files:
            raise ReleaseError(f"solutions/{CONFIG_NAME}: Part {entry.part} lists {path}, but solutions/{path} "
                               f"does not exist (or is not under {', '.join(RELEASED)})")
    bonus = layout.bonus_parts()
    for part, tests in [(f"Part {e.part} ({e.path})", e.tests) for e in entries.values()] + \
            [(f"Bonus {b.part}", b.tests) for b in bonus]:
        for test in tests:
            if test.split("::")[0] not in release.files:
                raise ReleaseError(f"solutions/{CONFIG_NAME}: {part} names the test file {test.split('::')[0]}, "
                                   "which is not in the release")
    try:
        release.files.update(release_files(layout.solutions, {**{str(e.part): e.name for e in entries.values()},
                                                              **{b.part: b.name for b in bonus}}, EDIT_HINT))
    except HintError as error:
        raise ReleaseError(str(error)) from None
    _add_generated_files(layout, list(entries.values()), bonus, release)
    return release


def _release_source(layout: Layout, relpath: str, entry: StudentFile | None, release: Release) -> None:
    with open(os.path.join(layout.solutions, relpath), "rb") as f:
        raw = f.read()
    label = f"solutions/{relpath}"
    try:
        if entry is not None:
            text, placed = make_stubs(raw.decode("utf-8"), label, entry.part, entry.section)
            release.regions[relpath] = placed
        elif relpath.endswith(".py"):
            text = raw.decode("utf-8")
            refuse_markers(text, label)
        elif relpath.endswith((".ini", ".cfg")):  # config that takes '#' comments: gets the header too
            text = raw.decode("utf-8")
        else:
            release.files[relpath] = raw  # data files travel untouched
            return
    except MarkerError as error:
        raise ReleaseError(str(error)) from None
    release.files[relpath] = with_header(text, header_for(relpath, entry)).encode("utf-8")


def _add_generated_files(layout: Layout, entries: list[StudentFile], bonus: list[BonusPart], release: Release) -> None:
    config = {"generated": f"GENERATED from solutions/{CONFIG_NAME} by tools/assign.py; do not edit by hand"}
    with open(os.path.join(layout.solutions, CONFIG_NAME), encoding="utf-8") as f:
        config.update(json.load(f))
    release.files[CONFIG_NAME] = (json.dumps(config, indent=2, ensure_ascii=False) + "\n").encode("utf-8")
    with open(layout.requirements, encoding="utf-8") as f:
        requirements = f.read()
    release.files["requirements.txt"] = with_header(requirements, [
        f"GENERATED from requirements.txt by tools/assign.py ({EDIT_HINT})."]).encode()
    dev = os.path.join(os.path.dirname(layout.requirements), "requirements-dev.txt")
    if os.path.isfile(dev):
        release.files["requirements-trace.txt"] = trace_requirements(dev)
    for target, template in TEMPLATES.items():
        with open(os.path.join(layout.templates, template), encoding="utf-8") as f:
            text = f.read()
        generated = f"GENERATED from tools/student/{template} by tools/assign.py ({EDIT_HINT})."
        if target == "README.md":
            text = render_readme(text, entries, bonus, release, layout.solutions)
        if target.endswith(".md"):
            text = text.replace("{{STUDENT_FILES}}", ", ".join(f"`{e.path}`" for e in entries))
            text = f"<!-- {generated} -->\n" + text
        else:
            text = with_header(text, [generated])
        release.files[target] = text.encode("utf-8")
    release.files[RELEASE_STAMP] = release_stamp(release.files, entries, release_name(layout))


def release_name(layout: Layout) -> str | None:
    """The current release's name (CHANGELOG.md's newest release, e.g. 2026.1); None without a CHANGELOG.md."""
    from tools.changelog import ChangelogError, current_release
    try:
        return current_release(layout.changelog) if layout.changelog else None
    except ChangelogError as error:
        raise ReleaseError(str(error)) from None


def release_stamp(files: dict[str, bytes], entries: list[StudentFile], name: str | None = None) -> bytes:
    """release.json: which release this is. ``release`` is its name (CHANGELOG.md's newest release: what
    students and staff call it); ``version`` hashes every file of it; ``parts`` hashes, per part,
    what grading that part reads (its checks module, its students' files as stubbed, their public tests), and
    ``shared`` the rest (the check library, provided code). The grader compares a submission's copy with its
    own and names the parts that changed since (a stale release, not the student's mistake)."""
    def digest(paths: set[str]) -> str:
        h = hashlib.sha256()
        for path in sorted(paths):
            h.update(path.encode() + b"\0" + files[path] + b"\0")
        return h.hexdigest()[:12]
    own: dict[str, set[str]] = {}
    for entry in entries:
        own.setdefault(str(entry.part), set()).update([entry.path, *entry.tests, f"checks/part{entry.part}.py"])
    bonus = {path for path in files if path in ("checks/bonus.py", "tests/test_bonus.py")}
    for part in ("A", "B"):
        own[part] = bonus | own.get("3", set()) | own.get("4", set())
    parts = {part: digest({p for p in paths if p in files}) for part, paths in sorted(own.items())}
    claimed = set().union(*own.values()) | {p for p in files if p.startswith(f"{HINTS}/")}  # hints: no grading
    stamp = {"generated": "GENERATED by tools/assign.py: which release this is (`make submit` puts it in "
                          "submission.zip; the grader names the parts changed since)",
             **({"release": name} if name else {}), "version": digest(set(files)), "parts": parts,
             "shared": digest({p for p in files if p not in claimed})}
    return (json.dumps(stamp, indent=2) + "\n").encode("utf-8")


def trace_requirements(dev_path: str) -> bytes:
    """requirements-trace.txt: the pinned lines of ``TRACE_REQUIREMENTS`` in requirements-dev.txt."""
    with open(dev_path, encoding="utf-8") as f:
        pins = {m[1]: line.strip() for line in f if (m := re.match(r"([A-Za-z0-9_.-]+)==", line.strip()))}
    missing = [name for name in TRACE_REQUIREMENTS if name not in pins]
    if missing:
        raise ReleaseError(f"requirements-dev.txt pins no {', '.join(missing)} (==), which `make trace` installs")
    text = ("# Optional: the picture of `make trace` (trace/timeline.png). `make trace` installs these into .venv\n"
            "# on its first run; `make install` does not, so the base install stays small.\n"
            + "".join(pins[name] + "\n" for name in TRACE_REQUIREMENTS))
    return with_header(text, [f"GENERATED from requirements-dev.txt by tools/assign.py ({EDIT_HINT})."]).encode()


def render_readme(template: str, entries: list[StudentFile], bonus: list[BonusPart], release: Release,
                  solutions: str) -> str:
    """Fill the student README's tables from student_files.json and the solution regions."""
    rows = ["| Part | Handout | You edit | Functions to write | Run its tests |", "|---|---|---|---|---|"]
    for entry in entries:
        regions = release.regions.get(entry.path, [])
        optional = {p.qualname for p in regions if (p.region.hint or "").startswith("Bonus")}  # as markers.py reads it
        functions = list(dict.fromkeys(p.qualname for p in regions if not p.region.design))
        design = " (and your own state and helpers: `YOUR DESIGN`)" if any(p.region.design for p in regions) else ""
        rows.append(f"| {entry.part}. {entry.name} | §{entry.section} | `{entry.path}` | "
                    + ", ".join(f"`{name}`" + (" (bonus, optional)" if name in optional else "") for name in functions)
                    + f"{design} | `make test PART={entry.key}` |")
    for part in bonus:  # its functions: the regions whose hint names it (as markers.py reads "Bonus")
        placed = [(path, p.qualname) for path, regions in release.regions.items() for p in regions
                  if (p.region.hint or "").startswith(f"Bonus {part.part}")]
        rows.append(f"| Bonus {part.part}. {part.name} (optional) | §{part.section} | "
                    + ", ".join(f"`{path}`" for path in dict.fromkeys(path for path, _ in placed)) + " | "
                    + ", ".join(f"`{name}`" for _, name in placed) + f" | `make test PART={part.part}` |")
    student = {e.path for e in entries}
    provided = [p for p in release.files if p.startswith("minddp/") and p.endswith(".py") and p not in student]
    return (template.replace("{{PARTS_TABLE}}", "\n".join(rows))
            .replace("{{PROVIDED_FILES}}", ", ".join(f"`{p}`" for p in provided))
            .replace("{{POINTS_TABLE}}", points_table(solutions)))


def points_table(solutions: str) -> str:
    """Per part, the points earned on the public inputs and on the hidden ones, and the checks that do not split
    half and half: from the checks' weights and public_share (checks/registry.py; "" for a release without)."""
    if not os.path.isfile(os.path.join(solutions, "checks", "registry.py")):
        return ""
    with on_student_side(solutions):
        from checks.registry import public_checks
    checks = public_checks()
    rows = ["| Part | points | from the public inputs (`make test` runs them) | from the hidden inputs |",
            "|---|---|---|---|"]
    for part in dict.fromkeys(c.part for c in checks):
        weight = sum(c.weight for c in checks if c.part == part)
        public = sum(c.weight * c.public_share for c in checks if c.part == part)
        rows.append(f"| {part if part.isdigit() else 'Bonus ' + part} | {weight:g} | {public:g} | {weight - public:g} |")
    shares = {"all from the public inputs": 1.0, "all from the hidden inputs": 0.0}
    others = [f"{', '.join(c.number for c in checks if c.public_share == share)}: {words}"
              for words, share in shares.items() if any(c.public_share == share for c in checks)]
    odd = [c.number for c in checks if c.public_share not in (0.5, *shares.values())]
    others += [f"{', '.join(odd)}: other shares (`public_share` in checks/)"] if odd else []
    return "\n".join(rows) + "\n\nEach check's points come half from its public inputs and half from its hidden " \
        "ones" + (f", except checks {'; '.join(others)}." if others else ".")


# -- writing, comparing, packing ----------------------------------------------------------------------------

@dataclass
class Difference:
    modified: list[str]
    missing: list[str]  # in the release, not on disk
    extra: list[str]  # on disk, not in the release

    def __bool__(self) -> bool:
        return bool(self.modified or self.missing or self.extra)


def compare(expected: dict[str, bytes], folder: str) -> Difference:
    actual = read_tree(folder) if os.path.isdir(folder) else {}
    return Difference(modified=sorted(p for p in expected if p in actual and actual[p] != expected[p]),
                      missing=sorted(p for p in expected if p not in actual),
                      extra=sorted(p for p in actual if p not in expected))


def write_release(files: dict[str, bytes], folder: str) -> Difference:
    """Make ``folder`` hold exactly ``files`` (build products aside); unchanged files keep their mtime."""
    difference = compare(files, folder)
    for relpath in difference.modified + difference.missing:
        path = os.path.join(folder, relpath)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(files[relpath])
    for relpath in difference.extra:
        os.unlink(os.path.join(folder, relpath))
    for current, _dirs, _names in os.walk(folder, topdown=False):  # folders emptied by the removals
        if current != folder and not os.listdir(current):
            os.rmdir(current)
    return difference


def write_student_zip(files: dict[str, bytes], layout: Layout, output: str) -> list[str]:
    """assignment/ plus handout.pdf (when built) and CHANGELOG.md as a zip; returns the archive's names. (The
    changelog is beside assignment/, not in it: adding an entry is one edit, with nothing to regenerate.)"""
    entries = {f"assignment/{relpath}": data for relpath, data in files.items()}
    handout = next((p for p in layout.handout_pdfs if os.path.isfile(p)), None)
    for name, path in (("handout.pdf", handout), ("CHANGELOG.md", layout.changelog)):
        if path and os.path.isfile(path):
            with open(path, "rb") as f:
                entries[name] = f.read()
    os.makedirs(os.path.dirname(os.path.abspath(output)), exist_ok=True)
    partial = output + ".partial"
    with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in sorted(entries.items()):
            info = zipfile.ZipInfo(name, date_time=(2020, 1, 1, 0, 0, 0))  # same input, same zip
            info.external_attr = 0o644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, data)
    os.replace(partial, output)
    return sorted(entries)
