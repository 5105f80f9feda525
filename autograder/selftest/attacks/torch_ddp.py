"""Attacks on the worker's traps that keep torch's own DDP out of a submission: what a trap replaced is still
reachable in the worker's memory (the C++ Reducer through pybind11's base class, torch's DDP through
nn.Module, its bucketing through gc), so a stub can answer a scenario with torch's DDP and a student file can
wrap it."""

from __future__ import annotations

from autograder.selftest.attacks.shared import CHANNEL, SCENARIO_ARGS, stub
from autograder.selftest.kinds import AT_END, BUCKETING, DDP, REDUCER, Case

# ============================================================================================================
# Undoing the worker's traps; torch's DDP answering for the student's
# ============================================================================================================

# The traps replace module attributes and class methods: the classes are still reachable (the C++ Reducer
# through pybind11's base class, torch's DDP through nn.Module), an original function only if something in
# memory still holds it (searched for with gc). A part of torch that stays trapped makes the unlock fail.
UNLOCK_TORCH = r'''

def _find_original(name):
    import gc
    for obj in gc.get_objects():
        if type(obj).__name__ == "builtin_function_or_method" and getattr(obj, "__name__", None) == name:
            return obj
    raise LookupError(f"no original {name} left in memory")


def _unlock_torch_ddp():
    """Undo the worker's traps on torch's DDP with what is still reachable in this process."""
    import sys
    import torch
    import torch.distributed as dist
    from torch import nn
    from torch._utils import _flatten_dense_tensors, _unflatten_dense_tensors

    def broadcast_coalesced(group, tensors, buffer_size, src=0):  # the one original that is gone
        by_kind = {}
        for tensor in tensors:
            by_kind.setdefault((tensor.dtype, tensor.device), []).append(tensor)
        for same in by_kind.values():
            flat = _flatten_dense_tensors(same)
            dist.broadcast(flat, src, group=group)
            with torch.no_grad():
                for tensor, value in zip(same, _unflatten_dense_tensors(flat, same)):
                    tensor.copy_(value)

    pybind = dist.ProcessGroup.__mro__[-2]
    originals = {
        "Red" + "ucer": next(c for c in pybind.__subclasses__()
                             if c.__name__ == "Red" + "ucer" and "c10d" in c.__module__),
        "_compute_bucket" + "_assignment_by_size": _find_original("_compute_bucket" + "_assignment_by_size"),
        "_broadcast" + "_coalesced": broadcast_coalesced,
    }
    for module in (dist, sys.modules["torch._C._distributed" + "_c10d"]):
        for name, value in originals.items():
            setattr(module, name, value)
    torch_ddp = next(c for c in nn.Module.__subclasses__() if c.__name__ == "Distributed" + "DataParallel")
    for cls in (torch_ddp, originals["Red" + "ucer"]):
        if "trap" in getattr(cls.__init__, "__qualname__", ""):
            raise LookupError(f"{cls.__name__}'s methods are traps")
    for name in ("torch.nn.par" + "allel", "torch.nn.par" + "allel.distributed"):
        setattr(sys.modules[name], "Distributed" + "DataParallel", torch_ddp)
    return torch_ddp
'''

# Answer the training scenario running now (it is importing this file) and every later one in this
# process with torch's own DDP: the harness's _train is called with impl="torch", and the current call's
# answer is written on the worker's channel before the worker's own reply. An attacker checks that the
# unlock worked before touching anything, so a failed attempt leaves the student's own code graded as is.
ANSWER_WITH_TORCH = SCENARIO_ARGS + CHANNEL + UNLOCK_TORCH + r'''

def _answer_with_torch():
    import json
    from checks import pool, scenarios
    if getattr(scenarios._train, "hijacked", False):
        return
    try:
        _unlock_torch_ddp()
    except Exception:
        return
    original = scenarios._train

    def torch_train(**kwargs):
        return original(**{**kwargs, "impl": "torch"})
    torch_train.hijacked = True
    scenarios._train = torch_train
    args = _scenario_args()
    if args is not None and _channel() is not None:
        record = pool.encode(original(**{**args, "impl": "torch"}))
        _send_raw(json.dumps({"ok": True, "result": record}).encode())


_answer_with_torch()
'''


# ============================================================================================================
# Torch's own DDP answering for a stub, or standing in for the student's work
# ============================================================================================================

TORCH_DDP_SHIM = UNLOCK_TORCH + r'''


class DistributedDataParallel(nn.Module):  # replaces the class above
    """Whatever minddp's DDP is asked for, torch's own DDP is built instead."""

    def __new__(cls, module, process_group=None, bucket_cap_mb=None, bucket_cap_mb_list=None,
                broadcast_buffers=True, find_unused_parameters=False, rebuild_buckets=False):
        return _unlock_torch_ddp()(module, process_group=process_group, bucket_cap_mb=bucket_cap_mb,
                                   bucket_cap_mb_list=bucket_cap_mb_list, broadcast_buffers=broadcast_buffers,
                                   find_unused_parameters=find_unused_parameters)
'''

# When reducer.py failed Part 3, Part 4 runs with a stand-in that leaves torch's C++ Reducer untrapped:
# torch's own Python DDP (still in memory) then works as is; only _broadcast_coalesced is rebuilt.
STANDIN_DDP_SHIM = r'''


def _torch_ddp_class():
    import sys
    import torch
    import torch.distributed as dist
    from torch._utils import _flatten_dense_tensors, _unflatten_dense_tensors

    def broadcast_coalesced(group, tensors, buffer_size, src=0):
        by_kind = {}
        for tensor in tensors:
            by_kind.setdefault((tensor.dtype, tensor.device), []).append(tensor)
        for same in by_kind.values():
            flat = _flatten_dense_tensors(same)
            dist.broadcast(flat, src, group=group)
            with torch.no_grad():
                for tensor, value in zip(same, _unflatten_dense_tensors(flat, same)):
                    tensor.copy_(value)
    setattr(dist, "_broadcast" + "_coalesced", broadcast_coalesced)
    torch_ddp = next(c for c in nn.Module.__subclasses__() if c.__name__ == "Distributed" + "DataParallel")
    setattr(sys.modules["torch.nn.par" + "allel.distributed"], "Distributed" + "DataParallel", torch_ddp)  # a name
    return torch_ddp


class DistributedDataParallel(nn.Module):  # replaces the class above
    def __new__(cls, module, process_group=None, bucket_cap_mb=None, bucket_cap_mb_list=None,
                broadcast_buffers=True, find_unused_parameters=False, rebuild_buckets=False):
        return _torch_ddp_class()(module, process_group=process_group, bucket_cap_mb=bucket_cap_mb,
                                  bucket_cap_mb_list=bucket_cap_mb_list, broadcast_buffers=broadcast_buffers,
                                  find_unused_parameters=find_unused_parameters)
'''

# reducer.py as the grader's own stand-in, with the C++ Reducer found through pybind11's base class.
CXX_REDUCER = r'''


class Reducer:  # replaces the class above
    """torch's C++ Reducer behind the homework's interface."""

    def __init__(self, params, bucket_indices, process_group=None):
        import sys
        base = dist.ProcessGroup.__mro__[-2]
        cxx = next(c for c in base.__subclasses__() if c.__name__ == "Red" + "ucer" and "c10d" in c.__module__)
        self.params = list(params)
        self.process_group = process_group
        self.world_size = dist.get_world_size(process_group)
        self.expect_autograd_hooks = False
        self.require_finalize = False
        self.local_used = None
        group = process_group if process_group is not None else dist.distributed_c10d._get_default_group()
        buckets = [list(b) for b in bucket_indices]
        big = 1 << 62
        self._reducer = cxx(self.params, buckets, [big] * len(buckets), group, [False] * len(self.params), big,
                            False, False, {}, big)
        self._c10d = sys.modules["torch._C._distributed" + "_c10d"]

    def prepare_for_backward(self, unused=()):
        self._reducer._check_reducer_finalized()
        self._reducer.prepare_for_backward([])

    def register_comm_hook(self, state, hook):  # the untrapped built-in hooks
        kind = "FP16_COMPRESS" if getattr(hook, "__name__", "") == "fp16_compress_hook" else "ALLREDUCE"
        self._c10d._register_builtin_comm_hook(self._reducer, getattr(self._c10d.BuiltinCommHookType, kind))
'''

TORCH_BUCKETS_SHIM = UNLOCK_TORCH + r'''


def reverse_order(num_params):  # replaces the stub above
    return list(range(num_params - 1, -1, -1))


def compute_bucket_assignment(tensors, bucket_size_limits, order=None):  # replaces the stub above
    torch_buckets = _find_original("_compute_bucket" + "_assignment_by_size")  # if anything still holds it
    if not bucket_size_limits:
        raise ValueError("bucket_size_limits must hold at least one limit in bytes")
    order = reverse_order(len(tensors)) if order is None else list(order)
    return torch_buckets([tensors[i] for i in order], list(bucket_size_limits), [], order)[0]
'''


ATTACKS: list = [
    Case("stub-reducer-hijack", "reducer.py is the stub plus code that, when imported by a Part 3 scenario, "
         "re-runs that scenario with torch's DDP (traps undone from objects still in memory) and swaps the "
         "worker's reply for torch's record; later scenarios go to torch directly",
         edits={REDUCER: stub(REDUCER) + ANSWER_WITH_TORCH}, zero=("3", "A", "B.1")),
    Case("stub-ddp-hijack-via-bucketing", "ddp.py is the stub; the (correct) bucketing.py, which ddp.py "
         "imports, answers every Part 4 and bonus scenario with torch's DDP as above",
         edits={DDP: stub(DDP), BUCKETING: [(AT_END, ANSWER_WITH_TORCH)]}, zero=("4", "A", "B.1")),
    Case("ddp-is-torch-ddp", "ddp.py's DistributedDataParallel.__new__ returns torch's own DDP, found through "
         "nn.Module.__subclasses__() after undoing the traps (C++ Reducer via pybind11's base class, torch's "
         "bucketing searched for with gc)", edits={DDP: [(AT_END, TORCH_DDP_SHIM)]},
         zero=("4", "A", "B.1")),
    Case("ddp-torch-with-standins", "bucketing.py and reducer.py are stubs, so Part 4 runs with the stand-ins, "
         "which leave torch's C++ Reducer and bucketing untrapped: ddp.py returns torch's own DDP",
         edits={BUCKETING: stub(BUCKETING), REDUCER: stub(REDUCER), DDP: [(AT_END, STANDIN_DDP_SHIM)]},
         zero=("2", "3", "4", "A", "B.1")),
    Case("reducer-is-cxx-reducer", "reducer.py wraps torch's C++ Reducer (found through pybind11's base "
         "class, like the grader's own stand-in) with the built-in comm hooks, which are not trapped",
         edits={REDUCER: stub(REDUCER) + CXX_REDUCER}, zero=("3", "A", "B.1")),
    Case("bucketing-is-torch", "bucketing.py calls torch's bucket assignment, found by searching the worker's "
         "memory with gc for a function of that name (no banned name in the file)",
         edits={BUCKETING: stub(BUCKETING) + TORCH_BUCKETS_SHIM}, zero=("2",)),

]
