"""Measure gloo all-reduce on your machine (``make measure``): the data of handout §6, Q8-Q10.

    python measure.py                 # from the folder holding minddp/; about 10-20 s
    python measure.py --repeats 25    # more repetitions per size (steadier medians, slower)

Two local gloo processes (ranks) join one process group and time ``dist.all_reduce`` of float32 tensors:

* one tensor of each of ``SIZES`` bytes (1 KiB ... 16 MiB, four orders of magnitude): a few warm-up
  calls, a barrier, then ``--repeats`` timed calls back to back (each collective keeps the ranks in step);
  each call counts as long as its slowest rank saw it (a collective ends when its last rank is done), and
  the median over the calls is reported;
* the lecture's experiment: ``SMALL_TENSORS`` tensors of ``SMALL_TENSOR_BYTES`` bytes all-reduced one
  by one, against the same bytes in one flat tensor (only the all-reduces are timed, not the copies a
  bucket would add).

It prints a table, then a Python dict: paste the dict as the return value of ``q8_measurements()`` in
answers.py. Nothing here uses your minddp code, so it runs before any part is done. The processes join
through a file in a temporary folder (no port is picked, so parallel runs cannot collide), every
collective has the process group's timeout, and the whole run has a deadline after which every process
is killed; every process is waited for.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import timedelta

WORLD_SIZE = 2
SIZES = tuple(4**k for k in range(5, 13))  # bytes: 1 KiB, 4 KiB, ..., 16 MiB (8 sizes, 4.2 orders of magnitude)
SMALL_TENSORS, SMALL_TENSOR_BYTES = 4096, 4096  # the lecture's 4096 small tensors (1024 float32 each) vs one
REPEATS, WARMUP = 15, 3  # per size: timed calls (their median is reported), untimed calls first
SMALL_REPEATS = 3  # at most; the 4096 one-by-one all-reduces take a second or more per run (warm by then)
FLOAT32_BYTES = 4
COLLECTIVE_TIMEOUT = timedelta(seconds=60)  # any collective that waits longer raises (a peer died)
DEADLINE_S = 180.0  # the whole measurement; then every worker is killed


# -- the workers ------------------------------------------------------------------------------------------

def slowest_median(seconds: list[float]) -> float:
    """The median over repetitions of the slowest rank's time: a collective is done when every rank is."""
    import torch
    import torch.distributed as dist
    times = torch.tensor(seconds, dtype=torch.float64)
    dist.all_reduce(times, op=dist.ReduceOp.MAX)
    return statistics.median(times.tolist())


def time_calls(call, repeats: int, warmup: int) -> float:
    """Seconds of one ``call()`` (which runs collectives): warm-up calls, then the median of timed ones."""
    import torch.distributed as dist
    for _ in range(warmup):  # first calls pay for connections and allocations: not what we model
        call()
    dist.barrier()  # start together; from then on each collective keeps the ranks in step
    seconds = []
    for _ in range(repeats):
        began = time.perf_counter()
        call()
        seconds.append(time.perf_counter() - began)
    return slowest_median(seconds)


def measure(repeats: int) -> dict:
    """What the dict reports, measured by this rank (every rank returns the same numbers)."""
    import torch
    import torch.distributed as dist

    def all_reduce(tensors: list) -> None:
        for tensor in tensors:  # one synchronous all-reduce after another, as a cap of 0 would launch them
            dist.all_reduce(tensor)

    allreduce_s = {}
    for nbytes in SIZES:
        tensor = [torch.zeros(nbytes // FLOAT32_BYTES)]
        allreduce_s[nbytes] = time_calls(lambda t=tensor: all_reduce(t), repeats, WARMUP)
    small = [torch.zeros(SMALL_TENSOR_BYTES // FLOAT32_BYTES) for _ in range(SMALL_TENSORS)]
    flat = [torch.zeros(SMALL_TENSORS * SMALL_TENSOR_BYTES // FLOAT32_BYTES)]
    small_repeats = min(SMALL_REPEATS, repeats)
    return {"world_size": dist.get_world_size(), "allreduce_s": allreduce_s, "small_tensors": SMALL_TENSORS,
            "small_tensor_bytes": SMALL_TENSOR_BYTES,
            "many_small_s": time_calls(lambda: all_reduce(small), small_repeats, 0),
            "one_flat_s": time_calls(lambda: all_reduce(flat), repeats, WARMUP)}


def worker(rank: int, world_size: int, store: str, out: str, repeats: int) -> None:
    import torch
    import torch.distributed as dist
    torch.set_num_threads(1)  # two ranks share a few cores; more threads only fight each other
    dist.init_process_group("gloo", init_method=f"file://{store}", rank=rank, world_size=world_size,
                            timeout=COLLECTIVE_TIMEOUT)
    try:
        result = measure(repeats)
        if rank == 0:
            with open(out, "w", encoding="utf-8") as f:
                json.dump(result, f)
        dist.barrier()
    finally:
        dist.destroy_process_group()


# -- the launcher -----------------------------------------------------------------------------------------
# Not minddp.launch: that one gives each worker torchrun's environment through your Part 1
# (torchrun_env), and this script must run before any part is done.

def stop(procs: list[subprocess.Popen]) -> None:
    """Kill every worker still running (with whatever it started), then wait for each: no zombie is left."""
    for proc in procs:
        if proc.poll() is None:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    for proc in procs:
        proc.wait()


def run_workers(repeats: int, world_size: int = WORLD_SIZE, deadline_s: float = DEADLINE_S) -> dict:
    """Start ``world_size`` workers, wait for all of them (at most ``deadline_s``), return rank 0's result."""
    with tempfile.TemporaryDirectory(prefix="minddp-measure-") as tmp:
        store, out = os.path.join(tmp, "store"), os.path.join(tmp, "result.json")
        env = {**os.environ, "OMP_NUM_THREADS": "1"}
        procs = [subprocess.Popen([sys.executable, os.path.abspath(__file__), "--worker", str(rank),
                                   "--world-size", str(world_size), "--store", store, "--out", out,
                                   "--repeats", str(repeats)], env=env, start_new_session=True)
                 for rank in range(world_size)]
        deadline = time.monotonic() + deadline_s
        try:
            while any(proc.poll() is None for proc in procs):
                failed = [proc.returncode for proc in procs if proc.returncode not in (None, 0)]
                if failed:
                    raise SystemExit(f"measure: a worker failed (exit code {failed[0]}); its error is above")
                if time.monotonic() > deadline:
                    raise SystemExit(f"measure: the workers were still running after {deadline_s:.0f} s; stopped them")
                time.sleep(0.05)
            failed = [proc.returncode for proc in procs if proc.returncode != 0]
            if failed or not os.path.exists(out):
                raise SystemExit(f"measure: a worker failed (exit code {failed[0] if failed else '?'}); its error is above")
        finally:
            stop(procs)
        with open(out, encoding="utf-8") as f:
            result = json.load(f)
    result["allreduce_s"] = {int(nbytes): seconds for nbytes, seconds in result["allreduce_s"].items()}
    return result


# -- the report -------------------------------------------------------------------------------------------

def rounded(seconds: float) -> float:
    """Four significant digits: more than the measurement's noise, and what your fit will read."""
    return float(f"{seconds:.4g}")


def as_answer(result: dict) -> dict:
    """The dict to paste, its times rounded."""
    return {"world_size": result["world_size"],
            "allreduce_s": {nbytes: rounded(s) for nbytes, s in sorted(result["allreduce_s"].items())},
            "small_tensors": result["small_tensors"], "small_tensor_bytes": result["small_tensor_bytes"],
            "many_small_s": rounded(result["many_small_s"]), "one_flat_s": rounded(result["one_flat_s"])}


def dict_literal(answer: dict) -> str:
    """``answer`` as Python source, one size per line (what you paste)."""
    sizes = ",\n".join(f"        {nbytes}: {seconds!r}" for nbytes, seconds in answer["allreduce_s"].items())
    return ("{\n"
            f"    \"world_size\": {answer['world_size']},\n"
            f"    \"allreduce_s\": {{  # bytes: seconds (median)\n{sizes},\n    }},\n"
            f"    \"small_tensors\": {answer['small_tensors']},\n"
            f"    \"small_tensor_bytes\": {answer['small_tensor_bytes']},\n"
            f"    \"many_small_s\": {answer['many_small_s']!r},\n"
            f"    \"one_flat_s\": {answer['one_flat_s']!r},\n"
            "}")


def table(answer: dict) -> list[str]:
    """Per size: the time, and the bytes per second it reached (what the bandwidth term is about)."""
    lines = [f"  {'bytes':>10s} {'time (us)':>11s} {'bytes/s':>10s}"]
    for nbytes, seconds in answer["allreduce_s"].items():
        lines.append(f"  {nbytes:>10d} {seconds * 1e6:>11.1f} {nbytes / seconds:>10.3g}")
    many, flat = answer["many_small_s"], answer["one_flat_s"]
    lines.append(f"  {answer['small_tensors']} tensors of {answer['small_tensor_bytes']} bytes one by one: "
                 f"{many * 1e3:.1f} ms; the same bytes as one tensor: {flat * 1e3:.2f} ms ({many / flat:.0f}x)")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=REPEATS, help="timed calls per size (the median is reported)")
    parser.add_argument("--worker", type=int, default=None, help=argparse.SUPPRESS)  # the rank of a worker
    parser.add_argument("--world-size", type=int, default=WORLD_SIZE, help=argparse.SUPPRESS)
    parser.add_argument("--store", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.repeats < 1:
        parser.error("--repeats must be at least 1")
    if args.worker is not None:
        worker(args.worker, args.world_size, args.store, args.out, args.repeats)
        return 0
    began = time.perf_counter()
    answer = as_answer(run_workers(args.repeats))
    print(f"measure: {answer['world_size']} gloo ranks on this machine, median of {args.repeats} calls per size "
          f"({min(SMALL_REPEATS, args.repeats)} runs of the small tensors), in {time.perf_counter() - began:.1f} s")
    print("\n".join(table(answer)))
    print("Paste this dict as the return value of q8_measurements() in answers.py (handout §6, Q8):")
    print(dict_literal(answer))
    return 0


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    os._exit(code)  # skip interpreter teardown, where gloo sometimes aborts after the work is done
