"""Which release a submission was built from, and what changed since: read from the release.json that
``make submit`` puts in submission.zip (tools/release.py writes it into every release) and compared with
the grader's own. A student who worked from an older release sees which parts changed, so that neither
they nor a TA mistake a stale release for a mistake in the code.

The upload's copy is student data: only hex digests and a release's name (YEAR.N) are read from it, and nothing
of it is echoed but them.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field

from grader.stage import Upload, locate

NAME = "release.json"
DIGEST_RE = re.compile(r"[0-9a-f]{6,64}")
NAME_RE = re.compile(r"\d{4}\.\d{1,4}")  # a release's name (CHANGELOG.md: tools/changelog.py)


@dataclass
class Release:
    version: str | None  # None: unknown (no release.json, or one that cannot be read)
    parts: dict[str, str] = field(default_factory=dict)
    shared: str | None = None
    name: str | None = None  # the release's name, e.g. 2026.1 (None: a release from before names)

    def called(self) -> str:
        """How messages name it: "2026.1 (5e1f0c2a9b3d)", or the digest alone."""
        return f"{self.name} ({self.version})" if self.name else str(self.version)


def parse(data: bytes | None) -> Release:
    try:
        raw = json.loads(data.decode("utf-8")) if data else {}
    except (UnicodeDecodeError, ValueError):
        raw = {}
    raw = raw if isinstance(raw, dict) else {}

    def digest(value: object) -> str | None:
        return value if isinstance(value, str) and DIGEST_RE.fullmatch(value) else None
    parts = raw.get("parts") if isinstance(raw.get("parts"), dict) else {}
    name = raw.get("release")
    return Release(digest(raw.get("version")), {str(k)[:2]: d for k, v in parts.items() if (d := digest(v))},
                   digest(raw.get("shared")), name if isinstance(name, str) and NAME_RE.fullmatch(name) else None)


def ours(skeleton: str) -> Release:
    path = os.path.join(skeleton, NAME)
    if not os.path.isfile(path):  # a release built before releases carried a version
        return Release(None)
    with open(path, "rb") as f:
        return parse(f.read())


def theirs(upload: Upload) -> Release:
    hits = locate(list(upload.files), NAME)
    return parse(upload.files[hits[0]] if hits else None)


def record(grader: Release, submission: Release) -> dict:
    """For staff tools (results.json's extra_data; `make regrade`'s CSV)."""
    return {"grader": grader.version, "submission": submission.version, "grader_release": grader.name,
            "submission_release": submission.name,
            "changed": changed_parts(grader, submission) if submission.version not in (None, grader.version) else []}


def changed_parts(grader: Release, submission: Release) -> list[str]:
    """The parts whose checks, stubs or tests differ between the two releases ("shared": the rest)."""
    changed = [part for part, digest in grader.parts.items() if submission.parts.get(part) != digest]
    return changed + (["shared"] if grader.shared != submission.shared else [])


def note(grader: Release, submission: Release, label: dict[str, str]) -> str:
    """What the student reads at the top of the results (empty when the releases agree)."""
    if grader.version is None:
        return ""
    if submission.version is None:
        return (f"Release: this grader grades release {grader.called()}; your upload does not say which release "
                "your files come from (`make submit` adds release.json to submission.zip).")
    if submission.version == grader.version:
        return ""
    changed = changed_parts(grader, submission)
    what = ", ".join(label.get(part, part) for part in changed) or "nothing a check reads"
    return (f"Release: your files come from release {submission.called()}, older or other than the one this "
            f"grader grades ({grader.called()}). Changed since: {what}. If a check fails that you believe your code passes, "
            "download the current release, copy your files into it and run `make test` there (course staff can "
            "tell a stale release from a mistake by this line).")
