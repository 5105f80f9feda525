"""Stand-ins for a part a submission failed, built from torch's own machinery, never from the reference.

A later part is graded with a stand-in for an earlier part the student's file failed (handout §7: one
mistake is charged once): the Part 4 wrapper with a stand-in Reducer when Part 3 failed, Parts 4 and 5
with a stand-in bucketing when Part 2 failed. A stand-in is the release's file (its provided code and
stubs) with the graded functions replaced at the end by torch's implementation. Nothing of the
reference solution ever reaches a process that runs student code: there is nothing to copy from it.
"""

from __future__ import annotations

HEADER = '''

# ---- appended by the autograder -----------------------------------------------------------------------------
# Your {path} did not pass Part {part}, so this check runs with this stand-in instead: the release's file,
# whose graded functions are replaced here by torch's own implementation (your mistake is charged once).
'''

BUCKETING = '''
import torch.distributed as _torch_dist


def reverse_order(num_params):
    return list(range(num_params - 1, -1, -1))


def compute_bucket_assignment(tensors, bucket_size_limits, order=None):
    if not bucket_size_limits:
        raise ValueError("bucket_size_limits must hold at least one limit in bytes")
    order = reverse_order(len(tensors)) if order is None else list(order)
    return _torch_dist._compute_bucket_assignment_by_size([tensors[i] for i in order], list(bucket_size_limits),
                                                          [], order)[0]
'''

REDUCER = '''
import torch.distributed as _torch_dist

_NO_LIMIT = 1 << 62  # the C++ Reducer's limits only matter when it rebuilds buckets, which it never does here


class Reducer:
    """torch's C++ Reducer behind the homework's interface (what a Part 4 wrapper may use)."""

    def __init__(self, params, bucket_indices, process_group=None):
        self.params = list(params)
        self.process_group = process_group
        self.world_size = _torch_dist.get_world_size(process_group)
        self.local_used = None
        group = process_group if process_group is not None else _torch_dist.distributed_c10d._get_default_group()
        buckets = [list(b) for b in bucket_indices]
        self._reducer = _torch_dist.Reducer(self.params, buckets, [_NO_LIMIT] * len(buckets), group,
                                            [False] * len(self.params), _NO_LIMIT, False, False, {}, _NO_LIMIT)

    def prepare_for_backward(self, unused=()):
        self._reducer._check_reducer_finalized()  # "Expected to have finished reduction in the prior iteration..."
        self._reducer.prepare_for_backward([])

    def register_comm_hook(self, state, hook):
        _torch_dist._register_comm_hook(self._reducer, state, hook)

    def enable_usage_tracking(self):
        raise NotImplementedError("find_unused_parameters is bonus work: it is graded with your own reducer.py")

    def build_buckets(self, bucket_indices):
        raise NotImplementedError("rebuilding buckets is bonus work: it is graded with your own reducer.py")
'''

# {student file: (part, the stand-in's code, the torch names its code needs untrapped)}
STANDINS = {
    "minddp/bucketing.py": (2, BUCKETING, ("_compute_bucket_assignment_by_size",)),
    "minddp/reducer.py": (3, REDUCER, ("Reducer", "_register_comm_hook")),  # torch's C++ Reducer (never its DDP)
}


def standin_text(path: str, release_text: str) -> str:
    part, code, _ = STANDINS[path]
    return release_text.rstrip("\n") + "\n" + HEADER.format(path=path, part=part) + code


def untrapped(paths: list[str]) -> list[str]:
    """The torch names the stand-ins for ``paths`` call (left untrapped in those checks only)."""
    return sorted({name for path in paths for name in STANDINS[path][2]})
