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
    """Text without control or format characters (terminal escapes, NULs, bidi overrides, zero-width marks)
    but newlines and tabs: student code writes much of it, and every output is declared plain text
    ("output_format": "text"), never HTML or Markdown."""
    import unicodedata
    return "".join(c for c in text if c in "\n\t" or unicodedata.category(c) not in ("Cc", "Cf", "Cs", "Co", "Cn"))


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
        "visibility": "visible",
        "stdout_visibility": "hidden",
        "tests": [t.as_json() for t in tests],
        # For staff tools (the self-test), never shown to students: the grading's time too, measured after the
        # hidden runs (Gradescope would show a top-level execution_time; SECURITY.md: hidden inputs).
        "extra_data": {**(extra or {}), "execution_s": round(execution_time_s, 1)},
    }
    write_json_atomically(path, data)
    return data


# -- what Gradescope accepts (its autograder specification) -------------------------------------------------

VISIBILITIES = ("hidden", "after_due_date", "after_published", "visible")
FORMATS = ("text", "html", "simple_format", "md", "ansi")
GRADESCOPE_LIMIT = 100_000  # characters of one output


def gradescope_problems(results: object) -> list[str]:
    """What in ``results`` Gradescope would reject or show wrongly (empty: a valid results.json)."""
    if not isinstance(results, dict):
        return ["results.json is not an object"]
    problems = []
    types = {"score": (int, float), "execution_time": (int, float), "output": str, "output_format": str,
             "test_output_format": str, "test_name_format": str, "visibility": str, "stdout_visibility": str,
             "extra_data": dict, "tests": list}
    for key, value in results.items():
        if key not in types:
            problems.append(f"unknown top-level key {key!r}")
        elif not isinstance(value, types[key]) or isinstance(value, bool):
            problems.append(f"top-level {key} is a {type(value).__name__}")
    if not isinstance(results.get("score"), (int, float)):
        problems.append("no numeric top-level score")
    if not isinstance(results.get("tests"), list) or not results["tests"]:
        return problems + ["no tests list (or an empty one)"]
    for key in ("visibility", "stdout_visibility"):
        if key in results and results[key] not in VISIBILITIES:
            problems.append(f"top-level {key} {results[key]!r}")
    for key in ("output_format", "test_output_format", "test_name_format"):
        if key in results and results[key] not in FORMATS:
            problems.append(f"top-level {key} {results[key]!r}")
    if len(results.get("output", "")) >= GRADESCOPE_LIMIT:
        problems.append(f"top-level output has {len(results['output'])} characters (limit {GRADESCOPE_LIMIT})")
    for test in results["tests"]:
        label = f"test {test.get('number', '?')} {str(test.get('name', '?'))[:60]!r}"
        for key, kind in (("name", str), ("number", str), ("score", (int, float)), ("max_score", (int, float)),
                          ("output", str)):
            if not isinstance(test.get(key), kind) or isinstance(test.get(key), bool):
                problems.append(f"{label}: {key} missing or of the wrong type")
        if test.get("status") not in ("passed", "failed"):
            problems.append(f"{label}: status {test.get('status')!r}")
        if test.get("visibility", "visible") not in VISIBILITIES:
            problems.append(f"{label}: visibility {test.get('visibility')!r}")
        for key in ("output_format", "name_format"):
            if test.get(key, "text") not in FORMATS:
                problems.append(f"{label}: {key} {test.get(key)!r}")
        if len(test.get("output", "")) >= GRADESCOPE_LIMIT:
            problems.append(f"{label}: output has {len(test['output'])} characters (limit {GRADESCOPE_LIMIT})")
    total = sum(t["score"] for t in results["tests"] if isinstance(t.get("score"), (int, float)))
    if isinstance(results.get("score"), (int, float)) and abs(results["score"] - total) > 1e-3:
        problems.append(f"score {results['score']} is not the sum of the tests' scores ({total})")
    return problems
