"""How a grading's student workers are isolated: the layers this machine allows, the folders a worker sees,
the jail it enters (SECURITY.md is the trust model; ``sandbox.py`` sets each layer up in the worker).

The layers come from what the kernel lets this (root) process do, tried for real (``layers.isolation_layers``):

* always: a uid of its own, no groups, no capabilities, ``no_new_privs``, resource limits, the seccomp filter,
  and a folder that only that uid may write, made afresh for each set of workers and removed after the check
  (check 1.4's rendezvous store host gets a second uid of its own);
* with ``CAP_SYS_ADMIN`` (a VM, a privileged container): mount, IPC and network namespaces and an empty root
  built at fork time (``root="empty"``): the code to grade and the harness are bound read-only at fixed paths;
* without it but with ``CAP_SYS_CHROOT`` (a default Docker container: Gradescope): a chroot into the tree
  setup.sh built (``jailtree.py``); the code and the harness are copied into the grading's folder in it;
* with neither: the host's file system as it is, where only root-only modes keep the grader's files closed.
"""

from __future__ import annotations

import os
import shutil
import tempfile

from grader import jailtree, sandbox

NAMESPACE_CODE, NAMESPACE_HARNESS = "/tmp/minddp/code", "/tmp/minddp/harness"  # the binds of the empty root
MAX_THREADS = 1024  # RLIMIT_NPROC of the grading's uid: its processes and threads, all workers together


class Isolation:
    """One grading's isolation: ``layers`` (``sandbox.Layers``), its uid, and where its workers' files are."""

    def __init__(self, layers: sandbox.Layers, tree: str, harness: str):
        self.layers, self.harness = layers, harness
        self.uid = sandbox.pick_uid()
        self.store_uid = sandbox.pick_uid(avoid=(self.uid,))  # check 1.4's store host
        self.root = layers.root
        self.tree = tree
        self.missing = list(layers.why_not)
        self.tree_note = ""
        self.lock = None  # chroot: the tree's lock, held for the whole grading
        self.area = ""  # chroot / none: this grading's folder (as this process sees it)
        self.placed: dict[str, str] = {}  # a code folder -> where the workers see it
        self.scratch = ""  # chroot / none: the folder the current workers may write (and their home)
        self.scratch_seen = ""  # chroot: where they see it (the tree's /tmp, or /scratch)
        if self.root == "chroot":
            try:
                self.lock = jailtree.lock(tree)
                built, manifest = jailtree.ready(tree)
                self.tree_note = ("built now: " if built else "") + jailtree.describe(manifest)
                self.scratch_seen = manifest["scratch"]
            except (OSError, KeyError, jailtree.TreeError) as error:
                self.missing.append(("chroot", f"the jail tree at {tree} could not be made ready: {error}"))
                self.root = "none"
                self._unlock()
        if self.root != "empty":
            self.area = self._make_area()
            self.harness_seen = self.place(harness, "harness")
            self.scratch = tree + self.scratch_seen if self.root == "chroot" else os.path.join(self.area, "tmp")

    def _make_area(self) -> str:
        """This grading's folder: root's, readable by its uid's group alone (other gradings' uids see nothing)."""
        if self.root == "chroot":
            area = os.path.join(self.tree, jailtree.AREA, str(self.uid))
            os.mkdir(area, 0o750)
        else:
            area = tempfile.mkdtemp(prefix=f"minddp-{self.uid}-", dir="/tmp")
        os.chown(area, 0, self.uid)
        os.chmod(area, 0o750)
        return area

    def seen(self, path: str) -> str:
        """``path`` (in this grading's folder) as a worker sees it."""
        return "/" + os.path.relpath(path, self.tree) if self.root == "chroot" else path

    def place(self, folder: str, name: str) -> str:
        """Where a worker finds ``folder``: copied once into the grading's folder (chroot, none)."""
        if self.root == "empty":
            return NAMESPACE_HARNESS if folder == self.harness else NAMESPACE_CODE
        if folder not in self.placed:
            target = os.path.join(self.area, name)
            shutil.copytree(folder, target, ignore=shutil.ignore_patterns("__pycache__"))
            for root, dirs, files in os.walk(target):
                for entry in dirs:
                    os.chmod(os.path.join(root, entry), 0o755)
                for entry in files:
                    os.chmod(os.path.join(root, entry), 0o644)
            self.placed[folder] = self.seen(target)
        return self.placed[folder]

    def code_paths(self, folder: str, name: str) -> list[str]:
        """The workers' import folders for the code in ``folder``: the code, then the harness."""
        harness = NAMESPACE_HARNESS if self.root == "empty" else self.harness_seen
        return [self.place(folder, "code-" + name), harness]

    def jail(self, folder: str, seccomp: bool = True) -> dict:
        """The ``sandbox.Jail`` (as JSON for the fork server) of a worker that runs the code in ``folder``."""
        jail = {"uid": self.uid, "gid": self.uid, "root": self.root, "seccomp": seccomp and self.layers.seccomp,
                "max_processes": MAX_THREADS}
        if self.root == "empty":
            return {**jail, "binds": [[folder, NAMESPACE_CODE], [self.harness, NAMESPACE_HARNESS]],
                    "readable": python_dirs()}
        return {**jail, "tree": self.tree if self.root == "chroot" else None, "workdir": self.seen(self.scratch)}

    def store_jail(self) -> dict:
        """The jail of check 1.4's rendezvous store host: like a worker's, with a uid of its own (the ranks can
        neither signal it nor read it), and nothing to write."""
        jail = {**self.jail(self.harness), "uid": self.store_uid, "gid": self.store_uid}
        if self.root != "empty":
            jail["workdir"] = "/" if self.root == "chroot" else self.area
        return jail

    def env(self) -> dict[str, str]:
        """What differs in a worker's environment: its home and temporary folder (/tmp, in a jail, as anywhere)."""
        if self.root == "empty" or self.seen(self.scratch) == "/tmp":
            return {}
        return {"HOME": self.seen(self.scratch), "TMPDIR": self.seen(self.scratch)}

    def fresh_scratch(self) -> None:
        """Before a set of workers starts: the folder they may write (chroot, none; the empty root gives each
        worker a tmpfs), new and empty, its uid's alone. Whatever earlier workers left is gone with them."""
        if self.root != "empty":
            self._clear(self.uid)  # (not check 1.4's store host: it serves the ranks about to start)
            os.mkdir(self.scratch, 0o700)
            os.chown(self.scratch, self.uid, self.uid)

    def end_check(self) -> None:
        """After a check: every process of its uids is killed, and what they wrote removed."""
        sandbox.kill_uid(self.store_uid)
        sandbox.reap_orphans(self.store_uid)
        self._clear(self.uid)

    def _clear(self, uid: int) -> None:
        sandbox.kill_uid(uid)
        sandbox.reap_orphans(uid)  # the grader is their subreaper; zombies count towards NPROC
        if self.scratch:
            sandbox.remove_tree(self.scratch)

    def close(self) -> None:
        if self.area:
            sandbox.remove_tree(self.area)
        if self.root == "chroot":
            sandbox.remove_tree(self.scratch)
        self._unlock()

    def _unlock(self) -> None:
        if self.lock is not None:
            self.lock.close()
            self.lock = None

    def layer_names(self, uid: bool = True) -> list[str]:
        names = [f"uid {self.uid if uid else 'of its own'} (no capabilities, no_new_privs, limits)"]
        names += ["seccomp"] if self.layers.seccomp else []
        built = " built now" if self.tree_note.startswith("built now") else ""  # setup.sh's was missing or stale
        names += {"empty": ["namespaces: mount (empty root), IPC, network"], "chroot": [f"chroot ({self.tree}{built})"],
                  "none": []}[self.root]
        return names

    def describe(self, uid: bool = True) -> str:
        """One line: the layers in force and those missing, with why (``uid``: with the uid's number, which
        differs from grading to grading)."""
        missing = "; ".join(f"{layer}: {why}" for layer, why in self.missing
                            if not (layer == "chroot" and self.root == "empty"))
        return "isolation: " + ", ".join(self.layer_names(uid)) + (f" (missing: {missing})" if missing else "")


def python_dirs() -> list[str]:
    """The Python installation student workers import from (kept readable inside the empty root)."""
    import sys
    import sysconfig
    dirs = {sys.prefix, sys.base_prefix, *sysconfig.get_paths().values()}
    return sorted(d for d in dirs if os.path.isdir(d))
