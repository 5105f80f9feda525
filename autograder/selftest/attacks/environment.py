"""Attacks on what a worker can see of the machine around it: the reference's and the grader's sources
anywhere on the file system (loaders that exec them), other processes' environments and command lines, its
own open fds, and the network beyond its own loopback."""

from __future__ import annotations

import os

from autograder.selftest.attacks.shared import ANSWERS, EVERY_PART, PIDS, REPO, absent, solution, stub
from autograder.selftest.kinds import BUCKETING, PROCESS_GROUP, REDUCER, Case

# ============================================================================================================
# Loaders of the reference solution
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
# What a worker sees: files, environments, fds; the network
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
# The jail, walked as the student's uid: nothing only root may read is in it, in any configuration
# ============================================================================================================

def forbidden_files() -> dict:
    """What only root may read, as the walker recognises a copy of it: the size and sha256 of every file of the
    grader's package (the hidden inputs' code among them) and of the reference solution, but those the release
    holds too (students have them)."""
    import hashlib

    from autograder.assemble import release_files
    released = {hashlib.sha256(data).hexdigest() for data in release_files().values()}
    found: dict[str, int] = {}
    for folder in (os.path.join(REPO, "autograder", "grader"), os.path.join(REPO, "solutions", "minddp"),
                   os.path.join(REPO, "solutions", ANSWERS)):
        paths = [folder] if os.path.isfile(folder) else [os.path.join(folder, n) for n in sorted(os.listdir(folder))]
        for path in paths:
            if not path.endswith((".py", ".json")):
                continue
            with open(path, "rb") as f:
                data = f.read()
            if data and hashlib.sha256(data).hexdigest() not in released:
                found[hashlib.sha256(data).hexdigest()] = len(data)
    return {"sizes": sorted(set(found.values())), "digests": sorted(found)}


# Every readable file of the worker's file system (its own code folder aside), against what only root may
# read: a copy of the grader's or the reference's files (by content), of the hidden inputs' secret (64 hex
# digits), of the reference cache (its first bytes), or a file of their names. Any: import fails, saying which.
JAIL_WALK = r'''


def _walk_the_jail(forbidden, top="/", least=1000):
    import hashlib
    import os
    import re
    own = os.path.dirname(os.path.abspath(__file__))
    sizes, digests = set(forbidden["sizes"]), set(forbidden["digests"])
    found, seen, folders = [], 0, [top]
    while folders:
        try:
            entries = list(os.scandir(folders.pop()))
        except OSError:
            continue
        for entry in entries:
            if entry.path in ("/proc", "/sys", "/dev", own):
                continue
            try:
                if entry.is_dir(follow_symlinks=False):
                    folders.append(entry.path)
                    continue
                if not entry.is_file(follow_symlinks=False):
                    continue
                size = entry.stat(follow_symlinks=False).st_size
            except OSError:
                continue
            seen += 1
            named = "hidden-secret" in entry.name or "reference-cache" in entry.name
            if not (named or size in sizes or size in (64, 65) or size > 1 << 20):
                continue
            try:
                with open(entry.path, "rb") as f:
                    data = f.read(16 if size > 1 << 20 and size not in sizes else size)
            except OSError:
                continue  # not readable: as it must be
            if named or hashlib.sha256(data).hexdigest() in digests or re.fullmatch(rb"[0-9a-f]{64}\n?", data) \
                    or data.startswith(b'{"fingerprint"'):
                found.append(entry.path)
    if found or seen < least:  # (a walk that saw less than the Python installation walked nothing)
        raise AssertionError(f"JAIL-WALK: of {seen} files, these are root's only: {found[:20]}")


_walk_the_jail(FORBIDDEN)
'''


def walker_answers() -> str:
    """answers.py of the solutions, walking the jail when a worker imports it (Part 6: once per grading)."""
    return solution(ANSWERS) + f"\n\nFORBIDDEN = {forbidden_files()!r}\n" + JAIL_WALK


LOADER_ABOUT = ("stubs whose process_group.py, reducer.py and answers.py are loaders: each searches what a "
                "worker can read (paths on the grader's command lines, /proc/*/cwd, well-known folders, a walk "
                "of /) for the reference's copy of itself (source or .pyc) and execs it; nothing may score")


ATTACKS: list = [
    # -- loaders ---------------------------------------------------------------------------------------------
    Case("ref-loader", LOADER_ABOUT, start="stubs",
         edits={PROCESS_GROUP: loader(PROCESS_GROUP), REDUCER: loader(REDUCER), ANSWERS: loader(ANSWERS)},
         zero=EVERY_PART, full=(), score=(0, 0)),
    # -- what a worker sees: files, environments, fds; the network -------------------------------------------
    Case("recon-visible", "stubs whose process_group.py reports, at import, what a worker can see: readable "
         "reference or grader sources anywhere, environments other than its own, the grader's command line, "
         "its open fds", start="stubs", edits={PROCESS_GROUP: stub(PROCESS_GROUP) + RECON},
         zero=EVERY_PART, full=(), score=(0, 0), says={"1": "RECON"},
         check=absent("REFERENCE-READABLE", "FOREIGN-ENV", why="a worker can read what is not its own")),
    Case("net-reach", "stubs whose bucketing.py tries the internet, the cloud metadata address, the host's "
         "loopback services, raw sockets and every Unix socket file it can find", start="stubs",
         edits={BUCKETING: stub(BUCKETING) + NET_PROBE}, zero=EVERY_PART, full=(), score=(0, 0),
         says={"2": "NETPROBE"}, check=absent("REACHED", why="a worker reached something beyond its own loopback")),
    Case("jail-walk", "the solutions, whose answers.py walks the whole file system its worker sees, as the student's "
         "uid, and fails on any file it can read that only root may (the grader's or the reference's files, the "
         "secret, the reference cache, by content or name): none, in either configuration (make limits walks "
         "gradescope-sim's privileged one too)", edits={ANSWERS: walker_answers}, checks=("6.1",), hostile=False),

]
