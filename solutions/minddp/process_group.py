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
    # BEGIN SOLUTION
    return divmod(rank, local_world_size)
    # END SOLUTION


def global_rank(node_rank: int, local_rank: int, local_world_size: int) -> int:
    """(node index, local rank) -> global rank; the inverse of ``node_and_local_rank``."""
    # BEGIN SOLUTION
    return node_rank * local_world_size + local_rank
    # END SOLUTION


def torchrun_env(rank: int, world_size: int, local_world_size: int,
                 master_addr: str, master_port: int) -> dict[str, str]:
    """The six variables torchrun gives the process with global rank ``rank`` (all values are strings)."""
    # BEGIN SOLUTION
    _, local_rank = node_and_local_rank(rank, local_world_size)
    return {
        "RANK": str(rank),
        "WORLD_SIZE": str(world_size),
        "LOCAL_RANK": str(local_rank),
        "LOCAL_WORLD_SIZE": str(local_world_size),
        "MASTER_ADDR": master_addr,
        "MASTER_PORT": str(master_port),
    }
    # END SOLUTION


def read_torchrun_env(environ: Mapping[str, str] | None = None) -> DistEnv:
    """Read and validate the torchrun variables from ``environ`` (default ``os.environ``).

    Raises ``DistEnvError`` whose message names the variable to fix when one is missing, is not an
    integer where an integer is needed, is out of range, or contradicts the others.
    """
    environ = os.environ if environ is None else environ
    # BEGIN SOLUTION
    missing = [name for name in TORCHRUN_VARIABLES if not environ.get(name)]
    if missing:
        raise DistEnvError(f"environment variable {missing[0]} is not set; launch with torchrun or "
                           f"minddp.launch, which set {', '.join(TORCHRUN_VARIABLES)}")
    world_size = _int_variable(environ, "WORLD_SIZE", minimum=1)
    local_world_size = _int_variable(environ, "LOCAL_WORLD_SIZE", minimum=1)
    rank = _int_variable(environ, "RANK", minimum=0)
    local_rank = _int_variable(environ, "LOCAL_RANK", minimum=0)
    master_port = _int_variable(environ, "MASTER_PORT", minimum=1)
    if rank >= world_size:
        raise DistEnvError(f"RANK={rank} must be smaller than WORLD_SIZE={world_size}")
    if local_world_size > world_size or world_size % local_world_size:
        raise DistEnvError(f"LOCAL_WORLD_SIZE={local_world_size} must divide WORLD_SIZE={world_size} "
                           "(every node runs the same number of processes)")
    if local_rank >= local_world_size:
        raise DistEnvError(f"LOCAL_RANK={local_rank} must be smaller than LOCAL_WORLD_SIZE={local_world_size}")
    if local_rank != node_and_local_rank(rank, local_world_size)[1]:
        raise DistEnvError(f"LOCAL_RANK={local_rank} contradicts RANK={rank} with LOCAL_WORLD_SIZE="
                           f"{local_world_size}: ranks are laid out node by node")
    if master_port > 65535:
        raise DistEnvError(f"MASTER_PORT={master_port} is not a TCP port (1..65535)")
    return DistEnv(rank, world_size, local_rank, local_world_size, environ["MASTER_ADDR"], master_port)
    # END SOLUTION


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
    # BEGIN SOLUTION
    env = read_torchrun_env()
    if backend is None:
        backend = "nccl" if torch.cuda.is_available() else "gloo"
    if backend == "nccl":
        torch.cuda.set_device(env.local_rank)  # one GPU per local rank
    dist.init_process_group(backend, init_method="env://", rank=env.rank, world_size=env.world_size,
                            timeout=timeout)
    return env
    # END SOLUTION


def destroy_process_group() -> None:
    """Leave the job (safe to call when no group was initialised)."""
    # BEGIN SOLUTION
    if dist.is_initialized():
        gc.collect()  # free tensors and pending work first: gloo can abort at exit if they outlive the group
        dist.destroy_process_group()
    # END SOLUTION
