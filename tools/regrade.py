"""Staff tool: regrade a Gradescope export with this tree's grader and see whose score a new grader changes.

    make regrade EXPORT=export.zip [OLD=git-rev] [JOBS=n] [OUT=dist/regrade]
    python -m tools.regrade EXPORT [--old REV] [--jobs N] [--out DIR]

EXPORT is Gradescope's "Export Submissions" zip, the folder it unzips to, or any folder of submission
folders / zips. Every submission is graded as `make grade` grades one: the source folder built once by
autograder/assemble.py, each submission in its own folder laid out like /autograder, graded by the one
grading entry point (autograder/grade.py: Gradescope's run_autograder) against ONE reference pass per
grader (run_autograder's MINDDP_REFERENCE_CACHE, computed by the first grading), JOBS at a time. OLD=rev
grades them again with the grader of that git revision (its own assemble.py, or build.py before it was
named so, and grader) and lists the submissions whose score changed.

OUT (default dist/regrade) gets:

    scores.csv, summary.txt          one row per submission x check; the table printed at the end
    scores.png, failures.png         score histogram; failures per check, by part (public and hidden inputs)
    results/<id>.json                each submission's results.json (what ``compare_folders`` reads)
    with OLD: results-old/, scores-old.csv, changed.csv, old_vs_new.png
    runs/<grader hash>/              resumable state: the built grader (source/), its reference pass, and
                                     submissions/<id>/ (results/results.json, grader.log, graded.json)

A submission whose graded.json names the same submission content under the same grader hash is not graded
again: interrupting and rerunning the command continues where it stopped.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import importlib.util
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import uuid
import zipfile
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import dataclass

TOOLS = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(TOOLS)
AUTOGRADER = os.path.join(REPO, "autograder")
METADATA = "submission_metadata.yml"
MB_PER_GRADING = 800  # a grading's peak (grader, fork servers, two workers): what bounds JOBS on memory
RUN_TAG = "MINDDP_REGRADE_RUN"  # in every grader's environment: finds them when the run is interrupted
CSV_HEADER = ["submission", "submitters", "check", "name", "score", "max_score", "status", "message", "release",
              "release_changed"]
CHANGED_HEADER = ["submission", "submitters", "old_score", "new_score", "change", "checks"]


class RegradeError(Exception):
    """Bad input: the message says what to fix."""


@dataclass(frozen=True)
class Submission:
    id: str  # "123" for Gradescope's submission_123
    path: str  # its folder or .zip in the export
    submitters: str = ""  # "Name <email> (sid); ..." from submission_metadata.yml


@dataclass(frozen=True)
class Change:
    id: str
    old: float | None  # None: not graded by that grader
    new: float | None
    checks: tuple[tuple[str, float | None, float | None], ...]  # (check number, old score, new score)


# -- reading the export (pure) ---------------------------------------------------------------------------------

def submission_id(name: str) -> str:
    """"submission_123" or "submission_123.zip" -> "123"; any other name stays (a hand-made folder)."""
    stem = name[:-4] if name.lower().endswith(".zip") else name
    return stem[len("submission_"):] if stem.startswith("submission_") else stem


def candidates(folder: str) -> list[str]:
    """The entries of ``folder`` that can be submissions: folders and zips, not hidden or macOS debris."""
    names = [n for n in os.listdir(folder) if not n.startswith((".", "__MACOSX")) and n != METADATA]
    return sorted(n for n in names if os.path.isdir(os.path.join(folder, n)) or n.lower().endswith(".zip"))


def export_root(folder: str) -> str:
    """The folder holding the submissions: ``folder``, or the one folder in it (Gradescope's zip has one top
    folder) when that one holds the metadata or submission_<id> entries (a lone hand-made submission does not)."""
    entries = candidates(folder)
    if os.path.exists(os.path.join(folder, METADATA)) or len(entries) != 1:
        return folder
    inner = os.path.join(folder, entries[0])
    if os.path.isdir(inner) and (os.path.exists(os.path.join(inner, METADATA)) or
                                 any(n.startswith("submission_") for n in candidates(inner))):
        return inner
    return folder


def sort_key(submission_id: str) -> tuple:
    """Numeric ids in numeric order (Gradescope's are integers), then the others by name."""
    return (0, int(submission_id), "") if submission_id.isdigit() else (1, 0, submission_id)


def read_export(folder: str) -> list[Submission]:
    """Every submission of an unzipped export, with its submitters when submission_metadata.yml names them."""
    root = export_root(folder)
    metadata_path = os.path.join(root, METADATA)
    metadata = read_metadata(metadata_path) if os.path.exists(metadata_path) else {}
    found: dict[str, Submission] = {}
    for name in candidates(root):
        sid = submission_id(name)
        if sid in found:
            raise RegradeError(f"{root} holds two submissions with id {sid} ({name} and "
                               f"{os.path.basename(found[sid].path)}): keep one")
        found[sid] = Submission(sid, os.path.join(root, name), submitters_text(metadata.get(sid, {})))
    if not found:
        raise RegradeError(f"no submissions found in {folder}: expected Gradescope's export (submission_<id>/ "
                           "folders beside submission_metadata.yml) or a folder of submission folders or .zip files")
    return [found[k] for k in sorted(found, key=sort_key)]


def lone_zip(folder: str) -> str | None:
    """The .zip a submission folder holds and nothing else (the student uploaded a zip), if it is one."""
    if not os.path.isdir(folder):
        return None
    entries = [n for n in os.listdir(folder) if not n.startswith(".")]
    if len(entries) == 1 and entries[0].lower().endswith(".zip"):
        path = os.path.join(folder, entries[0])
        return path if os.path.isfile(path) and zipfile.is_zipfile(path) else None
    return None


def lay_out(path: str, target: str) -> str:
    """The submission as Gradescope hands it to the autograder: an uploaded zip extracted (the export keeps
    the zip as uploaded), a folder as it is (links stay links: the grader refuses them, as on Gradescope)."""
    return entry_point().place_submission(lone_zip(path) or path, target)


# -- submission_metadata.yml (pure) -----------------------------------------------------------------------------
# Ruby's YAML of symbols (":name: Alice"). Only the submitters, :score: and :created_at: are read, so a
# few lines of indentation tracking do, where a YAML library would be one more dependency; whatever else a
# submission holds (:results:, nested deeper) is skipped by its indentation.

KEY = re.compile(r"^(?:- )?:?([A-Za-z_][\w]*):(?:\s+(.*))?$")


def yaml_scalar(text: str | None) -> str:
    text = (text or "").strip()
    if len(text) >= 2 and text[0] == text[-1] == "'":
        return text[1:-1].replace("''", "'")
    if len(text) >= 2 and text[0] == text[-1] == '"':
        try:
            return json.loads(text)  # YAML's double-quoted escapes are JSON's, for what names and emails hold
        except ValueError:
            return text[1:-1]
    return "" if text in ("~", "null") else text


def read_metadata(path: str) -> dict[str, dict]:
    """{submission id: {"submitters": [{"name", "email", "sid"}], "score": float | None, "created_at": str}}."""
    with open(path, encoding="utf-8") as f:
        lines = [line.rstrip("\n") for line in f]
    metadata: dict[str, dict] = {}
    entry, level, key, person = None, None, None, None
    for line in lines:
        if not line.strip() or line.lstrip().startswith("#") or line.startswith(("---", "...")):
            continue
        indent, text = len(line) - len(line.lstrip(" ")), line.strip()
        if indent == 0:  # a submission: "submission_123:" (or ":submission_123:")
            match = KEY.match(text)
            entry = metadata.setdefault(submission_id(match.group(1)), {"submitters": [], "score": None,
                                                                        "created_at": ""}) if match else None
            level = key = person = None
            continue
        if entry is None:
            continue
        level = level or indent  # the indentation of a submission's own keys
        match = KEY.match(text)
        if indent == level and not text.startswith("- "):
            key, person = (match.group(1) if match else None), None
            if key == "score":
                entry["score"] = to_float(yaml_scalar(match.group(2)))
            elif key == "created_at":
                entry["created_at"] = yaml_scalar(match.group(2))
        elif key == "submitters" and match:
            if text.startswith("- "):  # a new submitter (Ruby writes the list at its key's indentation)
                person = {}
                entry["submitters"].append(person)
            if person is not None and match.group(1) in ("name", "email", "sid"):
                person[match.group(1)] = yaml_scalar(match.group(2))
    return metadata


def to_float(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def submitters_text(entry: dict) -> str:
    """"Alice Smith <alice@x.edu> (12345); Bob ..." for the CSV."""
    people = []
    for person in entry.get("submitters", []):
        text = person.get("name", "")
        if person.get("email"):
            text += f" <{person['email']}>"
        if person.get("sid"):
            text += f" ({person['sid']})"
        people.append(text.strip())
    return "; ".join(people)


# -- results: the CSV, the summary, the changes (pure) ----------------------------------------------------------

def check_key(test: dict) -> str:
    return str(test.get("number") or test.get("name", "?"))


def first_line(text: str | None) -> str:
    return next((line.strip() for line in (text or "").splitlines() if line.strip()), "")


def score_rows(submissions: list[Submission], results: dict[str, dict | None]) -> list[list]:
    """One row per submission x check, in the export's order and the grader's order of checks. A grading
    without checks (the grader failed, or left no results.json) still gets one row: no submission vanishes."""
    rows = []
    for sub in submissions:
        data = results.get(sub.id)
        tests = (data or {}).get("tests") or []
        release = ((data or {}).get("extra_data") or {}).get("release") or {}  # grader/version.py: which release
        stamp = [release.get("submission") or "", " ".join(release.get("changed") or [])]
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


def change_rows(found: list[Change], submitters: dict[str, str]) -> list[list]:
    rows = []
    for c in found:
        delta = "" if c.old is None or c.new is None else f"{c.new - c.old:+g}"
        checks = "; ".join(f"{k}: {number_text(a)} -> {number_text(b)}" for k, a, b in c.checks)
        rows.append([c.id, submitters.get(c.id, ""), number_text(c.old), number_text(c.new), delta, checks])
    return rows


def change_text(found: list[Change], submitters: dict[str, str], graded: int) -> str:
    if not found:
        return f"no submission's score changed ({graded} compared)"
    lines = [f"{len(found)} of {graded} submission(s) change score:"]
    for sid, who, old, new, delta, checks in change_rows(found, submitters):
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


# -- plots (matplotlib, no display) -----------------------------------------------------------------------------

def pyplot():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def full_marks() -> float:
    """Every point this tree's checks give, bonus included (the plots' axes end there)."""
    return entry_point().expected_score("full")


def plot_scores(path: str, results: dict[str, dict | None], label: str) -> str:
    plt = pyplot()
    scores = [total(d) for d in results.values()]
    top = max([full_marks()] + scores)
    fig, ax = plt.subplots(figsize=(8, 4.5))
    ax.hist(scores, bins=22, range=(0, top), color="#4878a8", edgecolor="white")
    ax.set(xlabel="score", ylabel="submissions", title=f"Scores of {len(scores)} submission(s), {label}")
    ax.yaxis.get_major_locator().set_params(integer=True)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def check_failures(results: dict[str, dict | None]) -> list[tuple[str, str, int, int, int]]:
    """Per check (its public and hidden entries together), in the grader's order: (number, name, submissions
    failing its public inputs, submissions failing only its hidden ones, submissions graded on it)."""
    rows = []
    for number, name in check_order(results):
        if number.endswith("h") or not re.fullmatch(r"[1-9A-Z]\.\d+", number):  # a hidden twin; the integrity report
            continue
        public = hidden_only = graded = 0
        for data in results.values():
            status = {check_key(t): t.get("status") for t in (data or {}).get("tests") or []}
            if number not in status:
                continue
            graded += 1
            if status[number] != "passed":
                public += 1
            elif status.get(number + "h", "passed") != "passed":
                hidden_only += 1
        rows.append((number, re.sub(r"^(Part \d|Bonus [A-Z]): ", "", name), public, hidden_only, graded))
    return rows


PART_COLOURS = ("#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#b6992d", "#b07aa1", "#9c755f")


def plot_failures(path: str, results: dict[str, dict | None], label: str) -> str:
    """One bar per check, grouped and coloured by part: the share of submissions failing its public inputs
    (solid) and, on top, those that pass them but fail its hidden inputs (hatched)."""
    import textwrap
    plt = pyplot()
    from matplotlib.patches import Patch
    from matplotlib.ticker import PercentFormatter
    rows = check_failures(results)
    parts = list(dict.fromkeys(number.split(".")[0] for number, *_ in rows))
    colour = {part: PART_COLOURS[i % len(PART_COLOURS)] for i, part in enumerate(parts)}
    labels = ["\n".join(textwrap.wrap(f"{number}  {name}", 52, max_lines=2, placeholder=" ...")) or number
              for number, name, *_ in rows]
    fig, ax = plt.subplots(figsize=(10, 1.6 + 0.36 * len(rows)))
    y = list(range(len(rows)))
    public = [p / g if g else 0 for _, _, p, _, g in rows]
    hidden = [h / g if g else 0 for _, _, _, h, g in rows]
    colours = [colour[number.split(".")[0]] for number, *_ in rows]
    ax.barh(y, public, color=colours)
    ax.barh(y, hidden, left=public, color="white", edgecolor=colours, hatch="////", linewidth=0.8)
    for i, (_, _, p, h, g) in enumerate(rows):
        ax.text(public[i] + hidden[i] + 0.01, i, f"{p + h}/{g}" if p + h else "", va="center", fontsize=8)
    ax.set_yticks(y, labels, fontsize=8)
    for tick, c in zip(ax.get_yticklabels(), colours, strict=True):
        tick.set_color(c)
    ax.set_ylim(len(rows) - 0.5, -0.5)  # the grader's order, Part 1 on top; no empty margin
    ax.set_xlim(0, 1.1)
    ax.xaxis.set_major_formatter(PercentFormatter(1.0))
    names = {p: f"Part {p}" if p.isdigit() else f"Bonus {p}" for p in parts}
    ax.legend(handles=[Patch(color=colour[p], label=names[p]) for p in parts]
              + [Patch(facecolor="white", edgecolor="grey", hatch="////", label="passes public, fails hidden")],
              loc="lower right", fontsize=8, ncol=2)
    failing = sum(1 for _, _, p, h, _ in rows if p + h)
    ax.set(xlabel="submissions failing the check",
           title=f"Failures per check, {label}\n{len(results)} submission(s); {failing} of {len(rows)} checks "
                 "failed by at least one")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def plot_old_vs_new(path: str, old: dict[str, dict | None], new: dict[str, dict | None], old_label: str,
                    new_label: str) -> str:
    plt = pyplot()
    both = [sid for sid in new if sid in old]
    moved = {c.id for c in changes(old, new)}
    fig, ax = plt.subplots(figsize=(5.5, 5.5))
    top = max([full_marks()] + [total(new[s]) for s in both] + [total(old[s]) for s in both])
    ax.plot([0, top], [0, top], color="#999999", linewidth=1, zorder=1)
    for group, color, name in ((False, "#4878a8", "same"), (True, "#c0504d", "changed")):
        points = [(total(old[s]), total(new[s])) for s in both if (s in moved) == group]
        if points:
            ax.scatter(*zip(*points, strict=True), color=color, label=f"{name} ({len(points)})", zorder=2, alpha=0.7)
    ax.set(xlim=(-2, top + 2), ylim=(-2, top + 2), xlabel=f"old score ({old_label})",
           ylabel=f"new score ({new_label})", title="Old vs new grader, per submission")
    ax.legend(loc="upper left")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


# -- graders: this tree's, or another git revision's ---------------------------------------------------------

def source_builder(tree: str):
    """How a tree builds its grader's source folder, each tree from itself (an old revision with its own code):
    `python -m autograder.assemble source OUT` run in the tree, or, for a revision from before that command,
    its autograder/build.py's ``build_source``."""
    if os.path.isfile(os.path.join(tree, "autograder", "assemble.py")):
        def build_source(out: str) -> str:
            done = subprocess.run([sys.executable, "-m", "autograder.assemble", "source", out], cwd=tree,
                                  capture_output=True, text=True, stdin=subprocess.DEVNULL)
            if done.returncode:
                raise RegradeError(f"{tree} could not build its grader: {done.stderr.strip()[-2000:]}")
            return out
        return build_source
    path = os.path.join(tree, "autograder", "build.py")
    if not os.path.isfile(path):
        raise RegradeError(f"{tree} has no autograder/assemble.py (nor build.py) to build a grader")
    spec = importlib.util.spec_from_file_location(f"autograder_build_{hashlib.sha1(path.encode()).hexdigest()[:8]}",
                                                  path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.build_source


def tree_hash(path: str) -> str:
    """sha256 of a file, or of a folder's relative paths and contents (what a grader or a submission is)."""
    digest = hashlib.sha256()
    if os.path.isfile(path):
        with open(path, "rb") as f:
            digest.update(f.read())
        return digest.hexdigest()
    for root, dirs, files in os.walk(path):
        dirs.sort()
        for name in sorted(files):
            full = os.path.join(root, name)
            digest.update(os.path.relpath(full, path).encode() + b"\0")
            if os.path.islink(full):
                digest.update(b"link:" + os.readlink(full).encode())
            elif os.path.isfile(full):
                with open(full, "rb") as f:
                    digest.update(f.read())
            digest.update(b"\0")
    return digest.hexdigest()


@dataclass
class Grader:
    label: str  # "this tree" or "OLD=<rev>"
    runs: str  # OUT/runs/<hash>: the built source, the reference pass, one folder per submission

    @property
    def digest(self) -> str:
        return os.path.basename(self.runs)

    @property
    def source(self) -> str:
        return os.path.join(self.runs, "source")

    @property
    def cache(self) -> str:
        return os.path.join(self.runs, "reference-cache.json")


def prepare_grader(build_source, out: str, label: str) -> Grader:
    """Build the source folder once, named by its hash: a rebuilt identical grader finds its earlier work."""
    runs = os.path.join(out, "runs")
    os.makedirs(runs, exist_ok=True)
    scratch = tempfile.mkdtemp(prefix=".build-", dir=runs)
    try:
        source = build_source(os.path.join(scratch, "source"))
        grader = Grader(label, os.path.join(runs, tree_hash(source)[:16]))
        if not os.path.isdir(grader.source):
            os.makedirs(grader.runs, exist_ok=True)
            os.replace(source, grader.source)  # whole or not at all
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return grader


def git(*args: str, cwd: str = REPO) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    if done.returncode:
        raise RegradeError(f"git {' '.join(args)} failed: {done.stderr.strip()}")
    return done.stdout.strip()


def old_tree(rev: str, into: str) -> str:
    """The tree of git revision ``rev`` in ``into`` (git archive: the work tree and the index stay untouched)."""
    try:
        commit = git("rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}")
    except RegradeError:
        raise RegradeError(f"OLD={rev} is not a commit of {REPO}: give a commit, tag or branch "
                           "(git log --oneline lists them)") from None
    os.makedirs(into, exist_ok=True)
    tar = os.path.join(into, "tree.tar")
    git("archive", "--format=tar", "--output", tar, commit)
    tree = os.path.join(into, "tree")
    os.makedirs(tree)
    subprocess.run(["tar", "-xf", tar, "-C", tree], check=True, stdin=subprocess.DEVNULL)
    os.remove(tar)
    run = os.path.join(tree, "autograder", "grader", "run.py")
    with open(run, encoding="utf-8") if os.path.exists(run) else open(os.devnull) as f:
        if "--reference-cache" not in f.read():  # one reference pass for all: without it, hours per export
            raise RegradeError(f"OLD={rev} ({commit[:10]}) has no grader with --reference-cache (added in commit "
                               "ed086a9), which regrading needs: pick a later revision")
    return tree


# -- grading (the grader runs in subprocesses) -------------------------------------------------------------

def default_jobs() -> int:
    """At most the CPUs this process may use, and what fits in available memory at MB_PER_GRADING each."""
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    try:
        with open("/proc/meminfo") as f:
            available_kb = next(int(line.split()[1]) for line in f if line.startswith("MemAvailable:"))
        return max(1, min(cpus, available_kb // 1024 // MB_PER_GRADING))
    except (OSError, StopIteration, ValueError):
        return max(1, cpus)  # no /proc (macOS): the CPUs only


def entry_point():
    """autograder/grade.py, the one grading entry point: its ``grade`` runs run_autograder on a folder laid
    out like /autograder and checks that it left no process or temporary file behind."""
    from autograder import grade
    return grade


def run_folder(grader: Grader, sub: Submission) -> str:
    return os.path.join(grader.runs, "submissions", sub.id)  # apart: an id may be any folder's name


def graded_record(grader: Grader, sub: Submission, digest: str) -> dict | None:
    """graded.json of an earlier grading of this very submission by this grader, if there is one."""
    try:
        with open(os.path.join(run_folder(grader, sub), "graded.json"), encoding="utf-8") as f:
            record = json.load(f)
    except (OSError, ValueError):
        return None
    return record if record.get("submission") == digest else None


def read_results(grader: Grader, sub: Submission) -> dict | None:
    try:
        with open(os.path.join(run_folder(grader, sub), "results", "results.json"), encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


class Stopped(Exception):
    """The run was interrupted: this grading must not count as done."""


def grade_one(grader: Grader, sub: Submission, digest: str, stop: threading.Event, lock: threading.Lock) -> dict:
    """Grade ``sub`` in a fresh folder laid out like /autograder; graded.json, written last, marks it done."""
    if stop.is_set():
        raise Stopped
    folder = run_folder(grader, sub)
    shutil.rmtree(folder, ignore_errors=True)  # what an interrupted grading left
    os.makedirs(folder)
    lay_out(sub.path, os.path.join(folder, "submission"))
    own_cache = os.path.join(folder, "reference-cache.json")
    if os.path.exists(grader.cache):
        shutil.copyfile(grader.cache, own_cache)  # each grading its own copy: the grader rewrites it
    entry_point().lay_out(folder, grader.source)
    graded = entry_point().grade(folder, reference_cache=own_cache, log_path=os.path.join(folder, "grader.log"))
    if stop.is_set():
        raise Stopped  # killed by the interruption: its results are not a grade
    with lock:
        if not os.path.exists(grader.cache) and os.path.exists(own_cache):
            os.replace(own_cache, grader.cache)  # the first grading computed the reference pass
    for name in ("source", "submission", "tmp"):  # copies: the export and runs/<hash>/source have them
        shutil.rmtree(os.path.join(folder, name), ignore_errors=True)
    if os.path.exists(own_cache):
        os.remove(own_cache)
    record = {"submission": digest, "seconds": round(graded.seconds, 1), "returncode": graded.returncode,
              "problems": graded.problems}
    write_json(os.path.join(folder, "graded.json"), record)
    return record


def write_json(path: str, data: dict) -> None:
    partial = path + ".partial"
    with open(partial, "w", encoding="utf-8") as f:
        json.dump(data, f, indent=1)
    os.replace(partial, path)  # whole or absent: an interruption never leaves half a file


def kill_graders(run_id: str) -> None:
    """Every grader of this run, with its process group (its trusted workers): grade.py's ``grade`` starts
    the grader as a session leader, and its jailed workers die with it (PR_SET_PDEATHSIG)."""
    run = entry_point()
    for pid in run.processes_tagged(RUN_TAG, run_id):
        try:
            os.killpg(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            run.kill_all([pid])


def grade_all(grader: Grader, submissions: list[Submission], jobs: int, progress: bool = True) -> dict[str, dict]:
    """graded.json of every submission, grading those not graded yet: one at a time until the reference pass
    exists (the first grading computes it, all others reuse it), then ``jobs`` at a time. Records read from
    an earlier run have "reused": True."""
    from tqdm import tqdm
    digests = {s.id: tree_hash(s.path) for s in submissions}
    records = {s.id: graded_record(grader, s, digests[s.id]) for s in submissions}
    for record in filter(None, records.values()):
        record["reused"] = True
    todo = [s for s in submissions if records[s.id] is None]
    stop, lock = threading.Event(), threading.Lock()
    run_id = os.environ.setdefault(RUN_TAG, uuid.uuid4().hex)  # inherited by every grader this process starts
    bar = tqdm(total=len(submissions), initial=len(submissions) - len(todo), unit="submission", disable=not progress,
               desc=f"grading ({grader.label})", file=sys.stderr, dynamic_ncols=True)
    pool = ThreadPoolExecutor(max_workers=jobs)
    pending: dict = {}
    try:
        while todo and not os.path.exists(grader.cache):
            sub = todo.pop(0)
            pending = {pool.submit(grade_one, grader, sub, digests[sub.id], stop, lock): sub}
            records[sub.id] = next(iter(pending)).result()
            pending = {}
            bar.update()
        pending = {pool.submit(grade_one, grader, s, digests[s.id], stop, lock): s for s in todo}
        while pending:
            done, _ = wait(pending, return_when=FIRST_COMPLETED)
            for future in done:
                records[pending.pop(future).id] = future.result()
                bar.update()
    except KeyboardInterrupt:
        stop.set()
        pool.shutdown(wait=False, cancel_futures=True)
        running = set(pending)
        while running:  # kill again until every thread is back: one may have started a grader meanwhile
            kill_graders(run_id)
            _, running = wait(running, timeout=1.0)
        raise
    finally:
        pool.shutdown(wait=True)
        bar.close()
    return records


# -- the whole run --------------------------------------------------------------------------------------------

def open_export(path: str, scratch: str) -> str:
    """The export as a folder: a zip is extracted into ``scratch`` (grade.py's extraction, as Gradescope's,
    which keeps every entry inside the target)."""
    if not os.path.exists(path):
        raise RegradeError(f"EXPORT={path}: no such file or folder")
    if os.path.isdir(path):
        return path
    if not zipfile.is_zipfile(path):
        raise RegradeError(f"EXPORT={path} is neither a zip nor a folder: give Gradescope's export (Assignment > "
                           "Review Grades > Export Submissions: a .zip) or the folder it unzips to")
    target = os.path.join(scratch, "export")
    entry_point().unpack_like_gradescope(path, target)
    return target


def publish(out: str, name: str, grader: Grader, submissions: list[Submission]) -> dict[str, dict | None]:
    """OUT/<name>/<id>.json: this export's results by ``grader`` (only this export's, whatever ran before)."""
    folder = os.path.join(out, name)
    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(folder)
    results = {}
    for sub in submissions:
        results[sub.id] = read_results(grader, sub)
        if results[sub.id] is not None:
            write_json(os.path.join(folder, f"{sub.id}.json"), results[sub.id])
    return results


def timing_text(records: dict[str, dict]) -> str:
    fresh = [r["seconds"] for r in records.values() if not r.get("reused")]
    text = f"{len(records) - len(fresh)} reused from an earlier run"
    if fresh:
        text = f"{len(fresh)} graded now (median {statistics.median(fresh):.0f} s each, max {max(fresh):.0f} s), " + text
    return text


def grade_and_report(grader: Grader, submissions: list[Submission], out: str, jobs: int, progress: bool,
                     suffix: str = "") -> tuple[dict[str, dict | None], str]:
    """Grade, then write results{suffix}/, scores{suffix}.csv and (for this tree's grader) the plots."""
    records = grade_all(grader, submissions, jobs, progress)
    results = publish(out, f"results{suffix}", grader, submissions)
    write_csv(os.path.join(out, f"scores{suffix}.csv"), CSV_HEADER, score_rows(submissions, results))
    label = f"grader {grader.digest[:12]} ({grader.label})"
    # The old grader's table would repeat the new one's: its changes are what the comparison lists.
    text = summary(results, label, {k: r.get("problems") or [] for k, r in records.items()}, checks=not suffix)
    text += f"\ngradings: {timing_text(records)}"
    if not suffix:
        plot_scores(os.path.join(out, "scores.png"), results, label)
        plot_failures(os.path.join(out, "failures.png"), results, label)
    return results, text


def regrade(export: str, out: str, jobs: int, old: str | None = None, progress: bool = True) -> str:
    """The whole run; returns the text it printed (also in OUT/summary.txt)."""
    if jobs < 1:
        raise RegradeError(f"JOBS={jobs}: give at least 1")
    scratch = tempfile.mkdtemp(prefix="minddp-regrade-")
    try:
        submissions = read_export(open_export(export, scratch))
        os.makedirs(out, exist_ok=True)
        from autograder import assemble
        new = prepare_grader(assemble.build_source, out, "this tree")
        previous = None  # built before any grading: a bad OLD fails in seconds, not after the new grading
        if old:
            tree = old_tree(old, scratch)
            previous = prepare_grader(source_builder(tree), out, f"OLD={old}")
        print(f"{len(submissions)} submission(s) in {export}; {jobs} at a time; output in {out}", flush=True)
        new_results, text = grade_and_report(new, submissions, out, jobs, progress)
        print(text, flush=True)
        if previous:
            old_results, old_text = grade_and_report(previous, submissions, out, jobs, progress, "-old")
            found = changes(old_results, new_results)
            who = {s.id: s.submitters for s in submissions}
            write_csv(os.path.join(out, "changed.csv"), CHANGED_HEADER, change_rows(found, who))
            plot_old_vs_new(os.path.join(out, "old_vs_new.png"), old_results, new_results, previous.label, new.label)
            more = f"\n\n{old_text}\n\n{change_text(found, who, len(submissions))}"
            print(more, flush=True)
            text += more
        with open(os.path.join(out, "summary.txt"), "w", encoding="utf-8") as f:
            f.write(text + "\n")
        return text
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.regrade", description=__doc__.splitlines()[0])
    parser.add_argument("export", nargs="?", help="Gradescope's export zip, or a folder of submissions")
    parser.add_argument("--old", help="a git revision: grade with its grader too, and list the changed scores")
    parser.add_argument("--jobs", type=int, help="gradings at a time (default: the CPUs, and 800 MB each)")
    parser.add_argument("--out", default=os.path.join(REPO, "dist", "regrade"), help="default: dist/regrade")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    args = parser.parse_args(argv)
    if not args.export:
        print("regrade: give the export: make regrade EXPORT=path/to/export.zip (Gradescope: Assignment > Review "
              "Grades > Export Submissions)", file=sys.stderr)
        return 2
    try:
        regrade(args.export, os.path.abspath(args.out), args.jobs or default_jobs(), args.old, not args.no_progress)
    except RegradeError as error:
        print(f"regrade: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("\nregrade: interrupted; rerun the same command to continue (finished gradings are kept)",
              file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
