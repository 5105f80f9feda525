"""What a self-test case is made of: the ``Case`` and ``Function`` types, and the names its edits are written
with (the student files, anchors in the reference). The format of a case is described in ``cases.py``.

The case lists (``cases.py``, ``attacks/``), the mutants and correct variants, and the runner import these
from here; this module imports none of them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

FULL_REST = "rest"
AT_END = None  # as the "old substring" of an edit: append the new text to the file

REDUCER = "minddp/reducer.py"
DDP = "minddp/ddp.py"
BUCKETING = "minddp/bucketing.py"
PROCESS_GROUP = "minddp/process_group.py"

# Anchors in the reference files (each must occur exactly once; the self-test fails loudly if one moves).
HOOK_BODY = "        if not self.expect_autograd_hooks:  # forward ran under no_sync() or no_grad"
LAUNCH_LOOP = "        while self.next_bucket < len(self.buckets) and self.buckets[self.next_bucket].pending == 0:"
FINALIZE_BODY = "        self.expect_autograd_hooks = False\n        if self.next_bucket < len(self.buckets):"
REDUCER_INIT_BODY = "        self.params = list(params)\n"
REDUCER_IMPORTS = "import torch.distributed as dist\n"
# all_reduce_bucket's averaging (the reference scales the whole bucket before its launch; a design that
# multiplies each gradient while copying it in drops this line)
SCALE_BUCKET = "            bucket.buffer.mul_(1.0 / self.world_size)\n"
PG_IMPORTS = "import torch.distributed as dist\n"
BUCKET_CLASS = "@dataclass\nclass Bucket:\n"  # the reference's bucket record (a design region): code goes before it
# The all-reduce issued synchronously from the hook (a mutant, and the base of attacks on the overlap probe).
BLOCKING_ALLREDUCE = [
    ("bucket.work = dist.all_reduce(bucket.buffer, group=self.process_group, async_op=True)",
     "dist.all_reduce(bucket.buffer, group=self.process_group)  # blocks backward\n"
     "            bucket.work = _Done()"),
    (BUCKET_CLASS, "class _Done:\n    def wait(self):\n        return True\n\n\n" + BUCKET_CLASS),
]


@dataclass(frozen=True)
class Function:
    """An edit that replaces a whole function (``"name"`` or ``"Class.name"``) by ``source``, written at
    column 0 (it is indented to where the function sits). Readable for rewrites of several lines, and
    immune to edits elsewhere in the function's file."""

    qualname: str
    source: str


@dataclass(frozen=True)
class Case:
    name: str
    about: str
    edits: dict = field(default_factory=dict)
    zero: tuple = ()
    full: tuple | str = FULL_REST
    says: dict = field(default_factory=dict)
    score: tuple | None = None
    start: str = "solutions"  # the files the edits apply to: "solutions" or "stubs"
    check: Callable[[dict, bool], list] | None = None
    hostile: bool = True  # an attack or a hang (the self-test reports the slowest one's time)
    parts: tuple | None = None  # grade only these parts (``--parts``; None: all), the rest as the solutions'
    checks: tuple | None = None  # ... and of them only these checks, with the parts they depend on (``--checks``)
    waits: bool = False  # it waits out deadlines (a hang, a slow run): graded in a slot of its own, beside the jobs
    isolation: bool = False  # its honest outcome rests on the isolation layers: CI grades it in both configurations
    time_limit_s: float | None = None  # grade as if Gradescope's timeout were this (``--time-limit-s``); None: settings'
