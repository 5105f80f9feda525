"""The self-test's submissions: each one is the reference (or the stubs) plus one small, readable edit.

A case says what a student did (``edits``) and what the autograder must answer (the expectation):

    edits   {student file: [(old substring, new text), ...]}  each ``old`` must occur exactly once
            {student file: [Function("Class.method", new source), ...]}  a whole function replaced
            {student file: "whole new text"}                  the file is replaced
            {student file: a function returning that text}    ... made only when the case is graded
            {student file: None}                               the file is left out of the submission
    zero    parts ("1".."6", "A", "B" for the bonus) or checks ("B.1": with its hidden twin) every test of which
            must score 0
    full    parts or checks every test of which must pass; FULL_REST (the default) = every test not in ``zero``
    says    {part or "top": substring}: some test output of that part (or the top-level output) has it
    score   (low, high) total score; None = implied by ``zero`` and ``full`` (taken from the solutions' run)
    check   extra assertions ``check(results, isolated) -> [problem, ...]`` (isolated: the grader ran
            student code as an unprivileged user), for the cases whose expectation depends on isolation

Parts are read from each test's ``number`` ("3.8" -> "3", "A.2" -> "A"), so a part added later (Part 6,
the written answers) is covered by FULL_REST without touching this file.
"""

from __future__ import annotations

from dataclasses import replace

from autograder.selftest.attacks import (
    ATTACKS,  # attacks on the grader's isolation and its checks, in their own package
)
from autograder.selftest.kinds import (
    AT_END,
    BUCKETING,
    DDP,
    FINALIZE_BODY,
    HOOK_BODY,
    LAUNCH_LOOP,
    PG_IMPORTS,
    PROCESS_GROUP,
    REDUCER,
    REDUCER_IMPORTS,
    REDUCER_INIT_BODY,
    Case,
)

# -- hostile code, as a student would paste it --------------------------------------------------------------

# Find the grading process's command line (the worker's parent): it names --source and --results.
GRADER_ARGS = '''

def _grader_args():
    """The command-line flags of every ancestor process (the grader is one of them)."""
    import os
    flags, pid = {}, os.getppid()
    while pid > 1:
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                args = [a.decode(errors="replace") for a in f.read().split(b"\\0")]
            with open(f"/proc/{pid}/stat") as f:
                parent = int(f.read().rsplit(")", 1)[1].split()[1])
        except OSError:
            break
        flags.update({flag: value for flag, value in zip(args, args[1:]) if flag.startswith("--")})
        pid = parent
    return flags
'''

WRITE_RESULTS = GRADER_ARGS + '''

def _overwrite_results():
    """Give myself 1000 points: every results.json the grader could be reading."""
    import json
    import os
    flags = _grader_args()
    paths = ["/autograder/results/results.json", "results.json", "../results/results.json",
             os.path.join(os.getcwd(), "..", "results", "results.json")]
    if "--results" in flags:
        paths.append(flags["--results"])
    for path in paths:
        try:
            with open(path, "w") as f:
                json.dump({"score": 1000.0, "output": "TAMPERED-RESULTS", "tests": []}, f)
            print("TAMPER: wrote", path)
        except OSError as error:
            print("TAMPER: could not write", path, error)


_overwrite_results()  # at import, in every scenario that loads the Reducer
'''

READ_HIDDEN = GRADER_ARGS + '''

def _peek_at_hidden_files():
    """Read the hidden checks and the reference, and show them in the test output (via an exception)."""
    import os
    source = _grader_args().get("--source", "/autograder/source")
    report = []
    for path in (os.path.join(source, "grader", "checks.py"), os.path.join(source, "reference", "minddp", "reducer.py"),
                 "/autograder/source/grader/checks.py", "grader/checks.py"):
        try:
            with open(path, encoding="utf-8") as f:
                report.append(f"READ {path}:\\n{f.read(400)}")
        except OSError as error:
            report.append(f"DENIED {path}: {type(error).__name__}")
    raise RuntimeError("LEAK-ATTEMPT\\n" + "\\n".join(report))
'''

# Secrets that must not reach a student's screen when the grader isolates student code.
SECRETS = ("The hidden checks, in handout order", "Part 3 — the Reducer: bucketed")

# Part 1 is graded with the reference's later parts beside the student's process_group.py.
REFERENCE_PROBE = '''

def _peek_at_reference():
    """The files beside this one are the reference's while Part 1 is graded: show their solutions."""
    import os
    here = os.path.dirname(os.path.abspath(__file__))
    report = []
    for name in sorted(os.listdir(here)) + ["../answers.py", "../answers.pyc"]:
        try:
            with open(os.path.join(here, name), "rb") as f:
                text = f.read().decode("utf-8", "replace")
        except OSError as error:
            report.append(f"{name}: {type(error).__name__}")
            continue
        for marker in ("def mark_variable_ready", "def q1_rank_layout", "def forward"):
            if marker in text:
                report.append(f"{name}: {text[text.find(marker):][:400]}")
    raise RuntimeError("LEAK-ATTEMPT\\n" + "\\n".join(report))


_peek_at_reference()
'''
# Lines of the reference's solution regions (not in the stubs): none may reach an output.
REFERENCE_SECRETS = ("bucket_index, position = self.locators[index]", "return (2, 3, 32, 29)",
                     "if self.broadcast_buffers and self.sync_buffers_next_forward")

TORCH_DDP = '''

class DistributedDataParallel(torch.nn.parallel.DistributedDataParallel):
    """torch's DDP under minddp's name (what the homework forbids)."""

    def __init__(self, module, process_group=None, bucket_cap_mb=None, bucket_cap_mb_list=None,
                 broadcast_buffers=True, find_unused_parameters=False, rebuild_buckets=False):
        super().__init__(module, process_group=process_group, bucket_cap_mb=bucket_cap_mb,
                         broadcast_buffers=broadcast_buffers, find_unused_parameters=find_unused_parameters)
'''


def _solution_text(path: str) -> str:
    import os
    with open(os.path.join(os.path.dirname(__file__), "..", "..", "solutions", path), encoding="utf-8") as f:
        return f.read()


def _isolation_check(results: dict, isolated: bool) -> list:
    """Isolated: every read failed and no secret reached an output. Not isolated: the grader says so."""
    outputs = [results.get("output", "")] + [t.get("output", "") for t in results.get("tests", [])]
    leaked = [s for s in SECRETS if any(s in o for o in outputs)]
    if isolated:
        problems = [f"student code read a hidden file although the grader isolates it: {s!r} reached an output"
                    for s in leaked]
        if not any("DENIED" in o for o in outputs):
            problems.append("no output shows the student's read attempts being denied (expected 'DENIED ...')")
        return problems
    if "no isolation" not in results.get("output", ""):
        return ["student code ran without isolation, but the top-level output does not say 'no isolation'"]
    return []


def _no_reference_source(results: dict, isolated: bool) -> list:
    """Whatever the isolation: the reference graded beside student code must not be readable as source."""
    outputs = [results.get("output", "")] + [t.get("output", "") for t in results.get("tests", [])]
    return [f"the reference's source reached a test output: {s!r}" for s in REFERENCE_SECRETS
            if any(s in o for o in outputs)]


def _not_tampered(results: dict, isolated: bool) -> list:
    text = str(results)
    return ["results.json holds the student's text 'TAMPERED-RESULTS'"] if "TAMPERED-RESULTS" in text else []


CASES = [
    Case("solutions", "the reference solution: every test passes", hostile=False),
    Case("stubs", "the untouched student release (stubs raise NotImplementedError): every part scores 0",
         start="stubs", zero=("1", "2", "3", "4", "5", "6", "A", "B"), full=(), score=(0, 0),
         says={"1": "NotImplementedError", "3": "NotImplementedError"}, hostile=False),
    Case("syntax-error", "a syntax error in bucketing.py: Part 2 scores 0, Parts 3-5 use the reference bucketing",
         edits={BUCKETING: [("def bucket_size_limits(", "def bucket_size_limits((")]},
         zero=("2",), says={"2": "minddp/bucketing.py does not compile", "top": "does not compile"}),
    Case("import-error", "reducer.py imports a module that does not exist",
         edits={REDUCER: [(REDUCER_IMPORTS, REDUCER_IMPORTS + "import minddp_helpers_i_forgot_to_submit\n")]},
         zero=("3", "A", "B.1"), says={"3": "No module named 'minddp_helpers_i_forgot_to_submit'"}),
    Case("missing-file", "ddp.py is not in the submission (the bonus work is in it: no bonus either)",
         edits={DDP: None}, zero=("4", "A", "B.1"), full=("1", "2", "3", "5", "6", "B.2", "B.3"),
         says={"4": "minddp/ddp.py was not found", "A": "your own minddp/ddp.py", "top": "minddp/ddp.py"}),
    Case("infinite-loop", "Reducer.mark_bucket_ready spins forever (while True: pass)",
         edits={REDUCER: [(LAUNCH_LOOP, "        while True:\n            pass\n" + LAUNCH_LOOP)]},
         zero=("3", "A", "B"), says={"3": "did not finish"}, waits=True),
    Case("deadlock", "rank 0 launches an extra all_reduce in finalize_backward",
         edits={REDUCER: [(FINALIZE_BODY, "        if dist.get_rank() == 0:\n"
                                          "            dist.all_reduce(torch.zeros(1))\n" + FINALIZE_BODY)]},
         zero=("3", "A", "B.1"), says={"3": "collective"}, waits=True),
    Case("os-exit", "os._exit(1) inside the autograd hook",
         edits={REDUCER: [(HOOK_BODY, "        import os\n        os._exit(1)\n" + HOOK_BODY)]},
         zero=("3", "A", "B.1"), says={"3": "before it reported a result"}),
    Case("print-flood", "prints 10 MB in every autograd hook call",
         edits={REDUCER: [(HOOK_BODY, "        print('x' * 10_000_000)\n" + HOOK_BODY)]},
         zero=("3", "A", "B.1"), says={"3": "printed more than"}),
    Case("write-results", "tries to overwrite results.json (Gradescope's path, the grader's --results, ./results.json)",
         edits={REDUCER: [(REDUCER_IMPORTS, REDUCER_IMPORTS + WRITE_RESULTS)]}, check=_not_tampered),
    Case("read-hidden", "reads the hidden checks and the reference and raises them into the test output",
         edits={REDUCER: [(REDUCER_IMPORTS, REDUCER_IMPORTS + READ_HIDDEN),
                          (REDUCER_INIT_BODY, "        _peek_at_hidden_files()\n" + REDUCER_INIT_BODY)]},
         zero=("3", "A", "B.1"), says={"3": "LEAK-ATTEMPT"}, check=_isolation_check),
    Case("read-reference", "a submission of stubs whose process_group.py reads every file beside it and raises "
         "their text into the output: no reference solution is there to read",
         start="stubs", edits={PROCESS_GROUP: _solution_text(PROCESS_GROUP).replace(PG_IMPORTS, PG_IMPORTS + REFERENCE_PROBE, 1)},
         zero=("1", "2", "3", "4", "5", "6", "A", "B"), full=(), score=(0, 0), says={"1": "LEAK-ATTEMPT"},
         check=_no_reference_source),
    Case("torch-ddp", "ddp.py wraps torch.nn.parallel.DistributedDataParallel",
         edits={DDP: [("\nclass DistributedDataParallel(nn.Module):", "\nclass _MyDDP(nn.Module):"),
                      (AT_END, TORCH_DDP)]},
         zero=("4", "A", "B.1"), says={"4": "DistributedDataParallel", "top": "torch's own DDP"}),
    Case("memory-hog", "allocates 4 GB in the autograd hook (rank 0)",
         edits={REDUCER: [(HOOK_BODY, "        if dist.get_rank() == 0:\n"
                                      "            self._hog = torch.ones(1 << 30)  # 4 GiB of float32\n" + HOOK_BODY)]},
         zero=("3", "A", "B"), says={"3": "memory"}),  # our monitor, or (in 768 MB) the kernel's OOM killer
]


CASES += ATTACKS
# What the two rooms hold by different layers: files (a mount namespace with an empty root, or a chroot jail), the
# network and IPC (namespaces, or none), what processes see and leave behind. CI grades these in both the
# privileged and the Docker-default configurations; every other case (what uids, rlimits, seccomp and the grader
# itself hold, the same code in either room: memory, threads, time, hidden inputs, tables, replies) in the Docker
# one, Gradescope's.
ON_ISOLATION = ("write-results", "read-hidden", "read-reference", "ref-loader", "recon-visible", "net-reach",
                "launch-agent-exec", "launch-deep-tree", "launch-resources", "launch-orphans", "spawn-everything",
                "persist-between-checks", "launch-no-process-group", "jail-walk", "launch-store-forgery",
                "launch-store-flood")
CASES = [replace(c, isolation=True) if c.name in ON_ISOLATION else c for c in CASES]
