"""A Gradescope-shaped container on this machine: Docker's default confinement, applied by runc.

    python -m autograder.container probe   # what root sees inside: capabilities, seccomp, cgroups, the layers

Gradescope grades every submission in a fresh Docker container that is not privileged. This module makes the
same room here (root, runc: the runtime Docker itself drives), from moby's own defaults, which
``install-container-tools.sh`` takes from Debian's package of Docker's source (dist/moby, its VERSION):

* the capabilities: Docker's default set (``oci/caps/defaults.go``: 14, no CAP_SYS_ADMIN or CAP_NET_ADMIN);
* seccomp: Docker's default profile (``profiles/seccomp/default.json``), turned into its OCI form as dockerd
  does (a rule is kept when its ``includes`` hold and its ``excludes`` do not, for these capabilities, this
  architecture and this kernel) and loaded by runc through libseccomp, as under Docker;
* namespaces (mount, PID, IPC, UTS, and a network namespace of its own with loopback up), Docker's masked
  and read-only paths of /proc and /sys, its device rules, and the mounts runc and Docker both make (/proc,
  /dev, /dev/pts, /dev/shm of 64 MB, /dev/mqueue, /sys read-only, the cgroups read-only): nothing inside can
  change its own limits;
* limits imposed from outside, as Gradescope does: a cgroup of ``cpus`` and ``memory_mb`` (``limits.Cgroup``)
  that runc puts the container in;
* the root file system: overlayfs with this machine's root at the bottom (with the folders an image would not
  have hidden: /work, /root, /home, /tmp, ...), an image layer above it (what setup.sh wrote, ``Image.setup``),
  and a fresh layer per container (``Image.run``), on an ext4 file of its own (overlayfs cannot put a layer on
  the file system below it). Linking a file of a lower layer copies it up, as in Docker's overlay2.

Not the same as Gradescope: no route out of the container (this machine has none to give), the host's
programs instead of Gradescope's Ubuntu image, and Docker 20.10's profile (Debian's), which allows a little
more than newer ones (e.g. AF_VSOCK sockets); the grader's own seccomp filter refuses those anyway.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import functools
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import uuid
from dataclasses import dataclass, field

from autograder.limits import Cgroup

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
MOBY = os.path.join(REPO, "dist", "moby")

# include/uapi/linux/capability.h: name -> bit
CAPABILITIES = ("CHOWN DAC_OVERRIDE DAC_READ_SEARCH FOWNER FSETID KILL SETGID SETUID SETPCAP LINUX_IMMUTABLE "
                "NET_BIND_SERVICE NET_BROADCAST NET_ADMIN NET_RAW IPC_LOCK IPC_OWNER SYS_MODULE SYS_RAWIO SYS_CHROOT "
                "SYS_PTRACE SYS_PACCT SYS_ADMIN SYS_BOOT SYS_NICE SYS_RESOURCE SYS_TIME SYS_TTY_CONFIG MKNOD LEASE "
                "AUDIT_WRITE AUDIT_CONTROL SETFCAP MAC_OVERRIDE MAC_ADMIN SYSLOG WAKE_ALARM BLOCK_SUSPEND AUDIT_READ "
                "PERFMON BPF CHECKPOINT_RESTORE").split()
GO_ARCH = {"x86_64": "amd64", "aarch64": "arm64"}
SECCOMP_ARCH = {"x86_64": "SCMP_ARCH_X86_64", "aarch64": "SCMP_ARCH_AARCH64"}
# Folders of this machine an image would not have: empty in the container (overlayfs "opaque" folders).
HIDDEN = ("/work", "/root", "/home", "/tmp", "/var/tmp", "/farm", "/mnt", "/old_root", "/run", "/autograder")
STICKY = ("/tmp", "/var/tmp")
OWN = "/autograder"  # Gradescope's path: the image's own, whatever this machine has (or later gets) there
IMAGE_GB = 32  # the sparse ext4 file holding the layers (only what is written takes space)


# -- moby's defaults -----------------------------------------------------------------------------------------

def ensure_tools(moby: str = MOBY) -> None:
    """runc, ip and mkfs.ext4 installed, moby's defaults in ``moby`` (install-container-tools.sh)."""
    subprocess.run(["bash", os.path.join(HERE, "install-container-tools.sh"), moby], check=True)


def _go_strings(path: str, anchor: str) -> list[str]:
    """The string literals of the Go list that follows ``anchor`` (``Name: []string{`` or a function's return)."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    start = text.index(anchor)
    body = text[text.index("{", start + len(anchor) - 1) + 1:]
    return re.findall(r'"([^"]+)"', body[:body.index("}")])


def docker_capabilities(moby: str = MOBY) -> list[str]:
    return _go_strings(os.path.join(moby, "oci", "caps", "defaults.go"), "func DefaultCapabilities()")


def capability_mask(names: list[str]) -> int:
    """CapEff as /proc/self/status shows it for these capabilities."""
    return sum(1 << CAPABILITIES.index(name.removeprefix("CAP_")) for name in names)


def moby_paths(kind: str, moby: str = MOBY) -> list[str]:
    """Docker's MaskedPaths or ReadonlyPaths (``oci/defaults.go``)."""
    return _go_strings(os.path.join(moby, "oci", "defaults.go"), f"{kind}: []string{{")


def _kernel_at_least(version: str) -> bool:
    have = [int(n) for n in re.findall(r"\d+", platform.release())[:2]]
    return have >= [int(n) for n in version.split(".")[:2]]


def seccomp_profile(capabilities: list[str], moby: str = MOBY) -> dict:
    """Docker's default profile in OCI form, for these capabilities on this machine: what dockerd hands runc."""
    with open(os.path.join(moby, "profiles", "seccomp", "default.json"), encoding="utf-8") as f:
        profile = json.load(f)
    machine, arch = SECCOMP_ARCH[platform.machine()], GO_ARCH[platform.machine()]
    sub = next((m.get("subArchitectures") or [] for m in profile.get("archMap", []) if m["architecture"] == machine), [])
    rules = []
    for rule in profile["syscalls"]:
        includes, excludes = rule.get("includes") or {}, rule.get("excludes") or {}
        if includes.get("arches") and arch not in includes["arches"]:
            continue
        if includes.get("caps") and not set(includes["caps"]) <= set(capabilities):
            continue
        if includes.get("minKernel") and not _kernel_at_least(includes["minKernel"]):
            continue
        if arch in (excludes.get("arches") or []) or set(excludes.get("caps") or []) & set(capabilities):
            continue
        oci = {"names": rule["names"], "action": rule["action"]}
        if rule.get("args"):
            oci["args"] = [{k: a[k] for k in ("index", "value", "valueTwo", "op") if k in a} for a in rule["args"]]
        if "errnoRet" in rule:
            oci["errnoRet"] = rule["errnoRet"]
        rules.append(oci)
    out = {"defaultAction": profile["defaultAction"], "architectures": [machine, *sub], "syscalls": rules}
    if "defaultErrnoRet" in profile:
        out["defaultErrnoRet"] = profile["defaultErrnoRet"]
    return out


@functools.lru_cache(maxsize=1)
def _runc_spec() -> str:
    """runc's own default config (as JSON text): made once, each container's config starts from a copy."""
    with tempfile.TemporaryDirectory() as bundle:  # runc spec writes config.json into the bundle
        subprocess.run(["runc", "spec", "--bundle", bundle], check=True, capture_output=True)
        with open(os.path.join(bundle, "config.json"), encoding="utf-8") as f:
            return f.read()


def runtime_config(command: list[str], env: dict[str, str], cwd: str, binds: list[tuple[str, str]], cgroup: str | None,
                   network: str | None, moby: str = MOBY) -> dict:
    """The OCI config of one container: runc's own default spec (the mounts Docker makes too), with Docker's
    capabilities, seccomp profile, namespaces, masked and read-only paths and device rules."""
    config = json.loads(_runc_spec())
    caps = docker_capabilities(moby)
    config["process"] = {"terminal": False, "user": {"uid": 0, "gid": 0}, "args": command, "cwd": cwd,
                         "env": [f"{k}={v}" for k, v in env.items()],
                         "capabilities": {k: caps for k in ("bounding", "effective", "permitted")},
                         "rlimits": [],  # this machine's own, as a container inherits dockerd's
                         "noNewPrivileges": False}
    config["root"] = {"path": "rootfs", "readonly": False}
    config["hostname"] = "gradescope-sim"
    config["mounts"] += [{"destination": inside, "type": "bind", "source": source, "options": ["rbind", "rw"]}
                         for source, inside in binds]
    linux = config["linux"]
    linux["namespaces"] = [{"type": t} for t in ("pid", "ipc", "uts", "mount")]
    if network is not None:  # None: this machine's network (setup.sh's pip needs the package index)
        linux["namespaces"].append({"type": "network", "path": network})
    linux["maskedPaths"], linux["readonlyPaths"] = moby_paths("MaskedPaths", moby), moby_paths("ReadonlyPaths", moby)
    linux["seccomp"] = seccomp_profile(caps, moby)
    devices = [{"allow": False, "access": "rwm"}]
    devices += [{"allow": True, "type": "c", "major": major, "minor": minor, "access": "rwm"}
                for major, minor in ((1, 5), (1, 3), (1, 9), (1, 8), (5, 0), (5, 1))]
    linux["resources"] = {"devices": devices + [{"allow": False, "type": "c", "major": 10, "minor": 229,
                                                 "access": "rwm"}]}
    if cgroup:  # below the one limits.Cgroup made, with its CPU and memory limits: runc removes its own at exit
        linux["cgroupsPath"] = f"/{cgroup}/container"
    return config


# -- the layers and the containers ---------------------------------------------------------------------------

@dataclass
class Ran:
    exit_code: int
    cpu_s: float = 0.0
    peak_mb: float = 0.0  # the cgroup's peak (page cache included)
    process_peak_mb: float = 0.0  # the processes' own (anonymous and tmpfs memory), sampled every 0.1 s
    oom_kills: int = 0
    cgroups_left: list = field(default_factory=list)  # folders of its cgroup still there once it was removed


def _binds(binds) -> list[tuple[str, str]]:
    """Each bind as (this machine's folder, where the container sees it); a plain path: the same place."""
    return [(b, b) if isinstance(b, str) else (b[0], b[1]) for b in binds]


def _run(command: list[str], **kwargs) -> None:
    subprocess.run(command, check=True, stdin=subprocess.DEVNULL, capture_output=True, **kwargs)


_HELD: dict[str, int] = {}  # lock file -> its descriptor, for the locks this process holds


def exclusive(path: str, what: str) -> bool:
    """Hold an exclusive lock on ``path`` (created if missing) for the rest of this process: False if this
    process held it already. Another process holding it: wait for it, saying so (a run killed before its end
    holds nothing: the kernel drops its locks, and what it left is then cleaned up by the next run)."""
    if path in _HELD:
        return False
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        print(f"waiting for another run that uses {what} ({path})", file=sys.stderr, flush=True)
        fcntl.flock(fd, fcntl.LOCK_EX)
    _HELD[path] = fd
    return True


def release(path: str) -> None:
    fd = _HELD.pop(path, None)
    if fd is not None:
        os.close(fd)  # the lock goes with the descriptor


class Image:
    """An image (one layer over this machine's root) and fresh containers from it. ``setup`` writes the image
    layer, like the build of Gradescope's image (setup.sh); ``run`` starts a container of its own each time."""

    def __init__(self, workdir: str | None = None, moby: str = MOBY):
        self.moby = moby
        ensure_tools(moby)
        self.workdir = os.path.abspath(workdir or tempfile.mkdtemp(prefix="minddp-container-", dir="/var/tmp"))
        self.disk = os.path.join(self.workdir, "disk")
        self.file = os.path.join(self.workdir, "layers.ext4")
        os.makedirs(self.disk, exist_ok=True)
        self.lock = os.path.join(self.workdir, "lock")
        self.owns_lock = first = exclusive(self.lock, "this image")
        if not os.path.ismount(self.disk):
            if not os.path.exists(self.file):
                with open(self.file, "wb") as f:
                    f.truncate(IMAGE_GB * 2**30)
                _run(["mkfs.ext4", "-q", "-F", "-E", "lazy_itable_init=1,lazy_journal_init=1", self.file])
            _run(["mount", "-o", "loop", self.file, self.disk])
        self.layer = os.path.join(self.disk, "image")
        os.makedirs(self.layer, exist_ok=True)
        if first:
            self.clean_up_after_killed_runs()
        for path in HIDDEN:  # each time: this machine may have made one since the image was (e.g. /autograder)
            hidden = self.layer + path
            if (os.path.isdir(path) or path == OWN) and not os.path.exists(hidden):
                os.makedirs(hidden)
                os.chmod(hidden, 0o1777 if path in STICKY else 0o755)
            if os.path.isdir(hidden):
                os.setxattr(hidden, "trusted.overlay.opaque", b"y")

    def clean_up_after_killed_runs(self) -> None:
        """What runs of this image killed before their end left (none can be running: this process holds the
        image's lock): their containers (runc's state), whose processes runc kills, their cgroups, network
        namespaces and root file systems."""
        state = os.path.join(self.disk, "runc")
        for name in sorted(os.listdir(state)) if os.path.isdir(state) else []:
            cgroups = self._cgroups_of(os.path.join(state, name, "state.json"))
            subprocess.run(["runc", "--root", state, "delete", "--force", name], capture_output=True)
            subprocess.run(["ip", "netns", "delete", name], capture_output=True)
            for folder in cgroups:  # limits.Cgroup's folder, above runc's own (which runc removed)
                if os.path.basename(folder).startswith("minddp-limits-"):
                    with contextlib.suppress(OSError):
                        os.rmdir(folder)
        runs = os.path.join(self.disk, "runs")
        for name in sorted(os.listdir(runs)) if os.path.isdir(runs) else []:
            subprocess.run(["umount", "-l", os.path.join(runs, name, "rootfs")], capture_output=True)
            shutil.rmtree(os.path.join(runs, name), ignore_errors=True)

    @staticmethod
    def _cgroups_of(state_json: str) -> set[str]:
        """The folders above a container's cgroups (runc's state.json), where limits.Cgroup put them."""
        try:
            with open(state_json, encoding="utf-8") as f:
                paths = json.load(f).get("cgroup_paths") or {}
        except (OSError, ValueError):
            return set()
        return {os.path.dirname(p.rstrip("/")) for p in paths.values() if isinstance(p, str)}

    def path(self, inside: str) -> str:
        """Where a file the setup wrote into the image is, on this machine."""
        return self.layer + inside

    def _mount(self, name: str, lowers: list[str], upper: str) -> tuple[str, str]:
        bundle = os.path.join(self.disk, "runs", name)
        rootfs, work = os.path.join(bundle, "rootfs"), os.path.join(bundle, "work")
        for folder in (rootfs, work, upper):
            os.makedirs(folder, exist_ok=True)
        _run(["mount", "-t", "overlay", "overlay", "-o",
              f"lowerdir={':'.join(lowers)},upperdir={upper},workdir={work}", rootfs])
        return bundle, rootfs

    def _container(self, name: str, lowers: list[str], upper: str, command: list[str], env: dict[str, str],
                   cwd: str, binds: list, cgroup: Cgroup | None, network: bool, stdout, timeout_s) -> Ran:
        bundle, rootfs = self._mount(name, lowers, upper)
        netns = None
        try:
            if network:
                subprocess.run(["ip", "netns", "delete", name], capture_output=True)
                _run(["ip", "netns", "add", name])
                _run(["ip", "-n", name, "link", "set", "lo", "up"])
                netns = f"/var/run/netns/{name}"
            config = runtime_config(command, env, cwd, _binds(binds), cgroup.name if cgroup else None, netns,
                                    self.moby)
            with open(os.path.join(bundle, "config.json"), "w", encoding="utf-8") as f:
                json.dump(config, f)
            state = os.path.join(self.disk, "runc")
            try:
                done = subprocess.run(["runc", "--root", state, "run", "--bundle", bundle, name], stdin=subprocess.DEVNULL,
                                      stdout=stdout, stderr=subprocess.STDOUT if stdout else None, timeout=timeout_s)
                code = done.returncode
            except subprocess.TimeoutExpired:
                code = -9
            try:
                return Ran(code) if cgroup is None else \
                    Ran(code, cgroup.cpu_seconds(), cgroup.peak_mb(), 0.0, cgroup.oom_kills())
            finally:
                subprocess.run(["runc", "--root", state, "delete", "--force", name], capture_output=True)
        finally:
            if netns:
                subprocess.run(["ip", "netns", "delete", name], capture_output=True)
            subprocess.run(["umount", "-l", rootfs], capture_output=True)
            if upper.startswith(bundle):
                shutil.rmtree(bundle, ignore_errors=True)
            else:
                shutil.rmtree(rootfs, ignore_errors=True)
                shutil.rmtree(os.path.join(bundle, "work"), ignore_errors=True)

    def setup(self, command: list[str], env: dict[str, str], binds=(), stdout=None) -> int:
        """Run ``command`` with its writes going into the image layer: this machine's network (pip), no limits."""
        name = f"minddp-setup-{uuid.uuid4().hex[:8]}"
        return self._container(name, ["/"], self.layer, command, env, "/", list(binds), None, False, stdout,
                               None).exit_code

    def run(self, command: list[str], env: dict[str, str], binds=(), cwd: str = "/",
            cpus: float | None = None, memory_mb: int | None = None, stdout=None, timeout_s: float | None = None) -> Ran:
        """A fresh container from the image: ``command`` as root, Docker's confinement, a network namespace of
        its own, and a cgroup of ``cpus`` and ``memory_mb`` made outside it. Returns what it measured."""
        name = f"minddp-{uuid.uuid4().hex[:12]}"
        cgroup = Cgroup(cpus, memory_mb) if cpus or memory_mb else None
        upper = os.path.join(self.disk, "runs", name, "upper")
        if cgroup is None:
            return self._container(name, [self.layer, "/"], upper, command, env, cwd, list(binds), None, True,
                                   stdout, timeout_s)
        try:
            with cgroup.process_peak() as peak:
                ran = self._container(name, [self.layer, "/"], upper, command, env, cwd, list(binds), cgroup, True,
                                      stdout, timeout_s)
            ran.process_peak_mb = peak[0]
        finally:
            cgroup.remove()
        ran.cgroups_left = cgroup.everywhere()
        return ran

    def close(self, keep: bool = False) -> None:
        """Unmount the layers' file system; remove it too unless ``keep`` (a later run reuses the image)."""
        subprocess.run(["umount", "-l", self.disk], capture_output=True)
        if not keep:
            shutil.rmtree(self.workdir, ignore_errors=True)
        if self.owns_lock:
            release(self.lock)


# -- what the container is, seen from inside -------------------------------------------------------------------

PROBE = r"""
import errno, json, os, sys
sys.path.insert(0, sys.argv[1])
from grader import sandbox
status = dict(l.split(":", 1) for l in open("/proc/self/status") if ":" in l)
def attempt(fn):
    try:
        fn()
        return "allowed"
    except OSError as e:
        return errno.errorcode.get(e.errno, str(e.errno))
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
def call(*args):
    if libc.syscall(*args) != 0:
        raise OSError(ctypes.get_errno(), "")
cgroup_ro = ["ro" in l.split()[3].split(",") for l in open("/proc/self/mounts") if l.split()[2].startswith("cgroup")]
layers = sandbox.isolation_layers()
print(json.dumps({
    "CapEff": status["CapEff"].strip(), "Seccomp": status["Seccomp"].strip(), "uid": os.getuid(),
    "unshare": attempt(lambda: call(272, 0x00020000)), "mount": attempt(lambda: call(165, 0, 0, 0, 0, 0)),
    "chroot": attempt(lambda: os.chroot("/")), "clone3": attempt(lambda: call(435, 0, 0)),
    "cgroups_read_only": bool(cgroup_ro) and all(cgroup_ro),
    "layers": layers if isinstance(layers, str) else {"names": layers.names(), "why_not": layers.why_not},
}))
"""


def probe(python: str = "/usr/bin/python3") -> dict:
    """Run PROBE as root in a fresh container (the machine's own Python) and return what it saw."""
    image = Image()
    try:
        with tempfile.TemporaryFile() as out:
            ran = image.run([python, "-c", PROBE, HERE], {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin"}, binds=[HERE],
                            stdout=out)
            out.seek(0)
            text = out.read().decode("utf-8", "replace")
        if ran.exit_code != 0:
            raise RuntimeError(f"the probe exited with {ran.exit_code}:\n{text[-2000:]}")
        return json.loads(text.strip().splitlines()[-1])
    finally:
        image.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m autograder.container", description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=["probe"])
    parser.parse_args(argv)
    if os.geteuid() != 0:
        raise SystemExit("container.py runs as root (runc, mounts, cgroups)")
    seen = probe()
    print(json.dumps(seen, indent=1))
    expected = f"{capability_mask(docker_capabilities()):016x}"
    print(f"Docker's default capabilities: CapEff {expected}; inside: {seen['CapEff']}")
    return 0 if seen["CapEff"] == expected else 1


if __name__ == "__main__":
    sys.exit(main())
