"""Reading a Gradescope export (pure): its submissions (folders and zips) and submission_metadata.yml's
submitters. RegradeError: bad input, whose message says what to fix."""

from __future__ import annotations

import json
import os
import re
import zipfile
from dataclasses import dataclass

METADATA = "submission_metadata.yml"


class RegradeError(Exception):
    """Bad input: the message says what to fix."""


@dataclass(frozen=True)
class Submission:
    id: str  # "123" for Gradescope's submission_123
    path: str  # its folder or .zip in the export
    submitters: str = ""  # "Name <email> (sid); ..." from submission_metadata.yml


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
