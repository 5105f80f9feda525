"""minddp and torch's DistributedDataParallel train the same model side by side (``make demo``).

    python -m minddp.launch --nproc-per-node 2 demo.py       # from the folder holding minddp/
    torchrun --standalone --nproc_per_node=2 demo.py          # the same, with torchrun

Two identical copies of ``models.build("mlp")`` (6 x Linear(512, 512)) see the same data; one is wrapped
in minddp's DDP, the other in torch's, both with ``bucket_cap_mb=1``. Rank 0 prints:

1. per SGD step, whether the two copies' parameters are equal bit for bit (on every rank);
2. the buckets each implementation all-reduces (minddp: the assignment its wrapper gave the Reducer; torch: a recording comm hook);
3. the collectives each launches during construction, forward and backward (torch's flight recorder);
4. the median step time of each (fresh models, no comm hook, steps interleaved);
5. the α-β timeline model (``minddp.timeline``) of ResNet-50 on 16 ranks, without and with overlap.
"""

from __future__ import annotations

import os
import sys

# The flight recorder only records if its buffer size is set before the process group is created.
os.environ.setdefault("TORCH_FR_BUFFER_SIZE", "20000")

import gc  # noqa: E402
import pickle  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable  # noqa: E402

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

from minddp import models  # noqa: E402
from minddp.bucketing import compute_bucket_assignment  # noqa: E402
from minddp.ddp import DistributedDataParallel as MiniDDP  # noqa: E402
from minddp.process_group import destroy_process_group, init_process_group  # noqa: E402

MODEL = "mlp"
STEPS = 5
LR = 0.05
BUCKET_CAP_MB = 1
TIMING_WARMUP, TIMING_STEPS = 3, 30
IMPLS = ("minddp", "torch")
DTYPE_BYTES = {"Float": 4, "Double": 8, "Half": 2, "BFloat16": 2, "Long": 8, "Int": 4, "Short": 2,
               "Char": 1, "Byte": 1, "Bool": 1}


def out(*lines: str) -> None:
    """Only rank 0 talks."""
    if dist.get_rank() == 0:
        print(*lines, sep="\n", flush=True)


# -- collectives, seen by torch's flight recorder ---------------------------------------------------------

def _fr_entries() -> list[dict]:
    return pickle.loads(torch._C._distributed_c10d._dump_fr_trace())["entries"]


def collective_mark() -> int:
    return max((e["collective_seq_id"] for e in _fr_entries()), default=0)


def collectives_since(mark: int) -> list[dict]:
    return [e for e in _fr_entries() if e["collective_seq_id"] > mark and not e.get("is_p2p")]


def describe(entries: list[dict]) -> str:
    """``broadcast 288 B, all_reduce 6 x 1.00 MiB``: each collective and its input bytes, repeats folded."""
    if not entries:
        return "-"
    runs: list[list] = []  # [op, bytes, count]
    for e in entries:
        nbytes = 0
        for shape, dtype in zip(e["input_sizes"], e["input_dtypes"], strict=True):
            numel = 1
            for d in shape:
                numel *= d
            nbytes += numel * DTYPE_BYTES.get(dtype, 4)
        op = e["profiling_name"].split(":")[-1]
        if runs and runs[-1][:2] == [op, nbytes]:
            runs[-1][2] += 1
        else:
            runs.append([op, nbytes, 1])
    return ", ".join(f"{op} {f'{n} x ' if n > 1 else ''}{human_bytes(b)}" for op, b, n in runs)


def human_bytes(n: int) -> str:
    if n >= 2**20:
        return f"{n / 2**20:.2f} MiB"
    if n >= 2**10:
        return f"{n / 2**10:.1f} KiB"
    return f"{n} B"


# -- the side-by-side run ------------------------------------------------------------------------------------

def wrap(impl: str, module: torch.nn.Module) -> torch.nn.Module:
    if impl == "minddp":
        return MiniDDP(module, bucket_cap_mb=BUCKET_CAP_MB)
    return torch.nn.parallel.DistributedDataParallel(module, bucket_cap_mb=BUCKET_CAP_MB)


def recording_hook(log: list, names: dict[int, str]) -> Callable:
    """A torch comm hook that notes each bucket, then does what torch does without a hook: average.

    Multiplying by 1/world_size (not dividing) is bit for bit what torch's built-in path does.
    """
    scale = 1.0 / dist.get_world_size()

    def record(state, bucket):  # no annotations: torch insists they be exactly dist.GradBucket
        buffer = bucket.buffer()
        log.append((bucket.index(), [names[id(p)] for p in bucket.parameters()],
                    buffer.numel() * buffer.element_size()))
        work = dist.all_reduce(buffer.mul_(scale), async_op=True)
        return work.get_future().then(lambda fut: fut.value()[0])

    return record


def side_by_side(rank: int) -> None:
    modules = {impl: models.build(MODEL, seed=0) for impl in IMPLS}
    names = {impl: {id(p): n for n, p in m.named_parameters()} for impl, m in modules.items()}
    phases: dict[str, dict[str, list]] = {impl: {"construction": [], "forward": [], "backward": []}
                                          for impl in IMPLS}
    ddps = {}
    for impl in IMPLS:
        mark = collective_mark()
        ddps[impl] = wrap(impl, modules[impl])
        phases[impl]["construction"] = collectives_since(mark)
    torch_buckets: list = []
    ddps["torch"].register_comm_hook(None, recording_hook(torch_buckets, names["torch"]))
    optimizers = {impl: torch.optim.SGD(m.parameters(), lr=LR) for impl, m in modules.items()}

    equal_per_step, max_diff_per_step, losses, torch_buckets_per_step = [], [], [], []
    for step in range(STEPS):
        x = models.batch(MODEL, rank, step)
        loss = {}
        for impl in IMPLS:
            optimizers[impl].zero_grad()
            mark = collective_mark()
            output = ddps[impl](x)
            phases[impl]["forward"].append(collectives_since(mark))
            mark = collective_mark()
            loss[impl] = models.loss_fn(output)
            loss[impl].backward()
            phases[impl]["backward"].append(collectives_since(mark))
            optimizers[impl].step()
        pairs = list(zip(modules["minddp"].parameters(), modules["torch"].parameters(), strict=True))
        equal_per_step.append(torch.equal(loss["minddp"], loss["torch"]) and all(torch.equal(a, b) for a, b in pairs))
        max_diff_per_step.append(max((a - b).abs().max().item() for a, b in pairs))
        losses.append(loss["minddp"].item())
        torch_buckets_per_step.append(list(torch_buckets))
        torch_buckets.clear()

    # Two collectives after the run (outside every counted phase): what did the worst rank see?
    flags = torch.tensor(equal_per_step, dtype=torch.int32)
    dist.all_reduce(flags, op=dist.ReduceOp.MIN)
    diffs = torch.tensor(max_diff_per_step, dtype=torch.float64)
    dist.all_reduce(diffs, op=dist.ReduceOp.MAX)
    out(f"1. Training {STEPS} SGD steps (lr {LR}); each rank feeds its own batch (models.batch) to both copies",
        "   step  loss (rank 0)  parameters and loss of the two copies, on every rank")
    for step, (loss_value, ok, diff) in enumerate(zip(losses, flags.tolist(), diffs.tolist(), strict=True)):
        out(f"   {step + 1:4d}  {loss_value:.6f}       bitwise equal: "
            + ("yes" if ok else f"no (largest parameter difference {diff:.1e})"))
    if not all(flags.tolist()) and dist.get_world_size() > 2:
        out("   With more than 2 ranks gloo's summation order depends on the bucket layout (torch uses one",
            "   bucket in iteration 1), so the two agree to about 1 ulp, not bit for bit; 2 ranks are exact.")

    print_buckets(ddps["minddp"], names["minddp"], torch_buckets_per_step)
    print_collectives(phases)


def print_buckets(ddp: MiniDDP, names: dict[int, str], torch_buckets_per_step: list[list]) -> None:
    buckets = compute_bucket_assignment(ddp.params, ddp.bucket_size_limits)  # what the wrapper gave its Reducer
    rows = {"minddp": [(b, [names[id(ddp.params[i])] for i in indices],
                        sum(ddp.params[i].numel() * ddp.params[i].element_size() for i in indices))
                       for b, indices in enumerate(buckets)],
            "torch": torch_buckets_per_step[1]}
    first = torch_buckets_per_step[0]
    stable = all(step == rows["torch"] for step in torch_buckets_per_step[1:])
    name_width = max(len(", ".join(params)) for r in rows.values() for _, params, _ in r)
    cell = {impl: [f"{', '.join(params):{name_width}s} {nbytes:>11,} B" for _, params, nbytes in r]
            for impl, r in rows.items()}
    width = max(len(c) for c in cell["minddp"] + ["minddp (its buckets)"]) + 3
    out("", f"2. Buckets (bucket_cap_mb={BUCKET_CAP_MB}; a Linear(512, 512) weight is exactly 1 MiB, so each "
            "bucket is one layer)",
        f"   {'#':>2s}  {'minddp (its buckets)':{width}s}torch DDP (recording comm hook, iteration 2 on)")
    for index in range(max(len(cell["minddp"]), len(cell["torch"]))):
        mine, theirs = (cell[impl][index] if index < len(cell[impl]) else "-" for impl in IMPLS)
        out(f"   {index:2d}  {mine:{width}s}{theirs}")
    verdict = "identical" if rows["minddp"] == rows["torch"] else "DIFFERENT"
    out(f"   minddp and torch: {verdict} from iteration 2 on"
        f"{'' if stable else ' (but torch CHANGED its buckets after iteration 2)'}. In iteration 1 torch used "
        f"{len(first)} bucket{'s' if len(first) > 1 else ''}",
        f"   ({sum(len(p) for _, p, _ in first)} parameters, {sum(n for _, _, n in first):,} B): torch starts "
        "with one bucket, records the order gradients",
        "   become ready, and rebuilds its buckets in that order (when: Bonus B asks). minddp buckets in",
        "   reverse registration order from the start (with rebuild_buckets=True, a bonus, it rebuilds like torch).")


def is_rebuild_broadcast(entry: dict) -> bool:
    """One of torch's bucket-rebuild broadcasts, among a forward's collectives: integer tensors (the model here has
    no buffers, so a forward sends nothing else)."""
    return bool(entry["input_dtypes"]) and all(d in ("Int", "Long") for d in entry["input_dtypes"])


def print_collectives(phases: dict[str, dict[str, list]]) -> None:
    # Left out: when torch rebuilds its buckets is Bonus B's question (make probe answers it).
    forwards = phases["torch"]["forward"]
    rebuilt = any(is_rebuild_broadcast(e) for entries in forwards for e in entries)
    phases = {**phases, "torch": {**phases["torch"], "forward": [
        [e for e in entries if not is_rebuild_broadcast(e)] for entries in forwards]}}
    cells = {"construction": [describe(phases[impl]["construction"]) for impl in IMPLS]}
    previous, first = None, 0
    for step in range(STEPS + 1):  # consecutive steps with the same collectives share one row
        key = None if step == STEPS else tuple(describe(phases[impl][phase][step])
                                              for phase in ("forward", "backward") for impl in IMPLS)
        if key != previous and previous is not None:
            steps = f"step {first + 1}" if step == first + 1 else f"steps {first + 1}-{step}"
            cells[f"{steps} forward"], cells[f"{steps} backward"] = previous[:2], previous[2:]
        if key != previous:
            previous, first = key, step
    width = max(len(c[0]) for c in cells.values()) + 2
    label_width = max(len(label) for label in cells) + 2
    out("", "3. Collectives per phase (torch's flight recorder on rank 0; bytes are the inputs' sizes)",
        f"   {'':{label_width}s}{'minddp':{width}s}torch DDP")
    for label, (mine, theirs) in cells.items():
        out(f"   {label:{label_width}s}{mine:{width}s}{theirs}")
    out("   torch's construction first checks that every rank has the same parameter shapes (all_gather,",
        "   broadcast); what else it sends, and when, is Bonus B's to find out.")
    if rebuilt:
        out("   Left out above: the broadcasts of torch's bucket rebuild, in one of the forwards (which one is Bonus",
            "   B's to find out: make probe).")


# -- step times ------------------------------------------------------------------------------------------------

def step_times(rank: int) -> None:
    """Fresh models, no comm hook: alternate one step of each, so machine noise hits both alike."""
    modules = {impl: models.build(MODEL, seed=0) for impl in IMPLS}
    ddps = {impl: wrap(impl, modules[impl]) for impl in IMPLS}
    optimizers = {impl: torch.optim.SGD(m.parameters(), lr=LR) for impl, m in modules.items()}
    times: dict[str, list[float]] = {impl: [] for impl in IMPLS}
    for step in range(TIMING_WARMUP + TIMING_STEPS):
        x = models.batch(MODEL, rank, step)
        order = IMPLS if step % 2 == 0 else IMPLS[::-1]
        for impl in order:
            start = time.perf_counter()
            optimizers[impl].zero_grad()
            models.loss_fn(ddps[impl](x)).backward()
            optimizers[impl].step()
            if step >= TIMING_WARMUP:
                times[impl].append(time.perf_counter() - start)
    ratios = [a / b for a, b in zip(times["minddp"], times["torch"], strict=True)]
    median = {impl: statistics.median(t) * 1e3 for impl, t in times.items()}
    out("", f"4. Step time on rank 0: fresh models, no comm hook, {TIMING_WARMUP} warm-up + {TIMING_STEPS} steps, "
            "one step of each in turn",
        f"   minddp {median['minddp']:.2f} ms   torch DDP {median['torch']:.2f} ms   "
        f"minddp/torch {statistics.median(ratios):.2f}x (median of per-step ratios)",
        "   (a quick look, noisy on a busy machine)")


# -- the α-β timeline model --------------------------------------------------------------------------------------

def timeline_section() -> str:
    """ResNet-50 on 16 ranks (α 10 µs, β 10 GB/s, 25 MB buckets) without and with overlap, as ASCII."""
    from minddp import timeline as tl

    resnet = tl.resnet50_model()
    lines = ["5. The α-β timeline model (minddp.timeline): ResNet-50, 16 ranks, α 10 µs, β 10 GB/s, "
             "25 MB buckets;", "   backward and bucket all-reduces (digits = bucket index), one step:"]
    try:
        for overlap in (False, True):
            step = resnet.step(16, [25 * tl.MB], alpha=10e-6, beta=10e9, overlap=overlap)
            lines += ["   " + line for line in tl.ascii_timeline(step).splitlines()]
    except NotImplementedError as stub:  # Parts 1-4 are enough for the rest of the demo
        lines.append(f"   (not yet: {stub}; this section appears once Part 5's model is written)")
    return "\n".join(lines)


def main() -> None:
    start = time.perf_counter()
    env = init_process_group("gloo")
    try:
        out(f"minddp vs torch.nn.parallel.DistributedDataParallel: {MODEL} (6 x Linear(512, 512)), "
            f"{env.world_size} ranks, gloo", "")
        side_by_side(env.rank)
        step_times(env.rank)
        if env.rank == 0:
            out("", timeline_section())
        dist.barrier()
        out("", f"done in {time.perf_counter() - start:.1f} s")
    finally:
        gc.collect()  # drop DDP objects (and their hooks/futures) before the group goes away
        destroy_process_group()


if __name__ == "__main__":
    main()
    sys.stdout.flush()
    os._exit(0)  # skip interpreter teardown, where gloo sometimes aborts after the work is done
