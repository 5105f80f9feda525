# GENERATED from solutions/minddp/launch.py by tools/assign.py (staff: edit that file, then `make assignment`).
# Provided code: do not edit it by hand; the grader uses its own copy.
"""Provided — a tiny local ``torchrun``: start N copies of a script with torchrun's environment.

    python -m minddp.launch --nproc-per-node 2 examples/train.py --steps 5

is the local equivalent of ``torchrun --standalone --nproc_per_node=2 examples/train.py --steps 5``:
each copy gets RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR and MASTER_PORT (a free port,
never a fixed one). If any copy fails or the deadline passes, the others are stopped, so nothing hangs.
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import subprocess
import sys
import time

from .process_group import torchrun_env

OMP_THREADS_PER_WORKER = "1"  # N workers share a few cores; more threads only fight each other


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port that was free a moment ago (the OS picks it, so parallel runs don't collide)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def worker_envs(nproc: int, master_addr: str = "127.0.0.1", master_port: int | None = None,
                base: dict[str, str] | None = None) -> list[dict[str, str]]:
    """The full environment of each of ``nproc`` local workers (one node)."""
    port = free_port(master_addr) if master_port is None else master_port
    base = dict(os.environ if base is None else base)
    base.setdefault("OMP_NUM_THREADS", OMP_THREADS_PER_WORKER)
    return [{**base, **torchrun_env(rank, nproc, nproc, master_addr, port)} for rank in range(nproc)]


def stop(procs: list[subprocess.Popen]) -> None:
    """Kill every still-running worker (and its children) and reap it."""
    for proc in procs:
        if proc.poll() is None:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    for proc in procs:
        proc.wait()


def launch(argv: list[str], nproc: int, timeout: float = 600.0) -> int:
    """Run ``python argv...`` as ``nproc`` ranks; return 0 if all succeed, else the first failure's code."""
    procs = [subprocess.Popen([sys.executable, *argv], env=env, start_new_session=True)
             for env in worker_envs(nproc)]
    deadline = time.monotonic() + timeout
    try:
        while True:
            codes = [proc.poll() for proc in procs]
            failed = [code for code in codes if code not in (None, 0)]
            if failed:
                return failed[0]
            if all(code == 0 for code in codes):
                return 0
            if time.monotonic() > deadline:
                print(f"minddp.launch: workers still running after {timeout:.0f} s; stopping them",
                      file=sys.stderr)
                return 124
            try:  # wait for the first live worker, but wake up to check the others and the deadline
                next(p for p in procs if p.poll() is None).wait(timeout=0.2)
            except subprocess.TimeoutExpired:
                pass
    finally:
        stop(procs)


def main(args: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m minddp.launch", description=__doc__.splitlines()[0])
    parser.add_argument("--nproc-per-node", "--nproc_per_node", type=int, default=2)
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds before all workers are stopped")
    parser.add_argument("script")
    parser.add_argument("script_args", nargs=argparse.REMAINDER)
    ns = parser.parse_args(args)
    return launch([ns.script, *ns.script_args], ns.nproc_per_node, ns.timeout)


if __name__ == "__main__":
    sys.exit(main())
