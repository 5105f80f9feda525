"""The handout's paragraph on AI assistants (§8) is the policy paragraph of tools/student/AGENTS.md, the one
source the release also ships as AGENTS.md and CLAUDE.md (tools/tests/test_assistants.py)."""

from __future__ import annotations

import os
import shutil

from handout import figures


def test_the_paragraph_follows_its_source(monkeypatch, tmp_path):
    changed = str(tmp_path / "AGENTS.md")
    shutil.copyfile(figures.AGENTS, changed)
    with open(changed, encoding="utf-8") as f:
        text = f.read()
    assert "**AI assistants.**" in text
    with open(changed, "w", encoding="utf-8") as f:
        f.write(text.replace("**AI assistants.**", "**AI assistants.** This term, `none` at all."))
    monkeypatch.setattr(figures, "AGENTS", changed)
    assert r"\textbf{AI assistants.} This term, \code{none} at all." in figures.assistants_tex()


def test_the_integrity_section_prints_it():
    with open(os.path.join(figures.HERE, "grading.tex"), encoding="utf-8") as f:
        integrity = f.read().split(r"\section{Academic integrity")[1]
    assert r"\input{generated/assistants}" in integrity
