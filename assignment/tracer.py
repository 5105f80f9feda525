# GENERATED from solutions/tracer.py by tools/assign.py (staff: edit that file, then `make assignment`).
# Provided code: do not edit it by hand; the grader uses its own copy.
"""Record a real run of your DDP and of torch's on 2 gloo ranks: Perfetto traces and a timeline (``make trace``).

    python tracer.py [--model mlp] [--out trace] [--steps 3]      # from the folder holding minddp/

The same model (``models.build``), wrapped once in minddp's DDP and once in torch's, trains a few iterations
on 2 gloo processes (``minddp.launch``: a free port, every worker reaped). After warm-up iterations (torch
uses one bucket in iteration 1 and rebuilds its buckets before iteration 2), ``torch.profiler`` records
``--steps`` iterations of each. Written to ``--out``:

* ``minddp-rank0.json``, ``torch-rank0.json``, ...: the profiler's own Chrome traces, one per rank and
  implementation; open them in https://ui.perfetto.dev (or chrome://tracing). The tracer's marks are
  ``record_function`` ranges named ``minddp.trace: ...``:
  ``grad ready p<i> <name>`` (a tensor hook: parameter i's gradient is computed, before any DDP hook sees
  it), ``launch bucket <k>/<n>`` (the all-reduce of bucket k is launched), ``wait bucket <k>`` (your Reducer
  waits on its work; torch's waits in C++, unmarked) and ``backward <i>`` (``loss.backward()``). gloo's own
  ``gloo:all_reduce`` ranges, on its threads, show each all-reduce running.
* ``timeline.json`` (what was measured, ms from the start of each backward) and ``timeline.png``: per rank,
  your DDP beside torch's: backward, every gradient-ready instant, every bucket's launch and completion.

Nothing in minddp/ is changed: the tracer adds its hooks from outside and wraps
``torch.distributed.all_reduce`` while it runs (your Reducer gets the real Work, wrapped to time its ``wait``).
Torch's DDP launches from C++, out of the wrapper's sight, so it gets a comm hook that does what its
built-in path does (multiply the bucket by 1/world_size, all-reduce: the same bits) through
``dist.all_reduce``. What the wrapper sees is checked against the collectives the process group counted
(the grading's ``collective_mark``).
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import os
import re
import sys
import time
from collections.abc import Callable, Iterator
from datetime import timedelta
from typing import Any

import torch
import torch.distributed as dist
from torch.profiler import ProfilerActivity, profile, record_function

from checks.scenarios import collective_mark
from minddp import models

LABEL = "minddp.trace"
IMPLS = ("minddp", "torch")
TITLES = {"minddp": "minddp (yours)", "torch": "torch DDP"}
WORLD_SIZE = 2
WARMUP = 2  # iteration 1: torch's single bucket; iteration 2: its rebuilt buckets, as every later one
TIMEOUT = timedelta(seconds=60)  # the process group's: bounds every collective of the workers
DEADLINE_S = 300.0  # the whole run; then minddp.launch stops every worker
MiB = 2**20
LAUNCH_RE = re.compile(rf"^{re.escape(LABEL)}: launch bucket (\d+)/")
BACKWARD_RE = re.compile(rf"^{re.escape(LABEL)}: backward (\d+)$")


def now_ms() -> float:
    return time.perf_counter_ns() / 1e6


# -- recording (in each worker) -------------------------------------------------------------------------------

class Recorder:
    """One rank's events for one implementation, iteration by iteration, in ms of ``time.perf_counter``."""

    def __init__(self, names: list[str]):
        self.names = names  # trainable parameters, by index (the Reducer's order)
        self.iterations: list[dict[str, Any]] = []
        self.buckets: dict[int, list[int]] = {}  # bucket index -> parameter indices, in buffer order
        # A bucket's buffer, by address (see ``address``) -> (bucket index, its storage). Holding the storage
        # keeps the memory from being freed and handed to another tensor: an address seen once stays its bucket.
        # None for an address that carried two buckets in one iteration (one buffer reused for several).
        self.known: dict[tuple, tuple[int | None, Any]] = {}
        self.launched: set[tuple] = set()  # the addresses all-reduced in this iteration
        self.identify: Callable[[torch.Tensor], int | None] = lambda tensor: None  # minddp: by what it holds

    def start_iteration(self) -> dict[str, Any]:
        self.iterations.append({"backward": None, "ready": [], "launch": [], "wait": [], "done": [],
                                "collectives": 0})
        self.launched.clear()
        return self.iterations[-1]

    def note_bucket(self, index: int, buffer: torch.Tensor, params: list[int]) -> None:
        """Torch's comm hook says which bucket a buffer is."""
        self.buckets[index] = params
        self.known[address(buffer)] = (index, buffer.untyped_storage())

    def bucket_of(self, tensor: torch.Tensor) -> int | None:
        """The bucket an all-reduced tensor is. By its address: a dict lookup, as torch finds its buckets. A
        buffer not seen before (the first iteration, or a Reducer that allocates one per launch) is identified
        by what it holds (``identify``: costly, so the launch time is taken before) and remembered; so is every
        launch of a buffer that carries several buckets in one iteration."""
        key = address(tensor)
        found = self.known.get(key)
        shared = key in self.launched or (found is not None and found[0] is None)
        self.launched.add(key)
        if found is not None and not shared:
            return found[0]
        bucket = self.identify(tensor)
        if bucket is not None or shared:
            self.known[key] = (None if shared else bucket, tensor.untyped_storage())
        return bucket

    def launch_label(self, bucket: int | None, tensor: torch.Tensor) -> str:
        if bucket is None:
            return f"{LABEL}: launch all_reduce of a tensor that is no bucket's buffer ({tensor.numel()} elements)"
        params = self.buckets[bucket]
        size = tensor.numel() * tensor.element_size()
        return (f"{LABEL}: launch bucket {bucket}/{len(self.buckets)} (p{', p'.join(map(str, params))}; "
                f"{size / MiB:.2f} MiB)")


def address(tensor: torch.Tensor) -> tuple:
    """Where a tensor's elements are: its first element's address (storage and offset), length and dtype."""
    return tensor.data_ptr(), tensor.numel(), tensor.dtype


class TracedWork:
    """What the wrapped all_reduce hands back: the real Work, whose ``wait`` is timed and labelled."""

    def __init__(self, work: Any, bucket: int | None, iteration: dict[str, Any]):
        self._work, self._bucket, self._iteration = work, bucket, iteration

    def wait(self, *args: Any, **kwargs: Any) -> Any:
        start = now_ms()
        with record_function(f"{LABEL}: wait bucket {self._bucket}"):
            result = self._work.wait(*args, **kwargs)
        self._iteration["wait"].append([self._bucket, start, now_ms()])
        return result

    def __getattr__(self, name: str) -> Any:  # get_future, is_completed, ...: the Work's own
        return getattr(self._work, name)


@contextlib.contextmanager
def traced_all_reduce(recorder: Recorder) -> Iterator[None]:
    """``dist.all_reduce`` (looked up at call time by ``dist.all_reduce(...)``) wrapped: a labelled range
    around each launch, its completion noted by a callback on its future, its Work's wait timed."""
    original = dist.all_reduce

    def all_reduce(tensor: torch.Tensor, *args: Any, **kwargs: Any) -> Any:
        start = now_ms()  # first: when the Reducer asked for the launch, whatever finding its bucket costs
        bucket, iteration = recorder.bucket_of(tensor), recorder.iterations[-1]
        with record_function(recorder.launch_label(bucket, tensor)):
            work = original(tensor, *args, **kwargs)
        if work is None:  # a blocking all_reduce (async_op=False): nothing to wait for later
            return work
        iteration["launch"].append([bucket, start, now_ms()])
        # Runs on gloo's thread when the all-reduce has finished (the profiler does not record ranges
        # there, so the instant goes to timeline.json only; gloo's own range shows it in the trace).
        work.get_future().add_done_callback(lambda _: iteration["done"].append([bucket, now_ms()]))
        return TracedWork(work, bucket, iteration)

    dist.all_reduce = dist.distributed_c10d.all_reduce = all_reduce
    try:
        yield
    finally:
        dist.all_reduce = dist.distributed_c10d.all_reduce = original


def ready_hook(recorder: Recorder, index: int) -> Callable:
    """A tensor hook: it fires when the gradient is computed, before autograd accumulates it into .grad and
    so before any DDP hook (the grading's ``ReadyProbe`` watches gradients the same way)."""
    label = f"{LABEL}: grad ready p{index} {recorder.names[index]}"

    def hook(grad: torch.Tensor) -> None:
        with record_function(label):
            recorder.iterations[-1]["ready"].append([index, now_ms()])
    return hook


def torch_comm_hook(recorder: Recorder, index_of: dict[int, int]) -> Callable:
    """Torch's built-in reduction, through ``dist.all_reduce`` (so the wrapper sees it): bucket * (1/K), SUM."""
    scale = 1.0 / dist.get_world_size()

    def hook(state, bucket):  # no annotations: torch insists they be exactly dist.GradBucket
        buffer = bucket.buffer()
        recorder.note_bucket(bucket.index(), buffer, [index_of[id(p)] for p in bucket.parameters()])
        work = dist.all_reduce(buffer.mul_(scale), async_op=True)
        return work.get_future().then(lambda fut: fut.value()[0])
    return hook


def wrap(impl: str, module: torch.nn.Module, bucket_cap_mb: float, recorder: Recorder,
         index_of: dict[int, int]) -> torch.nn.Module:
    if impl == "torch":
        ddp = torch.nn.parallel.DistributedDataParallel(module, bucket_cap_mb=bucket_cap_mb)
        ddp.register_comm_hook(None, torch_comm_hook(recorder, index_of))
        return ddp
    from minddp.bucketing import compute_bucket_assignment
    from minddp.ddp import DistributedDataParallel
    ddp = DistributedDataParallel(module, bucket_cap_mb=bucket_cap_mb)
    buckets = compute_bucket_assignment(ddp.params, ddp.bucket_size_limits)  # what the wrapper gave its Reducer
    recorder.buckets = dict(enumerate(buckets))
    recorder.identify = lambda tensor: bucket_holding(tensor, ddp.params, buckets)
    return ddp


def bucket_holding(tensor: torch.Tensor, params: list[torch.nn.Parameter], buckets: list[list[int]]) -> int | None:
    """Which bucket an all-reduced tensor is: the one of its size and dtype, or among several such, the one
    whose gradients it holds (raw, or times 1/K). The Reducer's state is the student's design, so the
    tracer looks only at what it sends; ``Recorder.bucket_of`` asks once per buffer, then knows its address."""
    def same_shape(indices: list[int]) -> bool:
        return (sum(params[i].numel() for i in indices) == tensor.numel()
                and params[indices[0]].dtype == tensor.dtype)
    candidates = [b for b, indices in enumerate(buckets) if same_shape(indices)]
    if len(candidates) == 1:
        return candidates[0]
    for b in candidates:
        grads = [params[i].grad for i in buckets[b]]
        if all(g is not None for g in grads):
            flat = torch.cat([g.reshape(-1) for g in grads])
            if torch.equal(tensor, flat) or torch.equal(tensor, flat * (1.0 / dist.get_world_size())):
                return b
    return None


def train_step(ddp: torch.nn.Module, optimizer: torch.optim.Optimizer, recorder: Recorder, model: str,
               step: int) -> None:
    dist.barrier()  # both ranks start the iteration together: their timelines line up
    iteration = recorder.start_iteration()
    with record_function(f"{LABEL}: iteration {step + 1}"):
        optimizer.zero_grad()
        loss = models.loss_fn(ddp(models.batch(model, dist.get_rank(), step)))
        mark, start = collective_mark(), now_ms()
        with record_function(f"{LABEL}: backward {step + 1}"):
            loss.backward()
        iteration["backward"] = [start, now_ms()]
        iteration["collectives"] = collective_mark() - mark  # every collective of backward, whatever its API
        optimizer.step()


@contextlib.contextmanager
def quiet_stderr() -> Iterator[None]:
    """File descriptor 2 to /dev/null: kineto logs two lines there at every profiler start and stop, and no
    setting turns them off (torch 2.13). Only around start and stop, so no error of the run is hidden."""
    sys.stderr.flush()
    saved = os.dup(2)
    with open(os.devnull, "w") as devnull:
        os.dup2(devnull.fileno(), 2)
    try:
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def run(impl: str, model: str, bucket_cap_mb: float, steps: int, out: str) -> dict[str, Any]:
    """Train ``WARMUP`` untraced then ``steps`` traced iterations; export the trace; return what was seen."""
    module = models.build(model, seed=0)
    trainable = [(name, p) for name, p in module.named_parameters() if p.requires_grad]
    recorder = Recorder([name for name, _ in trainable])
    ddp = wrap(impl, module, bucket_cap_mb, recorder, {id(p): i for i, (_, p) in enumerate(trainable)})
    handles = [p.register_hook(ready_hook(recorder, i)) for i, (_, p) in enumerate(trainable)]
    optimizer = torch.optim.SGD(module.parameters(), lr=0.05)
    try:
        with traced_all_reduce(recorder):
            for step in range(WARMUP):
                train_step(ddp, optimizer, recorder, model, step)
            del recorder.iterations[:]
            prof = profile(activities=[ProfilerActivity.CPU])
            with quiet_stderr():
                prof.start()
            try:
                for step in range(WARMUP, WARMUP + steps):
                    train_step(ddp, optimizer, recorder, model, step)
            finally:
                with quiet_stderr():
                    prof.stop()
        prof.export_chrome_trace(os.path.join(out, f"{impl}-rank{dist.get_rank()}.json"))
    finally:
        for handle in handles:
            handle.remove()
    return {"params": recorder.names, "buckets": sorted([k, v] for k, v in recorder.buckets.items()),
            "iterations": [relative(it, WARMUP + 1 + i) for i, it in enumerate(recorder.iterations)]}


def relative(iteration: dict[str, Any], number: int) -> dict[str, Any]:
    """Iteration ``number`` (from 1), its times in ms from the start of its backward (each rank has its clock)."""
    t0 = iteration["backward"][0]

    def shift(rows: list[list]) -> list[list]:
        return sorted([row[0], *(round(t - t0, 3) for t in row[1:])] for row in rows)

    return {"iteration": number, "backward": [0.0, round(iteration["backward"][1] - t0, 3)],
            "collectives": iteration["collectives"],
            **{key: shift(iteration[key]) for key in ("ready", "launch", "wait", "done")}}


def default_bucket_cap_mb(model: str) -> float:
    """About six buckets, whatever the model's size (6 x Linear(512, 512): 1 MB, one layer per bucket)."""
    trainable = [p for p in models.build(model).parameters() if p.requires_grad]
    return float(f"{sum(p.numel() * p.element_size() for p in trainable) / 6 / MiB:.2g}")


def worker(args: argparse.Namespace) -> None:
    dist.init_process_group("gloo", init_method="env://", timeout=TIMEOUT)
    try:
        runs = {impl: run(impl, args.model, args.bucket_cap_mb, args.steps, args.out) for impl in IMPLS}
        gathered: list | None = [None] * dist.get_world_size() if dist.get_rank() == 0 else None
        dist.gather_object(runs, gathered, dst=0)
        if gathered is not None:
            data = {"model": args.model, "bucket_cap_mb": args.bucket_cap_mb, "world_size": dist.get_world_size(),
                    "warmup": WARMUP, "steps": args.steps,
                    "runs": {impl: [runs_of_rank[impl] for runs_of_rank in gathered] for impl in IMPLS}}
            with open(os.path.join(args.out, "timeline.json"), "w", encoding="utf-8") as f:
                json.dump(data, f, indent=1)
        dist.barrier()
    finally:
        gc.collect()  # drop the DDPs (their hooks, pending futures) before the group goes away
        dist.destroy_process_group()


# -- reading a trace ----------------------------------------------------------------------------------------

def launch_orders(events: list[dict]) -> dict[int, list[int]]:
    """Per traced backward (by iteration number, from 1): the bucket indices in the order their launches started,
    from a Chrome trace's events (the tracer's labelled ranges)."""
    backwards = [(e["ts"], e["ts"] + e.get("dur", 0), int(m[1])) for e in events
                 if e.get("ph") == "X" and (m := BACKWARD_RE.match(e.get("name", "")))]
    launches = sorted((e["ts"], int(m[1])) for e in events
                      if e.get("ph") == "X" and (m := LAUNCH_RE.match(e.get("name", ""))))
    return {number: [bucket for ts, bucket in launches if start <= ts <= end] for start, end, number in sorted(backwards)}


def order_problems(orders: dict[int, list[int]], num_buckets: int | None = None) -> dict[int, str]:
    """The iterations whose launch order is wrong, and how: it must be bucket 0, 1, 2, ..., each once."""
    problems = {}
    for number, order in orders.items():
        expected = list(range(num_buckets if num_buckets is not None else len(order)))
        if order != expected:
            problems[number] = f"iteration {number}: buckets launched in the order {order}, expected {expected}"
    return problems


def load_events(path: str) -> list[dict]:
    with open(path, encoding="utf-8") as f:
        return json.load(f)["traceEvents"]


# -- drawing ---------------------------------------------------------------------------------------------------

COMPUTE, COLORS, WAIT = "#8C8C8C", ("#4C72B0", "#DD8452"), "#C44E52"  # handout/figures.py's colours


def draw(data: dict[str, Any], path: str, width: float = 13.0, dpi: int = 150, metadata: dict | None = None,
         titles: dict[str, str] | None = None) -> None:
    """Per rank (rows), minddp beside torch (columns): the last traced iteration, on one time axis."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    runs, ranks = data["runs"], range(data["world_size"])
    titles, wide = titles or TITLES, width >= 11  # wide: a screen; narrow: the handout's column
    lanes = 1 + max(len(runs[impl][r]["buckets"]) for impl in IMPLS for r in ranks)
    xmax = 1.02 * max(max([it["backward"][1]] + [t for _, t in it["done"]])
                      for impl in IMPLS for r in ranks for it in runs[impl][r]["iterations"][-1:])
    height = len(ranks) * ((0.24 if wide else 0.15) * lanes + 0.6) + 0.6
    fig, axes = plt.subplots(len(ranks), len(IMPLS), figsize=(width, height), sharex=True, squeeze=False,
                             layout="constrained")  # makes room for the titles and the legend below
    for r in ranks:
        for c, impl in enumerate(IMPLS):
            panel(axes[r][c], runs[impl][r], f"{titles[impl]}, rank {r}", xmax, wide)
    for ax in axes[-1]:
        ax.set_xlabel(f"ms from the start of backward (iteration {data['warmup'] + data['steps']})",
                      fontsize="small")
    handles = [Patch(color=COMPUTE, label="loss.backward()"),
               Line2D([], [], marker="|", color="black", linestyle="none", markersize=7,
                      label="a gradient is ready (in its bucket's row)"),
               Line2D([], [], color="#999999", linewidth=0.8, linestyle=":",
                      label="bucket full, not launched yet"),
               Patch(color=COLORS[0], label="all-reduce, from launch to completion"),
               Patch(color=WAIT, label="Work.wait() (torch's, in C++, are not seen)")]
    fig.legend(handles=handles, loc="outside lower center", ncol=3 if wide else 2, frameon=False,
               fontsize="small")
    if wide:
        fig.suptitle(f"{data['model']}, bucket_cap_mb={data['bucket_cap_mb']:g}, {data['world_size']} gloo ranks. "
                     "Look for: launches in bucket index order, all-reduces overlapping the rest of backward, "
                     "waits at its end", fontsize="medium")
    fig.savefig(path, dpi=dpi, metadata=metadata)
    plt.close(fig)


def panel(ax, run: dict[str, Any], title: str, xmax: float, wide: bool = True) -> None:
    """Row 0: backward, its waits and gradients; row k+1: bucket k's gradients and its all-reduce."""
    it = run["iterations"][-1]
    row = {bucket: k + 1 for k, (bucket, _) in enumerate(run["buckets"])}
    bucket_of = {p: bucket for bucket, params in run["buckets"] for p in params}
    ready, done = dict(it["ready"]), dict(it["done"])
    end = it["backward"][1]
    ax.barh(0, end, height=0.6, color=COMPUTE)
    for _, start, stop in it["wait"]:
        ax.barh(0, max(stop - start, xmax / 400), left=start, height=0.6, color=WAIT)
    for p, t in ready.items():
        ax.plot([t], [0], marker="|", color="white", markersize=6, markeredgewidth=0.7)
        if p in bucket_of:  # (a bucket never launched is unknown for torch)
            ax.plot([t], [row[bucket_of[p]]], marker="|", color="black", markersize=7)
    for bucket, start, _ in it["launch"]:
        if bucket is None:
            continue
        full = max(ready.get(p, 0.0) for p in run["buckets"][row[bucket] - 1][1])
        if start - full > xmax / 100:  # full, not launched yet: a lower bucket was not (index order), or a delay
            ax.plot([full, start], [row[bucket]] * 2, color="#999999", linewidth=0.8, linestyle=":")
        stop = done.get(bucket, end)
        ax.barh(row[bucket], max(stop - start, xmax / 400), left=start, height=0.55, color=COLORS[bucket % 2])
    if ready:
        ax.axvline(max(ready.values()), color="black", linewidth=0.6, linestyle="--")
    exposed = end - max(ready.values(), default=0.0)
    after = "ms of it after the last gradient (dashed)" if wide else "ms exposed"
    ax.set_title(f"{title}: backward {end:.1f} ms, {exposed:.1f} {after}", fontsize="small", loc="left")
    ax.set_yticks(range(len(row) + 1), ["backward"] + [f"bucket {b}" for b in row])
    ax.set_ylim(len(row) + 0.6, -0.6)
    ax.set_xlim(0, xmax)
    ax.tick_params(labelsize="x-small")
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)


# -- the launcher ---------------------------------------------------------------------------------------------

def record(out: str, model: str = "mlp", steps: int = 3, bucket_cap_mb: float | None = None) -> dict[str, Any]:
    """Run the 2 workers; return ``timeline.json``'s content (the Chrome traces are in ``out``)."""
    from minddp.launch import launch
    cap = default_bucket_cap_mb(model) if bucket_cap_mb is None else bucket_cap_mb
    os.makedirs(out, exist_ok=True)
    argv = [os.path.abspath(__file__), "--worker", "--model", model, "--steps", str(steps),
            "--bucket-cap-mb", repr(cap), "--out", os.path.abspath(out)]
    try:
        code = launch(argv, WORLD_SIZE, DEADLINE_S)  # minddp.launch needs your Part 1 (torchrun_env)
    except NotImplementedError as error:
        raise SystemExit(f"tracer: {error}. The tracer needs Parts 1-4.") from None
    if code != 0:
        raise SystemExit(f"tracer: a worker failed (exit code {code}); its error is above. The tracer needs "
                         "Parts 1-4 (minddp.launch, your bucketing, Reducer and DDP wrapper).")
    with open(os.path.join(out, "timeline.json"), encoding="utf-8") as f:
        return json.load(f)


def summary(data: dict[str, Any], out: str) -> list[str]:
    """One row per implementation and rank: the last iteration's times, and the launch order check of every
    traced iteration (read back from the Chrome trace)."""
    last = data["warmup"] + data["steps"]
    trouble = False
    lines = [f"  {f'iteration {last}, ms from backward start':40s}{'backward':>9s}{'last grad':>10s}{'1st launch':>11s}"
             f"{'last done':>10s}   launch order"]
    for impl in IMPLS:
        for rank, run in enumerate(data["runs"][impl]):
            it = run["iterations"][-1]
            orders = launch_orders(load_events(os.path.join(out, f"{impl}-rank{rank}.json")))
            problems = order_problems(orders, len(run["buckets"]))
            verdict = ("index order, every iteration" if not problems else
                       f"NOT IN INDEX ORDER in iteration {', '.join(map(str, problems))}")
            early = [i["iteration"] for i in run["iterations"] if early_waits(i)]
            if early:
                verdict += f"; waits before the last gradient in iteration {', '.join(map(str, early))}"
            unseen = [i["iteration"] for i in run["iterations"] if i["collectives"] != len(i["launch"])]
            if unseen:
                verdict += (f"; iteration(s) {unseen}: the process group counted collectives in backward that were "
                            "not all-reduces launched through torch.distributed.all_reduce (not in the picture)")
            times = (it["backward"][1], max((t for _, t in it["ready"]), default=0.0),
                     min((t for _, t, _ in it["launch"]), default=0.0), max((t for _, t in it["done"]), default=0.0))
            lines.append(f"  {f'{TITLES[impl]}, rank {rank}':40s}{times[0]:9.1f}{times[1]:10.1f}{times[2]:11.1f}"
                         f"{times[3]:10.1f}   {' '.join(map(str, orders.get(last, [])))} ({verdict})")
            trouble = trouble or bool(problems or early)
    if trouble:
        lines.append("  Every rank must launch bucket 0, 1, 2, ... in this order, and wait only in finalize_backward, "
                     "at the end of backward: a wait inside backward serialises communication with it (handout §3).")
    return lines


def early_waits(iteration: dict[str, Any]) -> int:
    """How many waits started before the last gradient of the backward was computed."""
    last = max((t for _, t in iteration["ready"]), default=0.0)
    return sum(start < last for _, start, _ in iteration["wait"])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="mlp", choices=sorted(models.MODELS))
    parser.add_argument("--steps", type=int, default=3, help="traced iterations per implementation")
    parser.add_argument("--bucket-cap-mb", type=float, default=None, help="default: about six buckets")
    parser.add_argument("--out", default="trace")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        worker(args)
        return 0
    began = time.perf_counter()
    data = record(args.out, args.model, args.steps, args.bucket_cap_mb)
    print(f"tracer: {args.model}, bucket_cap_mb={data['bucket_cap_mb']:g}, {WORLD_SIZE} gloo ranks, "
          f"{WARMUP} warm-up + {args.steps} traced iterations of each DDP, in {time.perf_counter() - began:.1f} s")
    print("\n".join(summary(data, args.out)))
    try:
        import matplotlib  # noqa: F401
        draw(data, os.path.join(args.out, "timeline.png"))
        picture = "  timeline.png: the last iteration of each, per rank (the picture)"
    except ImportError:
        picture = (f"  (no timeline.png: matplotlib is not installed; `{sys.executable} -m pip install -r "
                   "requirements-trace.txt`, then run again)")
    traces = " ".join(f"{impl}-rank{r}.json" for impl in IMPLS for r in range(WORLD_SIZE))
    print(f"wrote {os.path.join(args.out, '')}", f"  {traces}: Chrome traces (torch.profiler)", picture,
          "  timeline.json: the measured times behind the picture",
          "Open a trace at https://ui.perfetto.dev (Open trace file) or in Chrome at chrome://tracing (Load);",
          f"search for \"{LABEL}\" to find the gradient-ready, launch, wait and backward marks.", sep="\n")
    return 0


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    os._exit(code)  # skip interpreter teardown, where gloo sometimes aborts after the work is done
