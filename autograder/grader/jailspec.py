"""What a jail is (``Jail``, the roots it may have) and how setting one up fails (``SandboxError``, ``_step``).

Separate so that every layer (mounts, uids, seccomp) can take a ``Jail`` and raise ``SandboxError`` without
importing ``sandbox.py``, which ties the layers together: the imports run one way. It imports nothing of
the sandbox.
"""

from __future__ import annotations

from dataclasses import dataclass


class SandboxError(RuntimeError):
    """Isolation could not be set up (the message says what); a half-isolated process must exit."""


@dataclass(frozen=True)
class Jail:
    uid: int
    gid: int
    binds: tuple[tuple[str, str], ...] = ()     # (source dir, target path): bind-mounted READ-ONLY at target
    writable: tuple[tuple[str, str], ...] = ()  # (source dir, target path): bind-mounted read-write
    readable: tuple[str, ...] = ()              # dirs that must stay readable at their own paths
    tmpfs_mb: int = 32                          # size limit of each private tmpfs
    seccomp: bool = True                        # forbid creating processes (see install_seccomp)
    root: str = "empty"                         # "empty": a root built from nothing; "host": the host's, read-only;
                                                # "chroot": ``tree`` (jailtree.py), no mounts; "none": the host's as is
    max_data_mb: float | None = None            # RLIMIT_DATA (soft = hard), counts what the fork inherited
    max_processes: int | None = None            # RLIMIT_NPROC (soft = hard) for the uid: processes AND threads
    tree: str | None = None                     # root="chroot": the folder that becomes / (root's, prepared)
    workdir: str | None = None                  # root="chroot"/"none": the working folder (inside the tree)


ROOTS = ("empty", "host", "chroot", "none")  # the first two need mount namespaces (CAP_SYS_ADMIN)
NAMESPACE_ROOTS = ("empty", "host")


def _step(what: str, fn, *args):
    """Run one set-up step; any failure becomes a SandboxError that says which step failed."""
    try:
        return fn(*args)
    except SandboxError:
        raise
    except (OSError, ValueError) as e:
        raise SandboxError(f"cannot {what}: {e}") from e
