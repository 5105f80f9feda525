"""Results (pure): scores.csv's rows, the summary's table, the changed list of two graders' results."""

from __future__ import annotations

import csv
import json
import os
import statistics
from dataclasses import dataclass

from .export import Submission, sort_key

CSV_HEADER = ["submission", "submitters", "check", "name", "score", "max_score", "status", "message", "release",
              "release_changed", "grader_version"]
CHANGED_HEADER = ["submission", "submitters", "old_score", "new_score", "change", "checks", "old_grader_version",
                  "new_grader_version"]


@dataclass(frozen=True)
class Change:
    id: str
    old: float | None  # None: not graded by that grader
    new: float | None
    checks: tuple[tuple[str, float | None, float | None], ...]  # (check number, old score, new score)


def check_key(test: dict) -> str:
    return str(test.get("number") or test.get("name", "?"))


def first_line(text: str | None) -> str:
    return next((line.strip() for line in (text or "").splitlines() if line.strip()), "")


def score_rows(submissions: list[Submission], results: dict[str, dict | None], version: str = "") -> list[list]:
    """One row per submission x check, in the export's order and the grader's order of checks. A grading
    without checks (the grader failed, or left no results.json) still gets one row: no submission vanishes.
    ``version``: the grader's (results.json's own where it has one: grader/grader_version.py)."""
    rows = []
    for sub in submissions:
        data = results.get(sub.id)
        tests = (data or {}).get("tests") or []
        extra = (data or {}).get("extra_data") or {}
        release = extra.get("release") or {}  # grader/version.py: which release
        named = release.get("submission_release")  # "2026.1 (digest)", as the student's results name it
        stamp = [f"{named} ({release.get('submission')})" if named else release.get("submission") or "",
                 " ".join(release.get("changed") or []), (extra.get("grader") or {}).get("version") or version]
        for test in tests:
            rows.append([sub.id, sub.submitters, check_key(test), test.get("name", ""), test.get("score", 0.0),
                         test.get("max_score", 0.0), test.get("status", ""), first_line(test.get("output")), *stamp])
        if not tests:
            why = first_line(data.get("output")) if data else "no results.json: see grader.log in the run folder"
            rows.append([sub.id, sub.submitters, "", "(no checks graded)", (data or {}).get("score", 0.0), 0.0,
                         "error", why, *stamp])
    return rows


def write_csv(path: str, header: list[str], rows: list[list]) -> str:
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(header)
        writer.writerows(rows)
    return path


def total(data: dict | None) -> float:
    return float((data or {}).get("score") or 0.0)


def check_order(results: dict[str, dict | None]) -> list[tuple[str, str]]:
    """(number, name) of every check, in the order the grader lists them (the first grading that has it)."""
    seen: dict[str, str] = {}
    for data in results.values():
        for test in (data or {}).get("tests") or []:
            seen.setdefault(check_key(test), test.get("name", ""))
    return list(seen.items())


def failure_rates(results: dict[str, dict | None]) -> list[tuple[str, str, int, int]]:
    """(number, name, submissions failing it, submissions graded on it) per check, in the grader's order."""
    rates = []
    for number, name in check_order(results):
        statuses = [t.get("status") for data in results.values() for t in (data or {}).get("tests") or []
                    if check_key(t) == number]
        rates.append((number, name, sum(s != "passed" for s in statuses), len(statuses)))
    return rates


def summary(results: dict[str, dict | None], label: str, problems: dict[str, list[str]] | None = None,
            checks: bool = True) -> str:
    """The table printed at the end: how many, mean / median score, each check's failure rate (``checks``)."""
    scores = [total(d) for d in results.values()]
    lines = [f"{label}: {len(scores)} submission(s)"]
    if scores:
        lines.append(f"score: mean {statistics.mean(scores):.2f}, median {statistics.median(scores):.2f}, "
                     f"min {min(scores):g}, max {max(scores):g}")
    if checks:
        lines += ["", f"{'check':<7} {'failed':>9} {'rate':>5}  name", f"{'-' * 7} {'-' * 9} {'-' * 5}  {'-' * 40}"]
    for number, name, failed, graded in failure_rates(results) if checks else []:
        lines.append(f"{number:<7} {f'{failed}/{graded}':>9} {failed / graded:>5.0%}  {name[:70]}")
    bad = {k: v for k, v in (problems or {}).items() if v}
    if bad:
        lines += ["", f"grading problems ({len(bad)} submission(s); see runs/*/<id>/grader.log):"]
        lines += [f"  {k}: {'; '.join(v)[:300]}" for k, v in sorted(bad.items(), key=lambda kv: sort_key(kv[0]))]
    return "\n".join(lines)


def scores_of(data: dict | None) -> dict[str, float]:
    return {check_key(t): float(t.get("score") or 0.0) for t in (data or {}).get("tests") or []}


def changes(old: dict[str, dict | None], new: dict[str, dict | None], tolerance: float = 1e-6) -> list[Change]:
    """The submissions whose total score differs between two sets of results.json (by submission id), each
    with the checks whose score differs (a check one grader does not have counts as None)."""
    found = []
    for sid in sorted(set(old) | set(new), key=sort_key):
        before = total(old[sid]) if old.get(sid) is not None else None
        after = total(new[sid]) if new.get(sid) is not None else None
        if before is not None and after is not None and abs(before - after) <= tolerance:
            continue
        a, b = scores_of(old.get(sid)), scores_of(new.get(sid))
        order = list(b) + [k for k in a if k not in b]
        checks = tuple((k, a.get(k), b.get(k)) for k in order
                       if a.get(k) is None or b.get(k) is None or abs(a[k] - b[k]) > tolerance)
        found.append(Change(sid, before, after, checks))
    return found


def number_text(value: float | None) -> str:
    return "-" if value is None else f"{value:g}"


def change_rows(found: list[Change], submitters: dict[str, str], versions: tuple[str, str] = ("", "")) -> list[list]:
    """changed.csv's rows; ``versions``: the old and the new grader's versions (each row names both)."""
    rows = []
    for c in found:
        delta = "" if c.old is None or c.new is None else f"{c.new - c.old:+g}"
        checks = "; ".join(f"{k}: {number_text(a)} -> {number_text(b)}" for k, a, b in c.checks)
        rows.append([c.id, submitters.get(c.id, ""), number_text(c.old), number_text(c.new), delta, checks,
                     *versions])
    return rows


def change_text(found: list[Change], submitters: dict[str, str], graded: int) -> str:
    if not found:
        return f"no submission's score changed ({graded} compared)"
    lines = [f"{len(found)} of {graded} submission(s) change score:"]
    for sid, who, old, new, delta, checks, *_ in change_rows(found, submitters):
        lines.append(f"  {sid}{' ' + who if who else ''}: {old} -> {new} ({delta or 'not graded by both'}); checks {checks}")
    return "\n".join(lines)


def load_results(folder: str) -> dict[str, dict]:
    """A regrade output folder's results (its results/<id>.json), or a folder of <id>.json files."""
    inner = os.path.join(folder, "results")
    folder = inner if os.path.isdir(inner) else folder
    found = {}
    for name in sorted(os.listdir(folder)):
        if name.endswith(".json"):
            with open(os.path.join(folder, name), encoding="utf-8") as f:
                found[name[:-5]] = json.load(f)
    return found


def compare_folders(old_out: str, new_out: str) -> list[Change]:
    """The changed list of two regrade output folders (e.g. two runs of `make regrade` on one export)."""
    return changes(load_results(old_out), load_results(new_out))
