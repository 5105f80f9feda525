"""A whole submission written from the student zip and the handout's contracts alone, by a helper who never saw the reference (2026-12-02: 17 minutes, no hint opened): every file as uploaded (submissions/handout-only.zip)."""
import os
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))

with zipfile.ZipFile(os.path.join(HERE, "..", "submissions", "handout-only.zip")) as archive:
    EDITS = {name: archive.read(name).decode("utf-8") for name in archive.namelist()}
