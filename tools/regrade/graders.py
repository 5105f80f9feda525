"""Graders: this tree's, or another git revision's, each built once into OUT/runs/<its hash>/source."""

from __future__ import annotations

import hashlib
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass

from tools import REPO

from .export import RegradeError


def source_builder(tree: str):
    """How a tree builds its grader's source folder, each tree from itself (an old revision with its own code):
    `python -m autograder.assemble source OUT` run in the tree, or, for a revision from before that command,
    its autograder/build.py's ``build_source``."""
    if os.path.isfile(os.path.join(tree, "autograder", "assemble.py")):
        def build_source(out: str) -> str:
            env = {**os.environ, "PYTHONPATH": os.path.join(tree, "autograder")}  # its own grader package, not ours
            done = subprocess.run([sys.executable, "-m", "autograder.assemble", "source", out], cwd=tree, env=env,
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
    runs: str  # OUT/runs/<grader version>: the built source, the reference pass, one folder per submission

    @property
    def version(self) -> str:
        """The grader version (grader/grader_version.py: CODE.DRAW), as results.json's staff entry names it."""
        return os.path.basename(self.runs)

    @property
    def release(self) -> str:
        from grader.grader_version import release
        return release(self.source)

    @property
    def name(self) -> str:
        """How the files name it: "grader version 5e1f0c2a9b3d.41c7a0 (this tree, release 2026.1)"."""
        return f"grader version {self.version} ({self.label}, release {self.release})"

    @property
    def source(self) -> str:
        return os.path.join(self.runs, "source")

    @property
    def cache(self) -> str:
        return os.path.join(self.runs, "reference-cache.json")


def prepare_grader(build_source, out: str, label: str, secret: str | None = None) -> Grader:
    """Build the source folder once, named by its grader version: a rebuilt identical grader finds its earlier
    work. ``secret``: the hidden inputs' secret to draw from instead of the one the build made (OLD's build
    draws a new one: two graders compared on other draws would differ by their random hidden inputs)."""
    from grader.grader_version import RELEASE_JSON, SECRET_NAME, version
    runs = os.path.join(out, "runs")
    os.makedirs(runs, exist_ok=True)
    scratch = tempfile.mkdtemp(prefix=".build-", dir=runs)
    try:
        source = build_source(os.path.join(scratch, "source"))
        if secret:
            shutil.copyfile(secret, os.path.join(source, SECRET_NAME))
            os.chmod(os.path.join(source, SECRET_NAME), 0o600)
        grader = Grader(label, os.path.join(runs, version(source)))
        if not os.path.isdir(grader.source):
            os.makedirs(grader.runs, exist_ok=True)
            os.replace(source, grader.source)  # whole or not at all
        elif os.path.isfile(os.path.join(source, RELEASE_JSON)):  # the release's name, which counts in no
            shutil.copyfile(os.path.join(source, RELEASE_JSON), os.path.join(grader.source, RELEASE_JSON))  # version
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
