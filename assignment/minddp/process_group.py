# GENERATED from solutions/minddp/process_group.py by tools/assign.py (staff: edit that file, then `make assignment`).
# Part 1, The process group (handout §1): this is your copy; edit the stubs (each `raise NotImplementedError`).
"""Part 1 — the process group (handout §1).

Every DDP process runs the same script. A launcher (``torchrun``, or ``minddp.launch`` here) tells each
process who it is through environment variables:

=================  =========================================================================
``RANK``           global rank, 0 .. WORLD_SIZE-1
``WORLD_SIZE``     total number of processes W
``LOCAL_RANK``     rank on this machine (picks the GPU), 0 .. LOCAL_WORLD_SIZE-1
``LOCAL_WORLD_SIZE`` processes per machine (every machine runs the same number)
``MASTER_ADDR``    address of the machine that hosts rank 0: everyone meets there
``MASTER_PORT``    the port they meet on
=================  =========================================================================

Ranks are laid out node by node: with 2 machines of 2 GPUs, global ranks 0, 1 live on node 0 and
2, 3 on node 1, and each node's local ranks are 0, 1.
"""

from __future__ import annotations

import gc
import os
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta

import torch
import torch.distributed as dist

TORCHRUN_VARIABLES = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")
DEFAULT_TIMEOUT = timedelta(seconds=60)


class DistEnvError(ValueError):
    """The torchrun environment is missing a variable or holds an invalid value."""


@dataclass(frozen=True)
class DistEnv:
    """What a process learns about its place in the job from the torchrun environment."""

    rank: int
    world_size: int
    local_rank: int
    local_world_size: int
    master_addr: str
    master_port: int

    @property
    def node_rank(self) -> int:
        """Index of the machine this process runs on."""
        return node_and_local_rank(self.rank, self.local_world_size)[0]

    @property
    def num_nodes(self) -> int:
        return self.world_size // self.local_world_size


def node_and_local_rank(rank: int, local_world_size: int) -> tuple[int, int]:
    """Global rank -> (node index, local rank), ranks laid out node by node."""
    # YOUR CODE HERE: replace this raise.
    raise NotImplementedError("Part 1: node_and_local_rank — see handout §1")


def global_rank(node_rank: int, local_rank: int, local_world_size: int) -> int:
    """(node index, local rank) -> global rank; the inverse of ``node_and_local_rank``."""
    # YOUR CODE HERE: replace this raise.
    raise NotImplementedError("Part 1: global_rank — see handout §1")


def torchrun_env(rank: int, world_size: int, local_world_size: int,
                 master_addr: str, master_port: int) -> dict[str, str]:
    """The six variables torchrun gives the process with global rank ``rank`` (all values are strings)."""
    # YOUR CODE HERE: replace this raise.
    raise NotImplementedError("Part 1: torchrun_env — see handout §1")


def read_torchrun_env(environ: Mapping[str, str] | None = None) -> DistEnv:
    """Read and validate the torchrun variables from ``environ`` (default ``os.environ``).

    Raises ``DistEnvError`` whose message names the variable to fix when one is missing, is not an
    integer where an integer is needed, is out of range, or contradicts the others.
    """
    environ = os.environ if environ is None else environ
    # YOUR CODE HERE: replace this raise.
    raise NotImplementedError("Part 1: read_torchrun_env — see handout §1")


def _int_variable(environ: Mapping[str, str], name: str, minimum: int) -> int:
    try:
        value = int(environ[name])
    except ValueError:
        raise DistEnvError(f"environment variable {name}={environ[name]!r} is not an integer") from None
    if value < minimum:
        raise DistEnvError(f"environment variable {name}={value} must be >= {minimum}")
    return value


def init_process_group(backend: str | None = None, timeout: timedelta = DEFAULT_TIMEOUT) -> DistEnv:
    """Join the job described by the torchrun environment; return this process's ``DistEnv``.

    ``backend`` defaults to nccl when CUDA is available, else gloo. ``timeout`` bounds every collective,
    so a mismatched collective fails with an error instead of hanging for 30 minutes.
    """
    # YOUR CODE HERE: replace this raise.
    raise NotImplementedError("Part 1: init_process_group — see handout §1")


def destroy_process_group() -> None:
    """Leave the job (safe to call when no group was initialised)."""
    # YOUR CODE HERE: replace this raise.
    raise NotImplementedError("Part 1: destroy_process_group — see handout §1")
