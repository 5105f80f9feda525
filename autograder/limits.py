"""Gradescope's limits on this machine (root): a cgroup with a CPU quota and a memory limit (cgroup v1 or
v2, whichever the machine has), and CPU hogs beside it. Used by `make gradescope-sim` (sim.py) and by the
self-test's runs at a fraction of a CPU (selftest/runner.py --cpus): verdicts must not depend on speed.
"""

from __future__ import annotations

import contextlib
import glob
import os
import signal
import subprocess
import sys
import threading
import time
import uuid

# -- cgroups: v1 (cpu + memory controllers) or v2 (unified) --------------------------------------------------

class Cgroup:
    """A cgroup with a CPU quota and a memory limit (None: none), and what it measured."""

    def __init__(self, cpus: float | None, memory_mb: int | None):
        self.name = name = f"minddp-limits-{uuid.uuid4().hex[:8]}"
        self.v2 = not os.path.isdir("/sys/fs/cgroup/memory") and os.path.exists("/sys/fs/cgroup/cgroup.controllers")
        period = 100_000
        if self.v2:
            self.dirs = {"all": os.path.join("/sys/fs/cgroup", name)}
            os.mkdir(self.dirs["all"])
            if cpus:
                self._write("all", "cpu.max", f"{int(cpus * period)} {period}")
            if memory_mb:
                self._write("all", "memory.max", str(memory_mb * 2**20))
                self._write("all", "memory.swap.max", "0", missing_ok=True)
        else:
            self.dirs = {c: os.path.join("/sys/fs/cgroup", c, name) for c in ("cpu", "cpuacct", "memory")}
            for path in dict.fromkeys(self.dirs.values()):
                os.makedirs(path, exist_ok=True)
            if cpus:
                self._write("cpu", "cpu.cfs_period_us", str(period))
                self._write("cpu", "cpu.cfs_quota_us", str(int(cpus * period)))
            if memory_mb:
                self._write("memory", "memory.limit_in_bytes", str(memory_mb * 2**20))
                self._write("memory", "memory.memsw.limit_in_bytes", str(memory_mb * 2**20), missing_ok=True)

    def _write(self, controller: str, name: str, value: str, missing_ok: bool = False) -> None:
        path = os.path.join(self.dirs[controller], name)
        if missing_ok and not os.path.exists(path):
            return
        with open(path, "w") as f:
            f.write(value)

    def _read(self, controller: str, name: str) -> str:
        with open(os.path.join(self.dirs[controller], name)) as f:
            return f.read()

    def join(self) -> None:
        """In the child, before exec: this process (and so everything it starts) joins the cgroup."""
        for path in dict.fromkeys(self.dirs.values()):
            with open(os.path.join(path, "cgroup.procs"), "w") as f:
                f.write("0")

    def cpu_seconds(self) -> float:
        if self.v2:
            stats = dict(line.split() for line in self._read("all", "cpu.stat").splitlines())
            return int(stats["usage_usec"]) / 1e6
        return int(self._read("cpuacct", "cpuacct.usage")) / 1e9

    def peak_mb(self) -> float:
        if self.v2:
            return int(self._read("all", "memory.peak")) / 2**20 if os.path.exists(
                os.path.join(self.dirs["all"], "memory.peak")) else float("nan")
        return int(self._read("memory", "memory.max_usage_in_bytes")) / 2**20

    def process_mb(self) -> float:
        """What the processes hold now, without the page cache (reclaimed before anything is killed): anonymous
        memory and tmpfs (shmem), from memory.stat."""
        controller = "all" if self.v2 else "memory"
        stats = dict(line.split() for line in self._read(controller, "memory.stat").splitlines()
                     if len(line.split()) == 2)
        keys = ("anon", "shmem") if self.v2 else ("total_rss", "total_shmem")
        return sum(int(stats.get(k, 0)) for k in keys) / 2**20

    @contextlib.contextmanager
    def process_peak(self):
        """While the block runs, ``process_mb`` sampled every 0.1 s; yields a list whose one item is the peak so
        far (a benchmark figure: the cgroup's own peak counts page cache as well)."""
        peak, done = [0.0], threading.Event()

        def sample() -> None:
            while not done.wait(0.1):
                try:
                    peak[0] = max(peak[0], self.process_mb())
                except OSError:  # the cgroup is being removed
                    pass
        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        try:
            yield peak
        finally:
            done.set()
            sampler.join()

    def oom_kills(self) -> int:
        name, key = ("memory.events", "oom_kill") if self.v2 else ("memory.oom_control", "oom_kill")
        controller = "all" if self.v2 else "memory"
        fields = dict(line.split() for line in self._read(controller, name).splitlines() if len(line.split()) == 2)
        return int(fields.get(key, 0))

    def everywhere(self) -> list[str]:
        """This cgroup's folder in every hierarchy where one exists: its own, and those runc made beside them
        for a container in it (cgroup v1: blkio, cpuset, devices, freezer, pids, ...; the container's own
        folder below goes when runc deletes it, its parent stays)."""
        return sorted(glob.glob(os.path.join("/sys/fs/cgroup", "*", self.name)) +
                      glob.glob(os.path.join("/sys/fs/cgroup", self.name)))

    def remove(self) -> None:
        for path in dict.fromkeys([*self.dirs.values(), *self.everywhere()]):
            procs = os.path.join(path, "cgroup.procs")
            for pid in open(procs).read().split() if os.path.exists(procs) else []:
                try:
                    os.kill(int(pid), signal.SIGKILL)
                except ProcessLookupError:
                    pass
            for below, folders, _ in os.walk(path, topdown=False):  # a container's own, if runc left it
                for folder in folders:
                    with contextlib.suppress(OSError):
                        os.rmdir(os.path.join(below, folder))
            for _ in range(50):
                try:
                    os.rmdir(path)
                    break
                except FileNotFoundError:
                    break  # removed already (runc removes the cgroups of a container it deletes)
                except OSError:
                    time.sleep(0.1)  # the killed processes leave the cgroup asynchronously


def hogs(count: int) -> list[subprocess.Popen]:
    """Processes that spin on the CPU outside the cgroup, as other tenants of a loaded machine would."""
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"], start_new_session=True)
            for _ in range(count)]


def stop_hogs(spinning: list[subprocess.Popen]) -> None:
    for proc in spinning:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
