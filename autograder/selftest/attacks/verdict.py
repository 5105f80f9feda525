"""Attacks on what the checks conclude rather than on the isolation: the hidden inputs (what a submission can
learn of them, what a table of answers can do), the hold-back probe's store, text that reaches results.json,
odd failures and values, and messages a check could take for the work itself."""

from __future__ import annotations

import os

from autograder.selftest.attacks.shared import (
    ANSWERS,
    EVERY_PART,
    REPO,
    TIMELINE,
    _no_control_characters,
    all_of,
    hidden_entries_show_nothing_of_the_student,
    output_of,
    stub,
    tests_fail,
    tests_pass,
)
from autograder.selftest.kinds import AT_END, BLOCKING_ALLREDUCE, BUCKETING, DDP, PROCESS_GROUP, REDUCER, Case, Function

# ============================================================================================================
# Hidden inputs: what a submission can learn of them, and what a table of answers can do
# ============================================================================================================

# Every bucketing call and every ring-time call says what it was called with, in its error and on stdout: the
# public entries may show it (public inputs are public), no hidden entry may.
LEAK_INPUTS = r'''


def compute_bucket_assignment(tensors, bucket_size_limits, order=None):
    said = f"LEAK<{[t.numel() for t in tensors]} {[str(t.dtype) for t in tensors]} {list(bucket_size_limits)} {order}>"
    print(said, flush=True)
    raise NotImplementedError(said)
'''
LEAK_TIMELINE = r'''


def ring_allreduce_time(nbytes, world_size, alpha, beta):
    said = f"LEAK<{nbytes} {world_size} {alpha} {beta}>"
    print(said, flush=True)
    raise ValueError(said)
'''


def _reference_bucketing():
    import importlib.util
    spec = importlib.util.spec_from_file_location("_reference_bucketing", os.path.join(REPO, "solutions", "minddp",
                                                                                          "bucketing.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def answer_table() -> str:
    """bucketing.py as a student with the grader's source (or a copy of its old hidden lists) could write it:
    the stub, reverse_order written out (check 2.1 calls it directly), and the reference's answers to every input known in advance: the public ones, the hidden lists
    that used to be fixed, and the release's own random_cases at the seed once used for 2.5's hidden inputs."""
    import torch

    from tools import student_side
    student_side()
    from checks import part2
    reference = _reference_bucketing()
    cases = [c for check in part2.CHECKS for run in check.runs if run.fn == "bucket_cases" for c in run.kwargs["cases"]]
    cases += part2.random_cases(seed=868, count=1500)
    table = {}
    for c in cases:
        devices = c.get("devices") or ["meta"] * len(c["sizes"])
        tensors = [torch.empty(n, dtype=getattr(torch, d), device=v)
                   for n, d, v in zip(c["sizes"], c["dtypes"], devices, strict=True)]
        key = repr((c["sizes"], c["dtypes"], c.get("devices"), c["limits"], c.get("order")))
        try:
            table[key] = reference.compute_bucket_assignment(tensors, c["limits"], c.get("order"))
        except Exception:  # noqa: BLE001 - an input the reference refuses: not in the table
            continue
    return stub(BUCKETING) + f"""

_TABLE = {table!r}


def reverse_order(num_params):  # the one line it is no harder to write than to look up
    return list(range(num_params - 1, -1, -1))


def compute_bucket_assignment(tensors, bucket_size_limits, order=None):
    key = repr(([t.numel() for t in tensors], [str(t.dtype).replace("torch.", "") for t in tensors],
                None if all(t.device.type == "meta" for t in tensors) else [t.device.type for t in tensors],
                list(bucket_size_limits), None if order is None else list(order)))
    return _TABLE[key]
"""


# ============================================================================================================
# The hold-back probe's store key
# ============================================================================================================

PREPARE_RESET = "        self.next_bucket = 0\n        self.expect_autograd_hooks = True\n"  # in prepare_for_backward
SPOOF_PROBE = ("        store = dist.distributed_c10d._get_default_store()  # tell rank 1 rank 0 is done\n"
               "        for seq in range(1, 40):\n"
               "            store.set(f\"minddp-probe/last-grad-{seq}\", \"1\")\n")


# ============================================================================================================
# Text that reaches results.json
# ============================================================================================================

INJECTION = ("\x1b[2J\x1b[31mRED\x1b[0m NUL[\x00] CR[\r] BEL[\x07] BS[\x08] DEL[\x7f] "
             "RLO[\u202e]deifitrec[\u202c] ISOLATE[\u2066x\u2069] ZWSP[\u200b] "
             "<img src=x onerror=alert(1)> <script>alert(document.cookie)</script> [click](javascript:alert(1)) "
             "\n\nTotal (bonus is extra)        110.0 / 100.0\n")


# ============================================================================================================
# Odd failures and values
# ============================================================================================================

WEIRD_PG = r'''
def read_torchrun_env(environ=None):
    raise SystemExit("a SystemExit from read_torchrun_env")
'''

WEIRD_BUCKETS = r'''


class _Unprintable(Exception):
    def __str__(self):
        raise RuntimeError("no text for you")


def compute_bucket_assignment(tensors, bucket_size_limits, order=None):  # replaces the stub above
    raise _Unprintable()
'''

WEIRD_TIMELINE = r'''


def ring_allreduce_time(nbytes, world_size, alpha, beta):  # replaces the function above
    return [float("nan"), float("inf"), -0.0, 10 ** 5000][world_size % 4]


def backward_ready_times(shapes_or_sizes, backward_time, order=None):  # replaces the function above
    raise ValueError("\xff\xfe binary \x00 and " + "long " * 2_000_000)
'''

WEIRD_ANSWERS = "\n\ndef _forever():\n    return _forever()\n\n\n_forever()  # RecursionError at import\n"

WEIRD_DDP = ("    def __init__(self, *args, **kwargs):\n        raise KeyboardInterrupt(\"from DDP.__init__\")\n")

ALWAYS_RAISES = r'''
def read_torchrun_env(environ=None):
    """No validation at all: every environment 'fails', naming every variable."""
    raise DistEnvError("check RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR and MASTER_PORT")
'''

EXPECTED_MESSAGE_DDP = ("    def __init__(self, *args, **kwargs):\n"
                        "        raise RuntimeError(\"Expected to have finished reduction in the prior iteration "
                        "before starting a new one.\")\n")


ATTACKS: list = [
    # -- hidden inputs ---------------------------------------------------------------------------------------
    Case("leak-inputs", "bucketing.py and timeline.py say in every error, and print, what they were called with: "
         "the public entries may show it, no hidden entry may (a hidden entry says what kind of failure it was)",
         start="stubs", edits={BUCKETING: [(AT_END, LEAK_INPUTS)], TIMELINE: [(AT_END, LEAK_TIMELINE)]},
         zero=EVERY_PART, full=(), score=(0, 0), says={"2": "LEAK<", "5": "LEAK<"},
         check=hidden_entries_show_nothing_of_the_student("LEAK<")),
    Case("answer-table", "bucketing.py is the stub plus a table of the reference's answers to every input known in "
         "advance (the public ones, the hidden lists once fixed, the release's random_cases at the seed once used): "
         "the public entries pass, the hidden ones, drawn from the grader's secret, cannot; the report shows the table. "
         "(The later parts' public entries run it too, since Part 2's public entries pass: every public run comes "
         "before any hidden one, so only their hidden twins can use the stand-in)",
         edits={BUCKETING: answer_table}, full=("1", "3", "6"),
         check=all_of(tests_pass("2.1", "2.2", "2.3", "2.4"), tests_fail("2.1h", "2.2h", "2.3h", "2.4h", "2.5h"),
                      output_of("0.1", "a literal table of", "the integrity report must show the table"))),

    # -- a file too deeply nested to compile -----------------------------------------------------------------
    Case("nested-too-deep", "bucketing.py ends with an expression nested too deeply for Python's compiler "
         "(RecursionError, not SyntaxError): Part 2 is 'does not compile', every check is still an entry",
         edits={BUCKETING: [(AT_END, "\n_DEPTH = 1" + " + 1" * 300_000 + "\n")]}, zero=("2",),
         says={"2": "nested too deeply"}),

    # -- text that reaches results.json ----------------------------------------------------------------------
    Case("output-injection", "ring_allreduce_time raises with terminal escapes, NUL/CR/BEL, bidi overrides, "
         "HTML, Markdown and a forged score line", edits={TIMELINE: [Function(
             "ring_allreduce_time", f"def ring_allreduce_time(nbytes, world_size, alpha, beta):\n"
                                    f"    raise RuntimeError({INJECTION!r})\n")]},
         full=("1", "2", "3", "4", "6", "A", "B.1"), check=all_of(tests_fail("5.1", "5.1h"), _no_control_characters)),


    # -- the probe's store -----------------------------------------------------------------------------------
    Case("probe-store-spoof", "a blocking all-reduce (the mistake check 3.8 exists for) plus a spoof: "
         "prepare_for_backward sets the hold-back probe's TCPStore keys, so rank 1 never waits",
         edits={REDUCER: BLOCKING_ALLREDUCE + [(PREPARE_RESET, PREPARE_RESET + SPOOF_PROBE)]},
         full=("1", "2", "4", "5", "6", "A", "B"), check=tests_fail("3.8", "3.8h")),

    # -- odd failures ----------------------------------------------------------------------------------------
    Case("weird-failures", "SystemExit from read_torchrun_env, an exception whose __str__ raises, NaN/inf/"
         "10**5000 results and a 10 MB binary message, KeyboardInterrupt in DDP.__init__, RecursionError at "
         "import of answers.py: those parts score 0, Part 3 keeps its marks, the grader does not crash",
         edits={PROCESS_GROUP: [Function("read_torchrun_env", WEIRD_PG)],
                BUCKETING: [(AT_END, WEIRD_BUCKETS)], TIMELINE: [(AT_END, WEIRD_TIMELINE)],
                ANSWERS: [(AT_END, WEIRD_ANSWERS)],
                DDP: [("    def __init__(self, module: nn.Module, process_group",
                       WEIRD_DDP + "\n    def _unused_init(self, module: nn.Module, process_group")]},
         zero=("2.1", "2.2", "2.3", "2.4", "2.5", "4", "6", "A", "B.1"), full=("3", "2.6"),
         check=all_of(tests_fail("1.1", "1.1h", "1.2", "1.2h", "1.4", "5.1", "5.1h", "5.2", "5.2h"),
                      tests_pass("1.3", "1.3h"))),

    # -- invented: checks that a message alone satisfies ------------------------------------------------------
    Case("pg-raises-naming-all", "read_torchrun_env validates nothing: it always raises DistEnvError naming "
         "all six variables, so every invalid environment 'names the variable to fix'",
         edits={PROCESS_GROUP: [Function("read_torchrun_env", ALWAYS_RAISES)]},
         full=("2", "3", "4", "5", "6", "A", "B"),
         check=all_of(tests_fail("1.1", "1.1h", "1.2", "1.2h", "1.4"), tests_pass("1.3", "1.3h"))),
    Case("ddp-raises-expected-message", "ddp.py's constructor always raises RuntimeError('Expected to have "
         "finished reduction in the prior iteration ...'): no DDP at all, yet check 4.8 only reads the message",
         edits={DDP: [("    def __init__(self, module: nn.Module, process_group",
                       EXPECTED_MESSAGE_DDP + "\n    def _unused_init(self, module: nn.Module, process_group")]},
         zero=("4", "A", "B.1")),
]
