"""One autograder source folder and one reference pass for every self-test module (test_mutants, test_selftest)."""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import tempfile

import pytest

from autograder.selftest import runner as selftest
from tools import student_side

student_side()  # the checks and the reference (minddp), as the grader finds them


@pytest.fixture(scope="session")
def show(request):
    """Print past pytest's capture (the tables of graded submissions are the point of these runs)."""
    def print_now(text: str) -> None:
        capture = request.config.pluginmanager.getplugin("capturemanager")
        with capture.global_and_fixture_disabled() if capture else contextlib.nullcontext():
            print(text, flush=True)
    return print_now


@pytest.fixture(scope="session")
def selftest_instance(tmp_path_factory):
    """SELFTEST_CONFIG: "privileged" (the default: gradings on this machine, as root with every capability) or
    "docker" (each grading in a fresh container with Docker's defaults, as Gradescope; its image is kept in
    dist/gradescope-image). SELFTEST_PYTHON: the Python that runs the grader (privileged; default: this one)."""
    config = os.environ.get("SELFTEST_CONFIG", "privileged")
    if config not in ("privileged", "docker"):
        pytest.fail(f"SELFTEST_CONFIG={config!r}: use privileged or docker")
    room = selftest.docker_room() if config == "docker" else None
    yield selftest.SelfTest(str(tmp_path_factory.mktemp("selftest")), os.environ.get("SELFTEST_PYTHON", sys.executable),
                            room=room)
    if room is not None:
        room.close()


# ---------------------------------------------------------------------------------------------------------
# The sandbox's tests (test_sandbox, test_mounts, test_uids, test_seccomp; each uses isolation_available)


@pytest.fixture(scope="session")
def isolation_available():
    from grader import sandbox

    problem = sandbox.isolation_problem()
    if problem is not None:
        pytest.fail(f"this machine cannot isolate student code, so the sandbox is untested: {problem}")


@pytest.fixture
def uid():
    from grader import sandbox

    return sandbox.pick_uid()


@pytest.fixture
def outside_tmp():
    """A fresh 0755 root-owned directory that is not under /tmp, /var/tmp or /dev/shm (which the jail
    replaces), so the jail sees it through the read-only host tree."""
    parent = next(p for p in ("/var/cache", "/opt", "/srv", "/var/lib") if os.path.isdir(p))
    path = tempfile.mkdtemp(prefix="sandbox-test-", dir=parent)
    os.chmod(path, 0o755)
    try:
        yield path
    finally:
        shutil.rmtree(path)
