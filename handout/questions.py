"""The data of the written questions (handout §6), in ONE place.

``figures.py`` writes these numbers into ``generated/questions.tex`` (the handout's text only uses those
macros), and ``tests/test_handout.py`` checks that ``solutions/answers.py`` equals ``reference_answers()``,
which computes every answer with the reference code (``solutions/minddp``) from the same data. So a
question's text, its data and its answer cannot drift apart.

Staff only: never released to students.
"""

from __future__ import annotations

import math
from typing import Any

from tools import student_side

student_side()  # the data the checks read too (Q1, Q2), and what the reference's code gives for them
from checks.written import (  # noqa: E402
    Q1_GPUS_PER_NODE,
    Q1_LOCAL_RANK,
    Q1_NODE,
    Q1_NODES,
    Q1_RANK,
    Q2_LIMITS_MIB,
    Q2_PARAMS,
    Q11_EFFICIENCY,
    q1_from_code,
    q2_from_code,
    q6_from_code,
    q11_from_code,
)

MiB = 1024 * 1024
MB = 10**6

# Q3 -- overlap timeline with given buckets and ready times (ms); all-reduce = a + b per MB.
Q3_SIZES_MB = {"a": 4, "b": 6, "c": 8, "d": 3, "e": 2}
Q3_READY_MS = {"c": 2, "a": 3, "b": 5, "e": 6, "d": 8}
Q3_BUCKETS = [["a", "b"], ["c"], ["d", "e"]]
Q3_LATENCY_MS, Q3_MS_PER_MB = 0.3, 0.2

# Q4 -- the alpha-beta argument against cap 0: equal tensors, ring all-reduce.
Q4_TENSORS = 320
Q4_MODEL_MB = 480  # decimal MB (1e6 bytes)
Q4_WORLD_SIZE = 64
Q4_ALPHA_US = 5
Q4_BETA_GB_S = 20  # GB/s, decimal
Q4_BACKWARD_MS = 120

# Q5 -- skipping synchronisation.
Q5_SYNC_MS, Q5_NOSYNC_MS, Q5_EVERY = 180, 120, 6

# Q7 -- collectives per rank with gradient accumulation and BatchNorm buffers.
Q7_STEPS, Q7_MICRO_BATCHES, Q7_BUCKETS = 10, 4, 3

# Q8-Q10 -- each student's own machine: no data here. The measurement (``make measure``, solutions/measure.py)
# is the one number of answers.py that is not computed: reference_answers() takes it from solutions/answers.py
# and computes Q9 and Q10 from it with the grader's own fit and model (checks/part6.py), so answers.py's own
# computation (torch's lstsq, minddp.timeline) is checked against them.


def count_collectives_q7(wrap_forward: bool) -> tuple[int, int]:
    """Run the reference DDP on a 1-rank gloo group and count (all-reduces, broadcasts) per rank in the
    Q7 loop: ``Q7_STEPS`` steps of ``Q7_MICRO_BATCHES`` micro-batches, all but the last under ``no_sync``
    (around forward and backward when ``wrap_forward``, else around backward only). The model has
    ``Q7_BUCKETS`` buckets and a BatchNorm layer, whose buffers form two dtype groups (float32 running
    statistics, int64 ``num_batches_tracked``)."""
    import contextlib
    import os
    import tempfile

    import torch
    import torch.distributed as dist

    from minddp.ddp import DistributedDataParallel

    counts = {"all_reduce": 0, "broadcast": 0}
    with tempfile.TemporaryDirectory() as tmp:
        dist.init_process_group("gloo", init_method=f"file://{os.path.join(tmp, 'store')}", rank=0, world_size=1)
        try:
            torch.manual_seed(0)
            model = torch.nn.Sequential(torch.nn.Linear(16, 16), torch.nn.BatchNorm1d(16), torch.nn.Linear(16, 16),
                                        torch.nn.Linear(16, 16))
            # Linear(16, 16): 272 floats = 1088 bytes; BatchNorm1d(16): 32 floats. A 1000-byte cap seals
            # one bucket per Linear (the BatchNorm parameters join the bucket of the Linear before them).
            ddp = DistributedDataParallel(model, bucket_cap_mb=1000 / MiB)
            assert len(ddp.reducer.buckets) == Q7_BUCKETS
            originals = {name: getattr(dist, name) for name in counts}

            def counting(name):
                def call(*args, **kwargs):
                    counts[name] += 1
                    return originals[name](*args, **kwargs)
                return call

            for name in counts:
                setattr(dist, name, counting(name))
            try:
                for _ in range(Q7_STEPS):
                    for micro in range(Q7_MICRO_BATCHES):
                        skip = micro < Q7_MICRO_BATCHES - 1
                        outer = ddp.no_sync() if skip and wrap_forward else contextlib.nullcontext()
                        inner = ddp.no_sync() if skip and not wrap_forward else contextlib.nullcontext()
                        with outer:
                            loss = ddp(torch.randn(8, 16)).square().mean()
                            with inner:
                                loss.backward()
            finally:
                for name, original in originals.items():
                    setattr(dist, name, original)
        finally:
            dist.destroy_process_group()
    return counts["all_reduce"], counts["broadcast"]


def reference_answers() -> dict[str, Any]:
    """Every answer, computed with the reference code from the data above (question name -> value)."""
    import torch

    from minddp.timeline import ring_allreduce_time, simulate_step, skip_sync_step_time

    answers: dict[str, Any] = {"q1_rank_layout": q1_from_code(), "q2_buckets": q2_from_code()}

    names = sorted(Q3_SIZES_MB)
    ready = [float(Q3_READY_MS[n]) for n in names]
    buckets3 = [[names.index(n) for n in bucket] for bucket in Q3_BUCKETS]
    comm = [Q3_LATENCY_MS + Q3_MS_PER_MB * sum(Q3_SIZES_MB[n] for n in bucket) for bucket in Q3_BUCKETS]
    overlap = simulate_step(ready, buckets3, comm)
    answers["q3_overlap_ms"] = (overlap.comm_start[1], overlap.step_time,
                                simulate_step(ready, buckets3, comm, overlap=False).step_time)

    alpha, beta = Q4_ALPHA_US * 1e-6, Q4_BETA_GB_S * 1e9
    whole = ring_allreduce_time(Q4_MODEL_MB * MB, Q4_WORLD_SIZE, alpha, beta) * 1e3
    per_tensor = Q4_TENSORS * ring_allreduce_time(Q4_MODEL_MB * MB / Q4_TENSORS, Q4_WORLD_SIZE, alpha, beta) * 1e3
    answers["q4_cap_zero_ms"] = (whole, per_tensor, Q4_BACKWARD_MS + whole)

    average = skip_sync_step_time(Q5_SYNC_MS, Q5_NOSYNC_MS, Q5_EVERY)
    answers["q5_skip_sync"] = (average, Q5_SYNC_MS / average - 1, 1 / Q5_EVERY)

    answers["q6_bucket_size"] = q6_from_code()  # the reference's experiments (handout §5.3)
    answers["q11_order_and_scale"] = q11_from_code()

    answers["q7_collective_counts"] = (*count_collectives_q7(True), *count_collectives_q7(False))

    # Q8 is the one answer that is measured, not computed (``make measure`` on the staff machine): taken as
    # it is; Q9 and Q10 computed from it by the grader's own fit and closed form.
    import answers as solution

    from checks import part6
    measured = solution.q8_measurements()
    answers["q8_measurements"] = measured
    alpha, beta = part6.fit_alpha_beta(measured["allreduce_s"], measured["world_size"])
    answers["q9_alpha_beta"] = (alpha, beta)
    answers["q10_predictions"] = part6.predictions(measured, alpha, beta)
    del torch
    return answers


def measure_macros() -> dict[str, Any]:
    """What Q8-Q10 quote: make measure's sizes and repetitions, the checks' tolerances and bounds."""
    import measure

    from checks import part6

    def size(nbytes: int) -> str:
        return f"{nbytes // MiB}\\,MiB" if nbytes >= MiB else f"{nbytes // 1024}\\,KiB"

    def power(x: float) -> str:
        return f"10^{{{round(math.log10(x))}}}"

    return {
        "QeightSizes": len(measure.SIZES), "QeightSmallest": size(min(measure.SIZES)),
        "QeightLargest": size(max(measure.SIZES)), "QeightRepeats": measure.REPEATS, "QeightWarmup": measure.WARMUP,
        "QeightSmallTensors": measure.SMALL_TENSORS, "QeightSmallBytes": measure.SMALL_TENSOR_BYTES,
        "QeightSmallRepeats": measure.SMALL_REPEATS, "QeightMinSizes": part6.MIN_SIZES,
        "QeightMinDecades": part6.MIN_DECADES,
        "QnineRtolPct": f"{part6.FIT_RTOL * 100:g}", "QnineAlphaLow": power(part6.ALPHA_RANGE_S[0]),
        "QnineAlphaHigh": power(part6.ALPHA_RANGE_S[1]), "QnineBetaLow": power(part6.BETA_RANGE_BYTES_PER_S[0]),
        "QnineBetaHigh": power(part6.BETA_RANGE_BYTES_PER_S[1]),
        "QtenK": part6.PREDICTION_WORLD_SIZE, "QtenCapMB": part6.PREDICTION_CAP_MB,
    }


def latex_macros() -> str:
    """``\\newcommand`` lines for every number the questions' text quotes."""
    def fmt(x: float) -> str:
        return f"{x:g}"

    q2_rows = " \\\\ ".join(f"\\texttt{{{n}}} & {fmt(m)} & \\texttt{{{d}}}" for n, m, d in Q2_PARAMS)
    q3_names = sorted(Q3_SIZES_MB)
    q3_rows = " \\\\ ".join(f"\\texttt{{{n}}} & {fmt(Q3_SIZES_MB[n])} & {fmt(Q3_READY_MS[n])}" for n in q3_names)
    q3_buckets = ", ".join(f"bucket {b} $=\\{{\\texttt{{{','.join(names)}}}\\}}$" for b, names in enumerate(Q3_BUCKETS))
    macros = {
        "QoneNodes": Q1_NODES, "QoneGpus": Q1_GPUS_PER_NODE, "QoneRank": Q1_RANK, "QoneNode": Q1_NODE,
        "QoneLocal": Q1_LOCAL_RANK,
        "QtwoFirstMiB": fmt(Q2_LIMITS_MIB[0]), "QtwoCapMiB": fmt(Q2_LIMITS_MIB[1]), "QtwoRows": q2_rows,
        "QtwoCount": len(Q2_PARAMS),
        "QthreeRows": q3_rows, "QthreeBuckets": q3_buckets, "QthreeLatencyMs": fmt(Q3_LATENCY_MS),
        "QthreeMsPerMB": fmt(Q3_MS_PER_MB),
        "QfourTensors": Q4_TENSORS, "QfourModelMB": Q4_MODEL_MB, "QfourK": Q4_WORLD_SIZE,
        "QfourAlphaUs": Q4_ALPHA_US, "QfourBetaGBs": Q4_BETA_GB_S, "QfourBackwardMs": Q4_BACKWARD_MS,
        "QfiveSyncMs": Q5_SYNC_MS, "QfiveNosyncMs": Q5_NOSYNC_MS, "QfiveEvery": Q5_EVERY,
        "QelevenEfficiency": f"{Q11_EFFICIENCY:g}",
        "QsevenSteps": Q7_STEPS, "QsevenMicro": Q7_MICRO_BATCHES, "QsevenBuckets": Q7_BUCKETS,
        **measure_macros(),
    }
    lines = ["% GENERATED by handout/figures.py from handout/questions.py; do not edit."]
    lines += [f"\\newcommand{{\\{name}}}{{{value}}}" for name, value in macros.items()]
    return "\n".join(lines) + "\n"
