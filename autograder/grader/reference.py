"""The reference pass (step 5 of ``run.py``): every reference call of every check, public and hidden
inputs, on the reference solution or torch, in trusted workers that never see student code.

The pass costs about as much CPU as grading a submission, so ``setup.sh`` computes it once, when the image
is built (``python -m grader --reference-only``), and every grading reuses it. A cache is used only when
this machine would compute the very same bits:

1. its fingerprint matches: the same grader source (every file of it), the same torch, Python and CPU
   (model and instruction-set flags: torch picks its kernels by them);
2. the canaries, the cheapest training run of each model on 2 ranks, run again now, give results
   identical to the cached ones, bit for bit.

Otherwise the whole pass is computed again, exactly as without a cache. The canaries' times also say how
fast this machine is now compared with when the cache was made; every cached time is scaled by that (never
down), so a deadline still comes from a measurement made in this grading (``checks.deadline_s``).
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import sys
import time
from importlib import metadata

from grading.checks import Run
from grading.pool import ForkServer, WorkerPool, decode, encode_arrays

CACHE_FORMAT = 2
CACHE_NAME = "reference-cache.json"  # in the autograder's source folder (root's alone on Gradescope)


class MeasuringPool(WorkerPool):
    """The reference pass's pool: it notes the largest resident memory of a worker during each run."""

    peak_mb = 0.0

    def watch(self, rank: int):
        from grader.zygote import rss_mb
        self.peak_mb = max(self.peak_mb, rss_mb(self.pids[rank]))
        return None


def source_digest(source: str) -> str:
    """A hash of every file of the autograder's source folder but the cache itself."""
    digest = hashlib.sha256()
    for root, dirs, files in os.walk(source):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(files):
            path = os.path.join(root, name)
            if name == CACHE_NAME or name.endswith((".pyc", ".partial")) or not os.path.isfile(path):
                continue
            digest.update(os.path.relpath(path, source).encode() + b"\0")
            with open(path, "rb") as f:
                digest.update(hashlib.sha256(f.read()).digest())
    return digest.hexdigest()


def cpu_description() -> dict[str, str]:
    """What /proc/cpuinfo says of the first CPU: its model and the instruction sets torch chooses kernels by."""
    found = {"machine": platform.machine()}
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                if not line.strip():
                    break  # the first processor's block is enough: the others are the same kind
                name, _, value = line.partition(":")
                if name.strip() in ("model name", "flags", "Features", "CPU part", "CPU implementer"):
                    found[name.strip()] = " ".join(sorted(value.split())) if name.strip() in ("flags", "Features") \
                        else value.strip()
    except OSError:
        found["cpuinfo"] = "unreadable"
    return found


def fingerprint(source: str) -> dict:
    return {"format": CACHE_FORMAT, "source": source_digest(source), "python": sys.version,
            "torch": metadata.version("torch"), "numpy": metadata.version("numpy"), "cpu": cpu_description()}


def canaries(calls: dict[str, tuple[Run, dict, float]]) -> list[str]:
    """Of ``calls`` (key -> run, kwargs, cached seconds), the cheapest 2-rank training run of each (model,
    backend): one of each kind of
    floating-point work the pass does (the other calls are integer or pure-Python arithmetic; 3 ranks add
    nothing but gloo's fixed order of summation). Runs with
    ``hold_back`` are left out: their result carries a secret drawn afresh in every run (scenarios.ReadyProbe)."""
    cheapest: dict[tuple, tuple[float, str]] = {}
    for key, (run, kwargs, seconds) in calls.items():
        if run.fn == "train" and run.world_size == 2 and not kwargs.get("hold_back"):
            kind = (kwargs.get("model"), kwargs.get("backend"))
            if kind not in cheapest or (seconds, key) < cheapest[kind]:
                cheapest[kind] = (seconds, key)
    return sorted(key for _, key in cheapest.values())


class ReferencePass:
    """The reference's result, time and peak memory for each call; see the module's docstring."""

    def __init__(self, runs: list[Run], harness: str, reference_dir: str, env: dict[str, str],
                 server: ForkServer | None = None):
        self.harness, self.reference_dir, self.env, self.server = harness, reference_dir, env, server
        self.calls: dict[str, tuple[Run, dict]] = {}
        for run in runs:
            for kwargs in run.reference_calls().values():
                if run.fn != "launch":
                    self.calls.setdefault(Run(run.fn, kwargs, run.world_size).key(), (run, kwargs))
        self.results: dict[str, tuple[list, float, float]] = {}  # call key -> (result, seconds, peak MB)
        self.pool_start_s = 0.0  # how long 2 trusted workers took to start (the launch's deadline)
        self.how = "computed"  # how the results were obtained, for staff (results.json's extra data)

    def __getitem__(self, key: str) -> tuple[list, float, float]:
        return self.results[key]

    def run(self, cache: str, source: str, verify: bool = True) -> None:
        """The results from ``cache`` if this machine reproduces it, else computed (and stored there).
        ``verify=False`` (staff tools: a cache made on this machine, by this grader, in this session) skips
        the canaries and keeps the cached times as they are."""
        stored = self.load(cache, source)
        if stored is not None and not verify:
            self.fill(stored["calls"], 1.0)
            self.pool_start_s = stored["pool_start_s"]
            self.how = "cached: made on this machine for staff tools (not verified)"
            return
        if stored is None:
            self.compute(list(self.calls))
        else:
            calls = stored["calls"]
            tried = canaries({k: (*self.calls[k], calls[k][1]) for k in self.calls})
            self.compute(tried)
            differ = [k for k in tried if json.dumps(encode_arrays(self.results[k][0]), sort_keys=True)
                      != json.dumps(calls[k][0], sort_keys=True)]
            if not differ:
                then = sum(calls[k][1] for k in tried)
                speed = max(1.0, sum(self.results[k][1] for k in tried) / then) if then > 0 else 1.0
                self.fill(calls, speed)
                self.how = f"cached: {len(tried)} canaries identical; cached times scaled by {speed:.2f}"
                return
            self.how = (f"computed: {len(differ)} of {len(tried)} canaries differ from the cache "
                        f"(first: {differ[0][:120]})")
            self.compute([k for k in self.calls if k not in self.results])
        self.store(cache, source)

    def fill(self, calls: dict, speed: float) -> None:
        for key in self.calls:
            if key not in self.results:
                result, seconds, peak_mb = calls[key]
                self.results[key] = (decode(result), seconds * speed, peak_mb)

    def load(self, cache: str, source: str) -> dict | None:
        try:
            with open(cache, encoding="utf-8") as f:
                data = json.load(f)
        except (OSError, ValueError):
            return None
        if data.get("fingerprint") != fingerprint(source) or not set(self.calls) <= set(data.get("calls", {})):
            self.how = "computed: the cache was made by another grader, torch or kind of CPU"
            return None
        return data

    def store(self, cache: str, source: str) -> None:
        data = {"fingerprint": fingerprint(source), "pool_start_s": self.pool_start_s,
                "calls": {k: [encode_arrays(r), t, m] for k, (r, t, m) in self.results.items()}}
        tmp = cache + ".partial"
        with open(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w", encoding="utf-8") as f:
            json.dump(data, f)
        os.replace(tmp, cache)

    def compute(self, keys: list[str]) -> None:
        """Run these calls, one world size at a time (768 MB hold few workers), on ``self.server`` (a
        grading's fork server: its children are trusted unless a request jails them) or else on a fresh
        fork server of the harness; how long 2 workers take to start is measured on the way."""
        server = self.server or ForkServer(paths=[self.harness], env=self.env)
        paths, setup = [self.reference_dir, self.harness], {"traps": False}  # torch's DDP is the oracle here
        pools: dict[int, WorkerPool] = {}
        try:
            with MeasuringPool(server, 1, paths=paths, env=self.env, setup=setup) as first:
                first.start()  # once the server has imported torch: a start is then all that is measured
            began = time.monotonic()
            pools[2] = MeasuringPool(server, 2, paths=paths, env=self.env, setup=setup)
            pools[2].start()  # (check 1.4 starts 2 ranks: its deadline comes from this)
            self.pool_start_s = self.pool_start_s or time.monotonic() - began
            for key in sorted(keys, key=lambda k: self.calls[k][0].world_size):
                run, kwargs = self.calls[key]
                if run.world_size not in pools:
                    for pool in pools.values():
                        pool.close()
                    pools = {run.world_size: MeasuringPool(server, run.world_size, paths=paths, env=self.env,
                                                           setup=setup)}
                pool = pools[run.world_size]
                began, pool.peak_mb = time.monotonic(), 0.0
                result = pool.run(f"grading.scenarios:{run.fn}", deadline_s=600.0, **kwargs)
                self.results[key] = (result, time.monotonic() - began, pool.peak_mb)
        finally:
            for pool in pools.values():
                pool.close()
            if server is not self.server:
                server.stop()
