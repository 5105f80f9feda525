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

The cache is JSON lines: first an index, ``{"fingerprint", "pool_start_s", "calls": {call_id(key): [offset,
length, seconds, peak MB]}}``, then each call's result on a line of its own (``offset`` and ``length`` in
bytes, from the end of the index). A result is read when a check compares with it, and dropped after: the
grader never holds the whole pass (30 MB of JSON, more once parsed) beside the student's workers in
Gradescope's 768 MB. A pass computed here goes to the cache the same way, one result at a time.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass, field
from importlib import metadata
from typing import IO, Any

from checks.check import WARM_UP, Run
from checks.pool import ForkServer, WorkerPool, decode, encode_arrays

CACHE_FORMAT = 3
CACHE_NAME = "reference-cache.json"  # in the autograder's source folder (root's alone on Gradescope)
MAX_INDEX_BYTES = 2**20  # the index's line (~20 kB); a file of another format is not read further than this


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


def call_id(key: str) -> str:
    """A call's name in the cache file: a hash of its key (the keys of Part 2's calls hold thousands of cases)."""
    return hashlib.sha256(key.encode()).hexdigest()


@dataclass
class Lines:
    """Results in a file, one JSON line each: ``index`` maps a call's ``call_id`` to [offset (from ``base``),
    length, seconds, peak MB]; ``pool_start_s`` is the pass's, stored with it."""

    file: IO[bytes]
    base: int = 0
    index: dict[str, list] = field(default_factory=dict)
    pool_start_s: float = 0.0

    def __contains__(self, key: str) -> bool:
        return call_id(key) in self.index

    def read(self, key: str) -> Any:
        """The call's result as stored (tensors still encoded)."""
        offset, length = self.index[call_id(key)][:2]
        self.file.seek(self.base + offset)
        return json.loads(self.file.read(length))

    def times(self, key: str) -> tuple[float, float]:
        """(seconds, peak MB) of the call."""
        return tuple(self.index[call_id(key)][2:])

    def append(self, key: str, result: Any, seconds: float, peak_mb: float) -> None:
        line = json.dumps(encode_arrays(result)).encode()
        offset = self.file.seek(0, os.SEEK_END) - self.base
        self.file.write(line)
        self.file.write(b"\n")  # (not joined to the line: a copy of up to 25 MB)
        self.index[call_id(key)] = [offset, len(line), seconds, peak_mb]


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
        self.lines: Lines | None = None  # where the results are read from: the cache file, once ``run`` is done
        self.seconds: dict[str, float] = {}  # call key -> seconds (a cached time scaled by the canaries)
        self.peak_mb: dict[str, float] = {}  # call key -> the largest resident memory of a worker, MB
        self.pool_start_s = 0.0  # how long 2 trusted workers took to start (the launch's deadline)
        self.how = "computed"  # how the results were obtained, for staff (results.json's extra data)

    def result(self, key: str) -> Any:
        """A call's result (tensors as numpy arrays), read from the cache file now."""
        return decode(self.lines.read(key))

    def run(self, cache: str, source: str, verify: bool = True) -> None:
        """The results from ``cache`` if this machine reproduces it, else computed (and stored there).
        ``verify=False`` (staff tools: a cache made on this machine, by this grader, in this session) skips
        the canaries and keeps the cached times as they are."""
        stored = self.load(cache, source)
        if stored is not None and not verify:
            self.use(stored, 1.0)
            self.pool_start_s = stored.pool_start_s
            self.how = "cached: made on this machine for staff tools (not verified)"
            return
        # What is computed here waits in a file of no name beside the cache (root's alone), not in memory.
        with tempfile.TemporaryFile(dir=os.path.dirname(cache)) as scratch:
            fresh = Lines(scratch)
            if stored is None:
                self.compute(list(self.calls), fresh)
            else:
                tried = canaries({k: (*self.calls[k], stored.times(k)[0]) for k in self.calls})
                self.compute(tried, fresh)
                differ = [k for k in tried if json.dumps(fresh.read(k), sort_keys=True)
                          != json.dumps(stored.read(k), sort_keys=True)]
                if not differ:
                    then = sum(stored.times(k)[0] for k in tried)
                    speed = max(1.0, sum(fresh.times(k)[0] for k in tried) / then) if then > 0 else 1.0
                    self.use(stored, speed)
                    for key in tried:  # (the canaries' bits are the cache's; their times are this grading's)
                        self.seconds[key], self.peak_mb[key] = fresh.times(key)
                    self.how = f"cached: {len(tried)} canaries identical; cached times scaled by {speed:.2f}"
                    return
                stored.file.close()
                self.how = (f"computed: {len(differ)} of {len(tried)} canaries differ from the cache "
                            f"(first: {differ[0][:120]})")
                self.compute([k for k in self.calls if k not in fresh], fresh)
            self.store(cache, source, fresh)
        self.use(self.load(cache, source), 1.0)

    def use(self, lines: Lines, speed: float) -> None:
        self.lines = lines
        for key in self.calls:
            seconds, peak_mb = lines.times(key)
            self.seconds[key], self.peak_mb[key] = seconds * speed, peak_mb

    def load(self, cache: str, source: str) -> Lines | None:
        """The cache file's results, opened (the file read later is the one checked here), if it was made by
        this grader on this kind of machine, is whole and has every call; else None."""
        try:
            f = open(cache, "rb")
        except OSError:
            return None
        try:
            index = json.loads(f.readline(MAX_INDEX_BYTES))
            lines = Lines(f, f.tell(), index["calls"], index["pool_start_s"])
            size = lines.base + sum(length + 1 for _, length, _, _ in lines.index.values())
        except (ValueError, TypeError, KeyError):
            index = None  # not this format (or not JSON at all)
        if index is None or os.fstat(f.fileno()).st_size != size:
            f.close()
            return None
        if index.get("fingerprint") != fingerprint(source) or not all(k in lines for k in self.calls):
            f.close()
            self.how = "computed: the cache was made by another grader, torch or kind of CPU"
            return None
        return lines

    def store(self, cache: str, source: str, fresh: Lines) -> None:
        index = {"fingerprint": fingerprint(source), "pool_start_s": self.pool_start_s, "calls": fresh.index}
        tmp = cache + ".partial"
        with open(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "wb") as f:
            f.write(json.dumps(index).encode() + b"\n")
            fresh.file.seek(0)
            shutil.copyfileobj(fresh.file, f)
        os.replace(tmp, cache)

    def compute(self, keys: list[str], into: Lines) -> None:
        """Run these calls, one world size at a time (768 MB hold few workers), on ``self.server`` (a
        grading's fork server: its children are trusted unless a request jails them) or else on a fresh
        fork server of the harness, each result going to ``into`` as it comes; how long 2 workers take to
        start is measured on the way."""
        server = self.server or ForkServer(paths=[self.harness], env=self.env, warm_up=WARM_UP)
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
                result = pool.run(run.scenario, deadline_s=600.0, **kwargs)
                into.append(key, result, time.monotonic() - began, pool.peak_mb)
                result = None  # (not held while the next call runs)
        finally:
            for pool in pools.values():
                pool.close()
            if server is not self.server:
                server.stop()
