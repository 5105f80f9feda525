"""Step time of minddp's DistributedDataParallel vs torch's, interleaved in the same processes (``make bench``).

    cd solutions && ../.venv/bin/python -m minddp.launch --nproc-per-node 2 bench.py
    cd solutions && ../.venv/bin/python -m minddp.launch --nproc-per-node 2 bench.py --steps 200 --models mlp,tied

For each model, two identical copies are wrapped, one in each implementation, with the default bucket
sizes (1 MiB first bucket, then 25 MiB). Every iteration runs ONE training step (zero_grad, forward, loss,
backward, SGD step) of each, in alternating order, so machine noise and cache effects hit both alike. A
step's time is the slowest rank's; the ratio minddp/torch is taken per pair of steps, then the median.
Warm-up pairs (torch rebuilds its buckets after its first iteration) are not timed.

With 2 ranks on a small machine, wall-clock step times are noisy (thread wake-ups, other processes), so
the table also shows the CPU time of each rank's training thread per step (``time.thread_time``): it
leaves out waiting for the other rank and the network, keeps what each implementation's own code costs
(Python hooks, copies into and out of buckets), and barely moves from run to run.
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import sys
import time

import torch
import torch.distributed as dist

from minddp import models
from minddp.bucketing import compute_bucket_assignment
from minddp.ddp import DistributedDataParallel as MiniDDP
from minddp.process_group import destroy_process_group, init_process_group

DEFAULT_MODELS = ("mlp", "convbn", "many_small", "tied")
DESCRIPTIONS = {"mlp": "6 x Linear(512,512), batch 64", "convbn": "2 x Conv+BatchNorm: buffers",
                "many_small": "48 x Linear(32,32), batch 64", "tied": "embedding tied to output layer",
                "frozen": "2 frozen layers", "mixed": "fp32 + fp64", "twobranch": "two branches",
                "branchy": "3 Linear(16,16)"}
GOAL = 1.05
IMPLS = ("minddp", "torch")


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=300, help="timed steps of EACH implementation per model")
    parser.add_argument("--warmup", type=int, default=10, help="untimed steps of each before timing")
    parser.add_argument("--models", default=",".join(DEFAULT_MODELS),
                        help=f"comma-separated, from {', '.join(models.MODELS)}")
    args = parser.parse_args()
    args.models = [m for m in args.models.split(",") if m]
    unknown = [m for m in args.models if m not in models.MODELS]
    if unknown:
        parser.error(f"unknown model(s) {unknown}; choose from {list(models.MODELS)}")
    if args.steps < 1 or args.warmup < 0:
        parser.error("--steps must be >= 1 and --warmup >= 0")
    return args


def bench_model(name: str, rank: int, steps: int, warmup: int) -> dict:
    """Per-step times (s, the slowest rank's) of each implementation, one step of each in turn."""
    modules = {impl: models.build(name, seed=0) for impl in IMPLS}
    ddps = {"minddp": MiniDDP(modules["minddp"]),
            "torch": torch.nn.parallel.DistributedDataParallel(modules["torch"])}
    optimizers = {impl: torch.optim.SGD(m.parameters(), lr=0.01) for impl, m in modules.items()}
    times = torch.zeros(2, len(IMPLS), steps, dtype=torch.float64)  # [wall | cpu, impl, step]
    gc.collect()
    gc.disable()  # no collector pauses inside a timed step (re-enabled below)
    for step in range(warmup + steps):
        x = models.batch(name, rank, step)
        order = (0, 1) if step % 2 == 0 else (1, 0)
        for i in order:
            impl = IMPLS[i]
            start, start_cpu = time.perf_counter(), time.thread_time()
            optimizers[impl].zero_grad()
            models.loss_fn(ddps[impl](x)).backward()
            optimizers[impl].step()
            wall, cpu = time.perf_counter() - start, time.thread_time() - start_cpu
            if step >= warmup:
                times[0, i, step - warmup], times[1, i, step - warmup] = wall, cpu
    gc.enable()
    dist.all_reduce(times, op=dist.ReduceOp.MAX)  # a step lasts as long as its slowest rank
    result = {"params": len(ddps["minddp"].params), "buckets": len(compute_bucket_assignment(ddps["minddp"].params, ddps["minddp"].bucket_size_limits))}
    for kind, t in (("wall", times[0]), ("cpu", times[1])):
        ratios = (t[0] / t[1]).tolist()
        result[kind] = {"minddp_ms": statistics.median(t[0].tolist()) * 1e3,
                        "torch_ms": statistics.median(t[1].tolist()) * 1e3,
                        "ratio": statistics.median(ratios),
                        "q1q3": statistics.quantiles(ratios, n=4)[::2] if len(ratios) > 1 else [ratios[0]] * 2}
    del ddps, optimizers, modules
    gc.collect()
    return result


def main() -> None:
    args = parse_args()
    env = init_process_group("gloo")
    start = time.perf_counter()
    try:
        if env.rank == 0:
            print(f"minddp vs torch DDP: {env.world_size} ranks, gloo, torch {torch.__version__}, "
                  f"{torch.get_num_threads()} thread(s) per rank, default bucket sizes (1 MiB first, then 25 MiB)\n"
                  f"one step of each in turn; {args.warmup} warm-up + {args.steps} timed steps of each per model; "
                  "a step lasts as long as its slowest rank\n\n"
                  f"{'':52s}  {'wall-clock ms/step':^33s}  {'training-thread CPU ms':^22s}\n"
                  f"{'model':44s} {'tensors'}  {'minddp':>7s} {'torch':>7s} {'ratio':>6s} {'(IQR)':^11s}"
                  f"  {'minddp':>7s} {'torch':>7s} {'ratio':>6s}", flush=True)
        ratios = {}
        for name in args.models:
            r = bench_model(name, env.rank, args.steps, args.warmup)
            ratios[name] = r["wall"]["ratio"]
            if env.rank == 0:
                w, c = r["wall"], r["cpu"]
                flag = "" if w["ratio"] <= GOAL else f"  > {GOAL}"
                print(f"{name:11s} {DESCRIPTIONS.get(name, ''):32s} {r['params']:7d}  {w['minddp_ms']:7.2f} "
                      f"{w['torch_ms']:7.2f} {w['ratio']:6.3f} ({w['q1q3'][0]:.2f}-{w['q1q3'][1]:.2f})  "
                      f"{c['minddp_ms']:7.2f} {c['torch_ms']:7.2f} {c['ratio']:6.3f}{flag}", flush=True)
        if env.rank == 0:
            worst = max(ratios, key=ratios.get)
            slow = [name for name, ratio in ratios.items() if ratio > GOAL]
            verdict = "met on every model" if not slow else f"missed on {', '.join(slow)}"
            print(f"\nms: medians over the timed steps; ratio: median over steps of minddp/torch (IQR: its quartiles)\n"
                  f"RESULT wall-clock minddp/torch: worst {ratios[worst]:.3f} ({worst}); goal <= {GOAL} {verdict}"
                  f"  [{time.perf_counter() - start:.1f} s]", flush=True)
    finally:
        gc.collect()
        destroy_process_group()


if __name__ == "__main__":
    main()
    sys.stdout.flush()
    os._exit(0)  # skip interpreter teardown, where gloo sometimes aborts after the work is done
