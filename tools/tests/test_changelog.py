"""CHANGELOG.md (tools/changelog.py): its format, every bad line named at once, and `make release`'s cut."""

from __future__ import annotations

import datetime
import json
import os

import pytest

from tools import REPO
from tools.changelog import ChangelogError, cut, next_name, parse, read, release

HEAD = "# Changelog\n\nIntro.\n\n- **not an entry**: the intro's lists are prose\n\n"
GOOD = HEAD + """## Unreleased

- grader (Part 2): more random cases for check 2.5
- code (Parts 3, 4, Bonus A): check 3.1 names the rank
  that differs (a continued line)

## 2026.1 — 2026-09-01 — grader 0123456789ab

- handout (all): the first release
"""


def test_a_well_formed_changelog_reads_as_releases_and_entries():
    changelog = parse(GOOD)
    assert changelog.current == "2026.1" and changelog.releases[0].grader == "0123456789ab"
    assert [(e.kind, e.parts) for e in changelog.unreleased] == [("grader", ("2",)), ("code", ("3", "4", "A"))]
    assert changelog.releases[0].entries[0].parts == ("all",)


def test_every_bad_line_is_named_in_one_error():
    bad = GOOD.replace("- grader (Part 2)", "- tests (Part 2)").replace("(Parts 3, 4, Bonus A)", "(Part 9)") \
        .replace("## 2026.1 — 2026-09-01", "## 2026.1 - 2026-09-01")
    with pytest.raises(ChangelogError) as raised:
        parse(bad)
    lines = str(raised.value).splitlines()
    assert [line.split(":")[1] for line in lines[:3]] == ["9", "10", "13"], lines  # each with its line number
    assert "KIND one of handout, code, grader" in lines[0]


def test_make_release_cuts_the_unreleased_entries_as_the_next_number(tmp_path):
    path = tmp_path / "CHANGELOG.md"
    path.write_text(GOOD, encoding="utf-8")
    name = release("fedcba987654", str(path), datetime.date(2026, 12, 10))
    after = read(str(path))
    assert name == "2026.2" and after.current == "2026.2" and not after.unreleased
    assert after.releases[0].grader == "fedcba987654" and after.releases[0].date == "2026-12-10"
    assert [e.text for e in after.releases[0].entries] == [e.text for e in parse(GOOD).unreleased]
    assert [r.name for r in after.releases] == ["2026.2", "2026.1"] and after.releases[1].entries
    with pytest.raises(ChangelogError, match="nothing to release"):  # a second cut has nothing to name
        cut(path.read_text(encoding="utf-8"), "2026.3", datetime.date(2026, 12, 11), "fedcba987654")


def test_release_numbers_count_within_a_year():
    assert next_name(None, datetime.date(2026, 3, 1)) == "2026.1"
    assert next_name("2026.4", datetime.date(2026, 3, 1)) == "2026.5"
    assert next_name("2026.4", datetime.date(2027, 1, 5)) == "2027.1"


def test_the_repository_changelog_names_the_release_the_student_release_carries():
    """One truth: release.json's name is CHANGELOG.md's newest release (`make assignment` after `make release`)."""
    changelog = read(os.path.join(REPO, "CHANGELOG.md"))
    with open(os.path.join(REPO, "assignment", "release.json"), encoding="utf-8") as f:
        stamp = json.load(f)
    assert stamp.get("release") == changelog.current, "run `make assignment` after `make release`"
