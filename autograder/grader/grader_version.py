"""Which grader graded a submission: the grader version, one name everywhere (`make autograder`, setup.sh's
log, `make grade`, results.json's staff entry and extra_data, `make regrade`'s files, CHANGELOG.md).

    grader version   CODE.DRAW, e.g. 5e1f0c2a9b3d.41c7a0

    CODE   a digest of every file of the autograder's source folder that can change a score: the grader's code
           and settings, the hidden inputs' code, the check library, the reference solution, the skeleton,
           requirements.txt (torch's version), setup.sh and run_autograder. It is known when the zip is built
           (`make autograder` prints it) and CHANGELOG.md names it for each release.
    DRAW   a digest of the secret the hidden inputs are drawn from (``secret.py``): setup.sh draws a new one
           each time Gradescope builds the image, so two images of one zip draw other random hidden inputs.
           (The secret cannot be recovered from it.)

Left out of CODE: what is made from the rest (the reference cache), the secret (DRAW), and the skeleton's
release.json, which names the student release (``release``, e.g. 2026.1, read from it) and changes no score.

    python -m grader.grader_version --source DIR     # setup.sh: print the grader version and the release
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os

from grader.secret import NAME as SECRET_NAME

CODE_CHARS, DRAW_CHARS = 12, 6
CACHE_NAME = "reference-cache.json"  # reference.py's CACHE_NAME (a test holds them equal; reference.py is heavy)
RELEASE_JSON = os.path.join("skeleton", "release.json")
LEFT_OUT = {CACHE_NAME, SECRET_NAME, RELEASE_JSON}


def counted(relpath: str) -> bool:
    """Whether a file of the source folder counts in CODE (build products and what LEFT_OUT names do not)."""
    parts = relpath.split(os.sep)
    return relpath not in LEFT_OUT and "__pycache__" not in parts and not relpath.endswith((".pyc", ".partial", ".new"))


def code_digest(source: str) -> str:
    """CODE: the paths and contents of the files that count, in a fixed order."""
    digest = hashlib.sha256()
    for root, dirs, files in os.walk(source):
        dirs.sort()
        for name in sorted(files):
            path = os.path.join(root, name)
            relpath = os.path.relpath(path, source)
            if not counted(relpath) or not os.path.isfile(path) or os.path.islink(path):
                continue
            with open(path, "rb") as f:
                digest.update(relpath.encode() + b"\0" + hashlib.sha256(f.read()).digest())
    return digest.hexdigest()[:CODE_CHARS]


def draw_digest(source: str) -> str:
    """DRAW: the secret's digest, or "nosecret" where none was drawn yet (a zip before setup.sh)."""
    try:
        with open(os.path.join(source, SECRET_NAME), encoding="utf-8") as f:
            secret = f.read().strip()
    except OSError:
        return "nosecret"
    return hashlib.sha256(f"minddp grader draw/{secret}".encode()).hexdigest()[:DRAW_CHARS]


def version(source: str) -> str:
    """The grader version of an autograder source folder: CODE.DRAW."""
    return f"{code_digest(source)}.{draw_digest(source)}"


def release(source: str) -> str:
    """The student release this grader grades (e.g. 2026.1), from its skeleton's release.json; "?" if none."""
    try:
        with open(os.path.join(source, RELEASE_JSON), encoding="utf-8") as f:
            name = json.load(f).get("release")
    except (OSError, ValueError, AttributeError):
        return "?"
    return name if isinstance(name, str) and name else "?"


def describe(source: str) -> str:
    """One line: "grader version 5e1f0c2a9b3d.41c7a0 (release 2026.1)"."""
    return f"grader version {version(source)} (release {release(source)})"


def record(source: str) -> dict:
    """For results.json's extra_data (staff tools: `make regrade`)."""
    return {"version": version(source), "release": release(source)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m grader.grader_version", description=__doc__.splitlines()[0])
    parser.add_argument("--source", required=True, help="the autograder source folder")
    print(describe(parser.parse_args(argv).source))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
