"""Provided — how `make test` runs the checks on your machine: every check of ``checks/part*.py`` on its
public inputs, with the message Gradescope would show. (Gradescope runs the same checks, and more inputs,
in isolated processes; see handout §7.)

    runner = LocalRunner(".")          # the folder holding minddp/, answers.py, checks/ and tests/
    runner.check(check)                # raises CheckFailed(message) if the check fails
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time

from checks.check import (
    ANSWER,
    WARM_UP,
    Check,
    Outcome,
    Run,
    candidate_kwargs,
    deadline_s,
    judge,
    load_expected,
    message,
)
from checks.feedback import scenario_failure
from checks.pool import ForkServer, RankFailure, ScenarioError, WorkerPool, reply_outcome, tail_of

MAX_REPORT_BYTES = 100_000


class CheckFailed(AssertionError):
    """A check failed; the message is the whole explanation (pytest shows nothing else)."""


class LocalRunner:
    def __init__(self, root: str, expected: dict | None = None, server: ForkServer | None = None):
        self.root = os.path.abspath(root)
        self.expected = load_expected() if expected is None else expected
        self.server = server  # staff tools hand one in, to run many folders with one import of torch
        self.own_server = server is None  # ... and stop it themselves
        self.pools: dict[int, WorkerPool] = {}

    def pool(self, world_size: int) -> WorkerPool:
        if self.server is None or not self.server.alive():
            self.server, self.own_server = ForkServer(paths=[self.root], warm_up=WARM_UP), True
            self.pools = {}
        if world_size not in self.pools:
            self.pools[world_size] = WorkerPool(self.server, world_size, paths=[self.root])
        return self.pools[world_size]

    def call(self, run: Run, kwargs: dict, deadline: float = 600.0) -> tuple[list, float]:
        """One scenario call on this folder's code: (each rank's result, seconds); ScenarioError if it failed."""
        began = time.monotonic()
        result = self.pool(run.world_size).run(run.scenario, deadline_s=deadline, **kwargs)
        return result, time.monotonic() - began

    def reference(self, run: Run) -> tuple[list | None, dict[str, list], float | None]:
        """(the reference's result, its results under each named mistake, seconds it took, if known)."""
        calls = run.reference_calls()
        if not calls:
            return None, {}, None
        if run.ref == ANSWER:  # the reference solution's answers to these public inputs
            found = {text: self.expected[Run(run.fn, kwargs, run.world_size).key()] for text, kwargs in calls.items()}
            return found.pop(""), found, None
        results, seconds = {}, 0.0
        for text, kwargs in calls.items():
            results[text], took = self.call(run, kwargs)
            seconds += took if text == "" else 0.0
        return results.pop(""), results, seconds

    def check(self, check: Check) -> list[str]:
        """Raise CheckFailed if ``check`` fails on its public inputs; else return what it notes about passing
        (e.g. that only the format of a written answer could be checked here)."""
        notes: list[str] = []
        for run in check.runs:
            ref, mistakes, ref_s = self.reference(run)
            kwargs = {} if run.fn == "launch" else candidate_kwargs(run, ref, ref_s)  # torchrun's own numbers
            try:
                got = launch(self.root, run.kwargs["nproc"]) if run.fn == "launch" else \
                    self.call(run, kwargs, deadline_s(ref_s))[0]
            except ScenarioError as error:
                if run.advisory:
                    notes.append(f"{check.number}: {run.label}: not compared ({scenario_failure(error)[:300]})")
                    continue
                raise CheckFailed(message(check, run, scenario_failure(error))) from None
            except LaunchFailed as error:
                raise CheckFailed(message(check, run, str(error))) from None
            outcome = Outcome(run, got, ref, mistakes, kwargs)
            verdict = judge(check, outcome)
            if verdict:
                raise CheckFailed(verdict)
            notes += outcome.notes
        return notes

    def close(self) -> None:
        for pool in self.pools.values():
            pool.close()
        if self.server is not None and self.own_server:
            self.server.stop()


# -- check 1.4: a real torchrun launch of tests/launch_probe.py ------------------------------------------------

class LaunchFailed(RuntimeError):
    def __init__(self, message: str, timed_out: bool = False):
        super().__init__(message)
        self.timed_out = timed_out


def launch(root: str, nproc: int, timeout_s: float = 120.0) -> list[dict]:
    """Start ``torchrun --standalone --nproc_per_node=nproc tests/launch_probe.py`` on ``root``'s code and
    return each rank's report (LaunchFailed says what went wrong)."""
    with tempfile.TemporaryDirectory(prefix="minddp-launch-") as out:
        # TMPDIR: torchrun's own files (/tmp/torchelastic_*) and the ranks' go with ``out``, not into /tmp for good.
        env = {**os.environ, "PYTHONPATH": root, "OMP_NUM_THREADS": "1", "TMPDIR": out}
        command = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={nproc}",
                   os.path.join(root, "tests", "launch_probe.py"), out]
        log = os.path.join(out, "torchrun.log")
        with open(log, "wb") as f:
            try:
                subprocess.run(command, env=env, stdout=f, stderr=subprocess.STDOUT, timeout=timeout_s)
            except subprocess.TimeoutExpired:
                raise LaunchFailed(f"Your code did not finish in time: the torchrun launch ran over {timeout_s:.0f} s."
                                   f"\n{tail_of(log, 3000)}", timed_out=True) from None
        return read_reports(out, nproc, tail_of(log, 3000))


def read_reports(folder: str, nproc: int, log_tail: str) -> list[dict]:
    """Each rank's message in rank{r}.json (what a worker sends on its channel on Gradescope), read safely: a
    regular file (never a link, a FIFO or a device), bounded. A rank that raised is a ScenarioError, worded
    as Gradescope words it."""
    outcomes, missing = {}, []
    for rank in range(nproc):
        message = read_report_file(os.path.join(folder, f"rank{rank}.json"))
        if message is None:
            missing.append(rank)
        else:
            outcomes[rank] = reply_outcome(rank, message, log_tail)
    failures = [o for o in outcomes.values() if isinstance(o, RankFailure)]
    if failures:
        raise ScenarioError("torchrun launch", failures, finished=[r for r, o in outcomes.items() if o not in failures])
    if missing:
        raise LaunchFailed(f"Under torchrun, rank(s) {missing} did not report. The end of torchrun's output:\n{log_tail}")
    return list(outcomes.values())


def read_report_file(path: str, limit: int = MAX_REPORT_BYTES) -> bytes | None:
    """The bytes of ``path`` if it is a regular file of at most ``limit`` bytes; None otherwise."""
    import stat
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        data = os.read(fd, limit + 1)
    finally:
        os.close(fd)
    return data if len(data) <= limit else None


PASSING_NOTES: list[str] = []  # what the checks that passed in this session noted (tests/conftest.py prints them)


def check_tests(part: str):
    """A pytest test function parametrized over the checks of ``part`` (``test_check[3.1-one-bucket-...]``)."""
    import pytest

    from checks.registry import public_checks

    checks = [c for c in public_checks() if c.part == part]

    @pytest.mark.parametrize("check", checks, ids=[c.slug for c in checks])
    def test_check(check: Check, runner: LocalRunner) -> None:
        try:
            PASSING_NOTES.extend(f"{check.number}: {note}" for note in runner.check(check))
            return
        except CheckFailed as failure:
            text = str(failure)
        pytest.fail(f"check {check.number} ({check.name}):\n{text}", pytrace=False)

    return test_check
