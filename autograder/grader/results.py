"""results.json, written the way Gradescope reads it, without gradescope-utils' holes.

Every check becomes exactly one entry, whatever happened to it (passed, failed, errored, timed out,
skipped because its part could not be staged): a check can never silently vanish. The file is written
first as a fallback (score 0 and a message), then replaced atomically by the final one, so a crash at any
point still leaves Gradescope a valid file. Each ``output`` is cut well below Gradescope's 100,000
characters.
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass, field

MAX_OUTPUT_CHARS = 20_000  # per test; Gradescope cuts at 100,000 and a page of feedback is enough
MAX_TOP_OUTPUT_CHARS = 20_000


@dataclass
class TestResult:
    name: str
    number: str
    max_score: float
    score: float = 0.0
    status: str = "failed"  # "passed" or "failed", as Gradescope shows it
    output: str = ""
    visibility: str = "visible"
    tags: list[str] = field(default_factory=list)
    extra_credit: bool = False
    part: str = ""  # "1".."6", "A", "B" (not written: Gradescope has no such field)

    def as_json(self) -> dict:
        entry = {"name": plain(self.name), "number": self.number, "score": round(self.score, 4),
                 "max_score": 0.0 if self.extra_credit else round(self.max_score, 4), "status": self.status,
                 "output": clip(plain(self.output), MAX_OUTPUT_CHARS), "output_format": "text",
                 "name_format": "text", "visibility": self.visibility}
        if self.tags:
            entry["tags"] = list(self.tags)
        return entry


def plain(text: str) -> str:
    """Text without control characters (terminal escapes, NULs) but newlines and tabs: student code writes
    much of it, and every output is declared plain text ("output_format": "text"), never HTML or Markdown."""
    return "".join(c for c in text if c in "\n\t" or (ord(c) >= 32 and ord(c) != 127))


def clip(text: str, limit: int) -> str:
    """At most ``limit`` characters: the head and the tail, which is where errors are."""
    if len(text) <= limit:
        return text
    half = (limit - 60) // 2
    return f"{text[:half]}\n\n[... {len(text) - 2 * half} characters cut ...]\n\n{text[-half:]}"


def write_json_atomically(path: str, data: dict) -> None:
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".results-", suffix=".json")
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        json.dump(data, f, indent=1)
    os.replace(tmp, path)


def write_fallback(path: str, message: str) -> None:
    write_json_atomically(path, {"score": 0.0, "output": message, "tests": []})


def write_results(path: str, tests: list[TestResult], output: str, execution_time_s: float,
                  extra: dict | None = None) -> dict:
    data = {
        "score": round(sum(t.score for t in tests), 4),
        "output": clip(plain(output), MAX_TOP_OUTPUT_CHARS),
        "output_format": "text",
        "test_output_format": "text",
        "test_name_format": "text",
        "execution_time": round(execution_time_s, 1),
        "visibility": "visible",
        "stdout_visibility": "hidden",
        "tests": [t.as_json() for t in tests],
        "extra_data": dict(extra or {}),  # for staff tools (the self-test), never shown to students
    }
    write_json_atomically(path, data)
    return data
