"""Staff tool: assemble the Gradescope autograder's source folder and zip it (grade.py runs it).

    python -m autograder.assemble zip dist/autograder.zip        # `make autograder`
    python -m autograder.assemble smoke-zips dist                # `make autograder`: dist/solutions.zip, stubs.zip
    python -m autograder.assemble source OUT                     # the source folder alone (make regrade OLD=rev)
    python -m autograder.assemble version                        # its grader version's CODE (make release)

The source folder (the zip's content, /autograder/source on Gradescope):

    run_autograder, setup.sh, requirements.txt   entry points (zip root, as Gradescope requires)
    grader/          the trusted grading code and the hidden inputs (never readable by student code)
    harness/         the check library students have (checks/) and tests/launch_probe.py: what student
                     workers run, mounted read-only for them
    reference/       the reference solution: minddp/ and answers.py (trusted workers only)
    skeleton/        the student release's code (provided files + stubs, course.py, student_files.json),
                     onto which a submission's files are copied

The harness and the skeleton come from the release as ``solutions/`` says it is when the folder is built
(``release_now``), not from the generated ``assignment/``: what is graded is what solutions/ says.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import zipfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HERE = os.path.join(REPO, "autograder")
IGNORE = shutil.ignore_patterns("__pycache__", "*.pyc")


def code_files(root: str) -> list[str]:
    """minddp/ and the top-level answers.py, course.py and student_files.json, where the tree has them."""
    return ["minddp"] + [name for name in ("answers.py", "course.py", "student_files.json", "release.json")
                         if os.path.exists(os.path.join(root, name))]


def copy_code(root: str, into: str) -> None:
    os.makedirs(into, exist_ok=True)
    for name in code_files(root):
        source = os.path.join(root, name)
        if os.path.isdir(source):
            shutil.copytree(source, os.path.join(into, name), ignore=IGNORE)
        else:
            shutil.copyfile(source, os.path.join(into, name))


def keep_secret(source: str) -> None:
    """The hidden inputs' secret (grader/secret.py) of this checkout's builds, kept in dist/: every local build
    grades with the same hidden inputs, so dist/reference-cache.json stays valid. (The zip has none: setup.sh
    draws one when Gradescope builds the image.)"""
    from grader import secret
    kept = os.path.join(REPO, "dist", secret.NAME)
    os.makedirs(os.path.dirname(kept), exist_ok=True)
    if not os.path.exists(kept):
        secret.make(kept)
    shutil.copyfile(kept, os.path.join(source, secret.NAME))
    os.chmod(os.path.join(source, secret.NAME), 0o600)


def release_files() -> dict[str, bytes]:
    """The student release as solutions/ says it is at this moment (tools/release.py, in memory)."""
    from tools.release import Layout, build_release
    return build_release(Layout.of_repo(REPO)).files


def release_now(into: str) -> str:
    """The release now, written to ``into``: the autograder grades with these checks and this skeleton, never
    with a stale assignment/."""
    files = release_files()
    from tools.release import write_release
    write_release(files, into)
    return into


def build_source(out: str, secret: bool = True) -> str:
    if os.path.exists(out):
        shutil.rmtree(out)
    os.makedirs(out)
    for name in ("run_autograder", "setup.sh"):
        shutil.copy2(os.path.join(HERE, name), os.path.join(out, name))
    shutil.copyfile(os.path.join(REPO, "requirements.txt"), os.path.join(out, "requirements.txt"))
    shutil.copytree(os.path.join(HERE, "grader"), os.path.join(out, "grader"), ignore=IGNORE)
    with tempfile.TemporaryDirectory() as tmp:
        release = release_now(os.path.join(tmp, "release"))
        harness = os.path.join(out, "harness")
        shutil.copytree(os.path.join(release, "checks"), os.path.join(harness, "checks"), ignore=IGNORE)
        shutil.copyfile(os.path.join(release, "tests", "launch_probe.py"), os.path.join(harness, "launch_probe.py"))
        copy_code(release, os.path.join(out, "skeleton"))
    copy_code(os.path.join(REPO, "solutions"), os.path.join(out, "reference"))
    for folder in ("harness", "skeleton"):  # read by student workers (through a jail's read-only mount)
        for root, _dirs, files in os.walk(os.path.join(out, folder)):
            os.chmod(root, 0o755)
            for name in files:
                os.chmod(os.path.join(root, name), 0o644)
    if secret:
        keep_secret(out)
    return out


def build_zip(path: str) -> str:
    return build_zip_and_version(path)[0]


def build_zip_and_version(path: str) -> tuple[str, str]:
    """The zip, and its grader's CODE (grader/grader_version.py: the image's setup.sh adds the DRAW)."""
    from grader.grader_version import code_digest
    with tempfile.TemporaryDirectory() as tmp:
        source = build_source(os.path.join(tmp, "source"), secret=False)
        code = code_digest(source)
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
            for root, _, files in os.walk(source):
                for name in sorted(files):
                    full = os.path.join(root, name)
                    info = zipfile.ZipInfo.from_file(full, os.path.relpath(full, source))
                    with open(full, "rb") as f:
                        zf.writestr(info, f.read())
    return path, code


def deployment_card(code: str) -> str:
    """What a TA types into Gradescope and expects of the smoke test, from the checks' weights (one truth: no
    total is typed in a document), and which grader the zip is (CHANGELOG.md names released ones)."""
    from tools import student_side
    from tools.changelog import ChangelogError, read
    student_side()
    from checks.registry import full_marks, public_checks
    required = sum(c.weight for c in public_checks() if not c.bonus)
    full = full_marks()
    try:
        changelog = read()
        released = next((r.name for r in changelog.releases if r.grader == code), None)
        newest = f"its newest, {changelog.current}, has grader {changelog.releases[0].grader}" if \
            changelog.releases else "it names none yet"
        release = released or (f"none: CHANGELOG.md names no release with this grader ({newest}); before deploying, "
                               "add what changed under `## Unreleased` and run `make release`")
    except ChangelogError as error:
        release = f"unknown: CHANGELOG.md cannot be read: {error}"
    return "\n".join([
        f"grader version {code}.DRAW (DRAW: the secret setup.sh draws when Gradescope builds the image)",
        f"release: {release}",
        f"Autograder points (Gradescope: Create Assignment): {required:g}",
        f"bonus: {full - required:g} points of extra credit on top (entries with a maximum of 0): a perfect "
        f"submission shows {full:g} / {required:g}",
        f"smoke test (Configure Autograder > Test Autograder): dist/solutions.zip must score {full:g} / {required:g}, "
        f"dist/stubs.zip 0 / {required:g}"])


def student_files() -> list:
    """The files students edit (solutions/student_files.json, read by the release's one reader, course.py)."""
    from tools.student.course import load_student_files
    return load_student_files(os.path.join(REPO, "solutions", "student_files.json"))


def student_paths() -> list[str]:
    return [entry.path for entry in student_files()]


def student_submission(root: str, into: str) -> str:
    """The student-edited files of ``root`` (solutions/ or assignment/) in ``into``, at their paths."""
    for path in student_paths():
        os.makedirs(os.path.dirname(os.path.join(into, path)) or into, exist_ok=True)
        shutil.copyfile(os.path.join(root, path), os.path.join(into, path))
    return into


def reference_submission(into: str) -> str:
    """The solutions' student-edited files, laid out as `make submit` would."""
    student_submission(os.path.join(REPO, "solutions"), into)
    from tools.student.course import RELEASE_STAMP
    with open(os.path.join(into, RELEASE_STAMP), "wb") as f:  # as `make submit` in the current release adds it
        f.write(release_files()[RELEASE_STAMP])
    return into


def smoke_zips(out: str) -> list[str]:
    """``out``/solutions.zip and ``out``/stubs.zip, written as a student's `make submit` writes submission.zip:
    what a TA uploads with "Test Autograder" to check a deployment (GRADESCOPE.md: full marks, then 0)."""
    files = student_files()
    from tools.student.course import RELEASE_STAMP, write_submission
    stamp = release_files()[RELEASE_STAMP]
    os.makedirs(out, exist_ok=True)
    written = []
    for name, root in (("solutions", "solutions"), ("stubs", "assignment")):
        written.append(os.path.join(out, f"{name}.zip"))
        write_submission(os.path.join(REPO, root), files, written[-1])
        with zipfile.ZipFile(written[-1], "a") as zf:  # solutions/ has no release.json: the current release's
            if RELEASE_STAMP not in zf.namelist():  # (assignment/'s is it already: `make submit` zipped it)
                zf.writestr(RELEASE_STAMP, stamp)
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m autograder.assemble", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    zip_cmd = sub.add_parser("zip")
    zip_cmd.add_argument("path")
    smoke_cmd = sub.add_parser("smoke-zips", help="solutions.zip and stubs.zip for Gradescope's Test Autograder")
    smoke_cmd.add_argument("out")
    source_cmd = sub.add_parser("source", help="the source folder (the zip's content, with this checkout's secret)")
    source_cmd.add_argument("out")
    sub.add_parser("version", help="the CODE of the grader version of the zip this tree builds")
    args = parser.parse_args(argv)
    if args.command == "version":
        from grader.grader_version import code_digest
        with tempfile.TemporaryDirectory() as tmp:
            print(code_digest(build_source(os.path.join(tmp, "source"), secret=False)))
        return 0
    if args.command == "zip":
        path, code = build_zip_and_version(args.path)
        print(f"{path}\n{deployment_card(code)}")
        return 0
    if args.command == "source":
        print(build_source(args.out))
        return 0
    print("\n".join(smoke_zips(args.out)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
