"""Attacks on the autograder, as a hostile student would write them: each a self-test case (see cases.py)
that asserts the HONEST outcome (the score the real work earns, a message naming what was refused).

A case the grader passes is a regression guard; a case it fails is a finding. Every injected piece of
code is a module-level constant, pasted into a student file the way a student would paste it.
The code dodges the static scan the way a student would (names built from pieces, ``setattr``): the
scan and the integrity report are for honest mistakes and for staff, the verdict must not rely on them.

One module a boundary under attack, each with its ``ATTACKS``:

    environment     what a worker can see of the machine: sources, environments, processes, fds, the network
    torch_ddp       the worker's traps that keep torch's own DDP out
    channel         the reply channel between a worker and the trusted side
    torchrun        check 1.4's torchrun launch
    worker          the worker's sandbox: processes, syscalls, socket families, state left between checks
    resources       time, memory, threads, disk
    verdict         what the checks conclude: hidden inputs, the probe's store, results.json's text, odd failures
    leaks           the way from a hidden run to what the student sees: exception names, the pid counter, the clock
    upload          the upload itself (links, devices, crafted zips), which ``Case.edits`` cannot express:
                    ``UPLOADS``, graded by ``grade_uploads.py`` (the runner does not know them yet)

``shared`` holds what they share. They import only the case types (``selftest.kinds``) and ``shared``;
``grade_uploads.py`` alone uses the runner, and nothing here imports it.
"""

from __future__ import annotations

from autograder.selftest.attacks import channel, environment, leaks, resources, torch_ddp, torchrun, verdict, worker

# The order the self-test grades and reports them in (the order they were written in, before the split).
ORDER = (
    "ref-loader", "recon-visible", "net-reach",  # environment
    "stub-reducer-hijack", "stub-ddp-hijack-via-bucketing", "ddp-is-torch-ddp", "ddp-torch-with-standins",
    "reducer-is-cxx-reducer", "bucketing-is-torch",  # torch_ddp
    "truncated-replies", "deeply-nested-reply",  # channel
    "leak-inputs", "answer-table",  # verdict
    "thread-bomb",  # resources
    "other-sockets",  # worker
    "nested-too-deep",  # verdict
    "tensor-shaped-value", "huge-reply", "partial-frame",  # channel
    "launch-fake-reports", "launch-no-process-group", "launch-agent-exec", "launch-deep-tree", "launch-resources",
    "launch-orphans", "launch-report-tricks",  # torchrun
    "spawn-everything",  # worker
    "output-injection", "probe-store-spoof",  # verdict
    "persist-between-checks",  # worker
    "all-parts-hang", "slow-not-hanging", "slow-everywhere", "memory-after-reply", "worker-log-fill",  # resources
    "weird-failures", "pg-raises-naming-all", "ddp-raises-expected-message",  # verdict
    "hidden-class-name", "hidden-newline-name", "hidden-pid-counter", "hidden-clock",  # leaks
    "jail-walk",  # environment
    "launch-store-forgery", "launch-store-flood",  # torchrun
)


def _in_order(*modules) -> list:
    """Every module's attacks, in ``ORDER`` (which must name each of them once)."""
    cases = [case for module in modules for case in module.ATTACKS]
    by_name = {case.name: case for case in cases}
    if len(by_name) != len(cases) or sorted(by_name) != sorted(ORDER):
        raise RuntimeError("selftest/attacks/__init__.py: ORDER must name every attack of the modules once: "
                           f"{sorted(set(by_name) ^ set(ORDER))}")
    return [by_name[name] for name in ORDER]


ATTACKS: list = _in_order(environment, torch_ddp, channel, torchrun, worker, resources, verdict, leaks)
