"""The hints: solutions/hints/ into the release (tools/hints.py), opened one level at a time by the student's
`make hint` (course.py), withheld by the one setting, and absent from the handout."""

from __future__ import annotations

import glob
import json
import os
import re
import zipfile

import pytest
from conftest import REPO, make, write

from tools.hints import HintError, parse, read_sources
from tools.release import ReleaseError, build_release, write_release
from tools.student.course import HINT_INDEX, HINTS, OPENED, hint_path, part_label, unseal_hint

SOLUTIONS = os.path.join(REPO, "solutions")
TWO_LEVELS = "# Part 2\n\nstaff notes\n\n## Level 1: a nudge\n\nLook at the sizes.\n\n## Level 2: the recipe\n\nSum them.\n"


def real_levels() -> dict[str, list]:
    with open(os.path.join(SOLUTIONS, "student_files.json"), encoding="utf-8") as f:
        config = json.load(f)
    parts = {str(e["part"]): e["name"] for e in config["files"]} | {b["part"]: b["name"] for b in config["bonus"]}
    return read_sources(SOLUTIONS, parts)


def test_every_hint_level_reaches_the_release(real_release):
    levels = real_levels()
    assert {"3", "4", "A", "B"} <= set(levels)
    with open(os.path.join(real_release, HINTS, HINT_INDEX), encoding="utf-8") as f:
        index = json.load(f)["parts"]
    with open(os.path.join(SOLUTIONS, "hints", "released.json"), encoding="utf-8") as f:
        assert json.load(f)["highest_level"] is None, "the repository releases every level (tests below withhold)"
    for part, part_levels in levels.items():
        assert index[part]["levels"] == [level.title for level in part_levels] and index[part]["withheld"] == 0
        for level in part_levels:
            with open(os.path.join(real_release, hint_path(part, level.number)), "rb") as f:
                sealed = f.read()
            assert level.text in unseal_hint(sealed)
            assert not any(line.strip() and line.strip().encode() in sealed for line in level.text.splitlines()
                           if len(line.strip()) > 12), "a search of the release must not find a hint's words"
    with open(os.path.join(real_release, ".gitignore"), encoding="utf-8") as f:
        assert OPENED in f.read().split()


def test_make_hint_opens_the_levels_in_order_and_says_how_many_remain(real_release):
    count = len(real_levels()["3"])
    listed = make(real_release, "hint")
    assert listed.returncode == 0 and re.search(rf"PART=3 .* {count} levels, none opened", listed.stdout), listed.stdout
    texts = [level.text for level in real_levels()["3"]]
    for number in range(1, count + 1):
        shown = make(real_release, "hint", "PART=3")
        assert shown.returncode == 0, shown.stderr
        assert texts[number - 1] in shown.stdout
        assert not any(text in shown.stdout for text in texts[:number - 1] + texts[number:]), "one level at a time"
        assert f"hint level {number} of {count}" in shown.stdout
        left = count - number
        if left:
            assert f"{left} more level{'s' * (left != 1)} of Part 3: `make hint PART=3` opens level {number + 1}" \
                in shown.stdout
        else:
            assert "That was the last level of Part 3" in shown.stdout
    done = make(real_release, "hint", "PART=reducer")  # the file's name works as for `make test`
    assert done.returncode == 0 and f"You have opened all {count} hint levels of Part 3" in done.stdout
    assert not any(text in done.stdout for text in texts)
    again = make(real_release, "hint", "PART=3", "LEVEL=1")
    assert again.returncode == 0 and texts[0] in again.stdout and texts[1] not in again.stdout
    assert f"You have opened all {count} levels of Part 3" in again.stdout and "That was the last" not in again.stdout
    assert re.search(rf"PART=3 .* {count} levels, {count} opened", make(real_release, "hint").stdout)
    with open(os.path.join(real_release, OPENED), encoding="utf-8") as f:
        assert json.load(f) == {"3": count}


def test_make_hint_refuses_to_skip_a_level_and_names_parts_without_hints(real_release):
    skipped = make(real_release, "hint", "PART=4", "LEVEL=2")
    assert skipped.returncode != 0 and "level 1 is next (`make hint PART=4`)" in skipped.stderr
    none = make(real_release, "hint", "PART=1")
    assert none.returncode != 0 and "Part 1 has no hints (parts with hints: 2, 3, 4, 5, A, B" in none.stderr
    assert not os.path.exists(os.path.join(real_release, OPENED))


def test_the_opened_record_is_never_submitted(real_release):
    make(real_release, "hint", "PART=A")
    assert os.path.isfile(os.path.join(real_release, OPENED))
    assert make(real_release, "submit", "FORCE=1").returncode == 0
    with zipfile.ZipFile(os.path.join(real_release, "submission.zip")) as zf:
        assert OPENED not in zf.namelist()


# -- the one setting: withheld levels ---------------------------------------------------------------------------

def with_hints(mini, highest_level: object, text: str = TWO_LEVELS) -> None:
    write(os.path.join(mini.solutions, "hints", "2.md"), text)
    write(os.path.join(mini.solutions, "hints", "released.json"), json.dumps({"highest_level": highest_level}))


@pytest.mark.parametrize("setting", [1, {"2": 1}])
def test_a_withheld_level_is_not_in_the_release_and_make_hint_says_so(mini, setting):
    with_hints(mini, setting)
    files = build_release(mini).files
    assert hint_path("2", 1) in files and hint_path("2", 2) not in files
    assert not any(b"Sum them." in data for data in files.values()), "the withheld level's text is nowhere"
    write_release(files, mini.assignment)
    first = make(mini.assignment, "hint", "PART=2")
    assert "Look at the sizes." in first.stdout and "The course has not released more hints for Part 2" in first.stdout
    second = make(mini.assignment, "hint", "PART=2")
    assert second.returncode == 0 and "You have opened all 1 hint levels of Part 2" in second.stdout
    assert "The course has not released more hints for Part 2" in second.stdout
    assert "1 level, 1 opened (the course has not released 1 more yet)" in make(mini.assignment, "hint").stdout


def test_every_level_is_released_without_a_setting(mini):
    with_hints(mini, None)
    files = build_release(mini).files
    assert hint_path("2", 2) in files and json.loads(files[f"{HINTS}/{HINT_INDEX}"])["parts"]["2"]["withheld"] == 0


@pytest.mark.parametrize(("text", "setting", "message"), [
    (TWO_LEVELS.replace("## Level 2", "## Level 3"), None, "2.md:9: level 3 where level 2 comes next"),
    (TWO_LEVELS.replace("## Level 1: a nudge", "## Step 1"), None, "2.md:5: a '## ' heading must read"),
    (TWO_LEVELS.replace("Look at the sizes.", ""), None, "2.md: level 1 (a nudge) is empty"),
    ("just text\n", None, "2.md: no level"),
    (TWO_LEVELS, {"7": 1}, "released.json: no hints for part '7'"),
    (TWO_LEVELS, -1, "released.json: highest_level must be null (every level) or a number >= 0"),
])
def test_hint_mistakes_are_named(mini, text, setting, message):
    with_hints(mini, setting, text)
    with pytest.raises(ReleaseError, match=re.escape(message)):
        build_release(mini)


def test_a_hint_file_of_no_part_is_named(mini):
    with_hints(mini, None)
    write(os.path.join(mini.solutions, "hints", "reducer.md"), TWO_LEVELS)
    with pytest.raises(ReleaseError, match=r"solutions/hints/reducer.md: not a part's hints; name it <part>.md"):
        build_release(mini)


# -- the handout prints no hint ---------------------------------------------------------------------------------

RUN = 12  # words in a row: a sentence's worth (the pitfall box of §4 and Part 4's level 1 share a clause of 11)


def words(text: str) -> list[str]:
    """The lower-case words of LaTeX or markdown: commands and markup dropped, their arguments kept."""
    return re.findall(r"[a-z0-9_]+", re.sub(r"\\[a-zA-Z]+\*?", " ", text.replace("\\_", "_")).lower())


def handout_runs(extra: str = "") -> set[tuple[str, ...]]:
    found: set[tuple[str, ...]] = set()
    for path in sorted(glob.glob(os.path.join(REPO, "handout", "*.tex")) +
                       glob.glob(os.path.join(REPO, "handout", "generated", "*.tex"))):
        with open(path, encoding="utf-8") as f:
            text = words(f.read())
        found |= {tuple(text[i:i + RUN]) for i in range(len(text) - RUN + 1)}
    text = words(extra)
    return found | {tuple(text[i:i + RUN]) for i in range(len(text) - RUN + 1)}


def printed_levels(runs: set[tuple[str, ...]]) -> list[str]:
    printed = []
    for part, levels in real_levels().items():
        for level in levels:
            text = words(level.text)
            hits = [" ".join(text[i:i + RUN]) for i in range(len(text) - RUN + 1) if tuple(text[i:i + RUN]) in runs]
            printed += [f"{part_label(part)}, level {level.number}: '{hits[0]}'"] if hits else []
    return printed


def test_the_handout_prints_no_hint_level():
    """handout.pdf's sources (handout/*.tex and generated/*.tex) hold no run of RUN words of any hint level."""
    printed = printed_levels(handout_runs())
    assert not printed, "the handout prints hint text (hints belong in solutions/hints/):\n" + "\n".join(printed)


def test_a_hint_pasted_into_the_handout_would_be_found():
    level = real_levels()["3"][1]
    sentence = r"State: per bucket a record (index, parameter indices, flat buffer, one view per parameter, a \code{pending}"
    assert "State: per bucket a record" in level.text
    assert printed_levels(handout_runs(sentence)) == [
        "Part 3, level 2: 'state per bucket a record index parameter indices flat buffer one view'"]


def test_parse_keeps_markdown_as_written():
    levels = parse(TWO_LEVELS, "2.md")
    assert [(lv.number, lv.title, lv.text) for lv in levels] == [(1, "a nudge", "Look at the sizes."),
                                                                  (2, "the recipe", "Sum them.")]
    with pytest.raises(HintError):
        parse("## Level 2: x\n\ny\n", "2.md")
