"""The course's policy for AI assistants: one source (tools/student/AGENTS.md), shipped as the release's
AGENTS.md and CLAUDE.md, and its policy paragraph printed in the handout's integrity section."""

from __future__ import annotations

import os
import re

from conftest import REPO, write

from tools.release import build_release

SOURCE = os.path.join(REPO, "tools", "student", "AGENTS.md")
TARGETS = ("AGENTS.md", "CLAUDE.md")


def policy_of(text: str) -> str:
    found = re.search(r"<!-- policy:.*?-->\n(.*?)\n<!-- /policy -->", text, re.S)
    assert found, "the policy paragraph's markers are missing"
    return found[1]


def test_the_release_ships_the_source_to_every_assistant(real_release):
    with open(SOURCE, encoding="utf-8") as f:
        source = f.read()
    for name in TARGETS:
        with open(os.path.join(real_release, name), encoding="utf-8") as f:
            shipped = f.read()
        assert shipped.startswith("<!-- GENERATED from tools/student/AGENTS.md")
        assert policy_of(shipped) == policy_of(source)
        before, after = source.split("{{STUDENT_FILES}}")
        assert before in shipped and after in shipped
        for path in ("minddp/reducer.py", "minddp/ddp.py", "answers.py"):  # the files it must not write
            assert f"`{path}`" in shipped.split("What not to do")[1]


def test_the_handout_prints_the_same_policy():
    """(handout/tests/test_policy_paragraph.py: generated/assistants.tex follows the source when it changes)"""
    with open(os.path.join(REPO, "handout", "generated", "assistants.tex"), encoding="utf-8") as f:
        generated = f.read()
    with open(SOURCE, encoding="utf-8") as f:
        words = re.findall(r"[a-z]+", policy_of(f.read()).lower())
    assert re.findall(r"[a-z]+", re.sub(r"\\[a-z]+|^%.*\n", " ", generated).lower()) == words
    with open(os.path.join(REPO, "handout", "grading.tex"), encoding="utf-8") as f:
        integrity = f.read().split(r"\section{Academic integrity")[1]
    assert r"\input{generated/assistants}" in integrity


def test_one_edit_of_the_source_changes_the_release(mini):
    changed = os.path.join(mini.templates, "AGENTS.md")
    with open(changed, encoding="utf-8") as f:
        text = f.read()
    text = text.replace("**AI assistants.**", "**AI assistants.** This term, assistants are not allowed at all.")
    write(changed, text)
    files = build_release(mini).files
    assert all(b"assistants are not allowed at all" in files[name] for name in TARGETS)
