"""Which isolation layers this machine allows (``isolation_layers``, ``isolation_problem``, ``Layers``): each
layer is tried for real in a throw-away child, since a container's seccomp profile may refuse what the
capabilities allow.

Separate because it runs in the grader (the parent side, once per grading) and only probes: it uses the
other modules' pieces (mounts' ``_try_namespaces``, seccomp's filter, uids' dropping of the bounding set)
and changes with how the grader decides what it can offer, not with how a worker enters its jail.
"""

from __future__ import annotations

import json
import os
import platform
import select
import signal
import sys
from dataclasses import dataclass

from grader.mounts import _try_namespaces
from grader.seccomp import install_seccomp
from grader.syscalls import (
    _CAP_SETGID,
    _CAP_SETPCAP,
    _CAP_SETUID,
    _CAP_SYS_ADMIN,
    _CAP_SYS_CHROOT,
    _native_arch,
    _status_fields,
)
from grader.uids import _drop_bounding_set


@dataclass(frozen=True)
class Layers:
    """What this machine lets the grader put around student code (``isolation_layers``), strongest first."""

    uid: bool         # a uid of its own, no groups, no capabilities, no_new_privs, limits: the floor
    seccomp: bool     # the filter of ``install_seccomp``
    namespaces: bool  # mount, IPC and network namespaces and the empty root (needs CAP_SYS_ADMIN)
    chroot: bool      # chroot into a tree prepared in advance (jailtree.py; needs CAP_SYS_CHROOT)
    why_not: tuple = ()  # (layer, why it is missing)

    @property
    def root(self) -> str:
        """The Jail.root a worker gets: the empty root where namespaces exist, else a chroot, else none."""
        return "empty" if self.namespaces else "chroot" if self.chroot else "none"

    def names(self) -> list[str]:
        names = ["uid"] if self.uid else []
        names += ["seccomp"] if self.seccomp else []
        names += ["namespaces (mount, IPC, network; empty root)"] if self.namespaces else []
        names += ["chroot"] if self.chroot and not self.namespaces else []
        return names


def _capabilities() -> int:
    return int(_status_fields().get("CapEff", "0"), 16)


def isolation_layers() -> Layers | str:
    """The layers this process can set up for student code, each tried for real in a throw-away child (a
    container's seccomp profile may refuse what the capabilities allow); a string when not even a uid of
    its own is possible (not Linux, not root, no CAP_SETUID...): then student code must not run at all."""
    if not sys.platform.startswith("linux"):
        return f"not Linux ({sys.platform})"
    if os.geteuid() != 0:
        return "not running as root"
    effective = _capabilities()
    for cap, name in ((_CAP_SETUID, "CAP_SETUID"), (_CAP_SETGID, "CAP_SETGID"), (_CAP_SETPCAP, "CAP_SETPCAP")):
        if not effective >> cap & 1:
            return f"root without {name}: no uid of its own can be given to student code"
    tried = _probe_in_child(namespaces=bool(effective >> _CAP_SYS_ADMIN & 1), chroot=bool(effective >> _CAP_SYS_CHROOT & 1))
    if tried.get("uid"):
        return f"a uid of its own could not be set up: {tried['uid']}"
    why_not = []
    for layer, cap in (("seccomp", None), ("namespaces", "CAP_SYS_ADMIN"), ("chroot", "CAP_SYS_CHROOT")):
        if tried.get(layer) is None:
            why_not.append((layer, f"no {cap}"))
        elif tried[layer]:
            why_not.append((layer, tried[layer]))
    if _native_arch() is None:
        why_not.append(("seccomp", f"unsupported architecture {platform.machine()}"))
    missing = dict(why_not)
    return Layers(True, "seccomp" not in missing, "namespaces" not in missing, "chroot" not in missing,
                  tuple(why_not))


def isolation_problem() -> str | None:
    """None when every layer, namespaces included, can be set up (what the sandbox's own tests need);
    otherwise a one-line reason."""
    layers = isolation_layers()
    if isinstance(layers, str):
        return layers
    return "; ".join(f"{layer}: {why}" for layer, why in layers.why_not) or None


def _probe_in_child(namespaces: bool, chroot: bool, timeout_s: float = 10.0) -> dict:
    """{layer: "" (works) or why not; None: not tried} for namespaces, chroot, seccomp and uid, tried in that
    order in a child that exits afterwards."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        report: dict = {}
        try:
            os.close(read_end)
            for layer, wanted, attempt in (("namespaces", namespaces, _try_namespaces), ("chroot", chroot, _try_chroot),
                                           ("seccomp", _native_arch() is not None, install_seccomp),
                                           ("uid", True, _try_uid)):
                if not wanted:
                    continue
                try:
                    attempt()
                    report[layer] = ""
                except BaseException as e:  # noqa: BLE001 - any failure is the answer
                    report[layer] = str(e)[:300] or type(e).__name__
        finally:
            try:
                os.write(write_end, json.dumps(report).encode())
            finally:
                os._exit(0)
    os.close(write_end)
    try:
        ready, _, _ = select.select([read_end], [], [], timeout_s)
        answer = os.read(read_end, 10000).decode(errors="replace") if ready else ""
    finally:
        os.close(read_end)
        _reap(pid)
    try:
        return json.loads(answer)
    except ValueError:
        return {"uid": f"the isolation probe did not answer ({answer[:100]!r})"}


def _try_chroot() -> None:
    os.chroot("/")


def _try_uid() -> None:
    _drop_bounding_set()
    os.setgroups([])
    os.setresgid(65534, 65534, 65534)
    os.setresuid(65534, 65534, 65534)


def _reap(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)  # already exited in the normal case: this only matters after a timeout
    except ProcessLookupError:
        pass
    os.waitpid(pid, 0)
