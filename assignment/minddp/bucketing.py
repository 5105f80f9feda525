# GENERATED from solutions/minddp/bucketing.py by tools/assign.py (staff: edit that file, then `make assignment`).
# Part 2, Gradient bucketing (handout §2): this is your copy; edit the stubs (each `raise NotImplementedError`).
"""Part 2 — gradient bucketing (handout §2).

Small all-reduces are slow, so DDP packs many gradients into one *bucket* and reduces a bucket at a time.
The mapping from parameters to buckets is fixed before training, from the tensors' sizes alone, and it must
be exactly torch's: handout §2 asks you to reason out part of how torch makes it, and to find out the rest by
asking torch (``make probe-buckets``). Only tensor metadata is used (``numel``, ``element_size``, ``dtype``,
``device``), so meta tensors work.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

MiB = 1024 * 1024
DEFAULT_FIRST_BUCKET_BYTES = 1 * MiB  # torch's dist._DEFAULT_FIRST_BUCKET_BYTES
DEFAULT_BUCKET_CAP_BYTES = 25 * MiB  # torch's default bucket_cap_mb=25


def bucket_size_limits(bucket_cap_mb: float | None = None,
                       bucket_cap_mb_list: Sequence[float] | None = None) -> list[int]:
    """Byte limits [first bucket, every later bucket] with the meaning of torch DDP's arguments.

    - neither given: first bucket 1 MiB, cap 25 MiB (torch's defaults);
    - ``bucket_cap_mb=X``: every bucket, the first included, holds X MiB;
    - ``bucket_cap_mb_list=[first, cap]``: both set explicitly.
    """
    if bucket_cap_mb is not None and bucket_cap_mb_list is not None:
        raise ValueError("give bucket_cap_mb or bucket_cap_mb_list, not both")
    if bucket_cap_mb_list is not None:
        if len(bucket_cap_mb_list) == 0:
            raise ValueError("bucket_cap_mb_list must hold at least one size in MiB")
        mbs = list(bucket_cap_mb_list)
    elif bucket_cap_mb is not None:
        mbs = [bucket_cap_mb]
    else:
        return [DEFAULT_FIRST_BUCKET_BYTES, DEFAULT_BUCKET_CAP_BYTES]
    if any(mb < 0 for mb in mbs):
        raise ValueError(f"bucket sizes must be >= 0 MiB, got {mbs}")
    return [int(mb * MiB) for mb in mbs]


def reverse_order(num_params: int) -> list[int]:
    """Indices of ``num_params`` parameters in the order backward is assumed to produce them."""
    # YOUR CODE HERE: replace this raise.
    raise NotImplementedError("Part 2: reverse_order — see handout §2")


def compute_bucket_assignment(tensors: Sequence[torch.Tensor],
                              bucket_size_limits: Sequence[int],
                              order: Sequence[int] | None = None) -> list[list[int]]:
    """Assign tensors to buckets; return a list of buckets, each a list of indices into ``tensors``.

    ``order`` is the order tensors are visited in (default: ``reverse_order(len(tensors))``). Within a
    bucket, indices appear in visiting order. Handout §2 (R1-R6) says what must hold.
    """
    if not bucket_size_limits:
        raise ValueError("bucket_size_limits must hold at least one limit in bytes")
    if order is None:
        order = reverse_order(len(tensors))
    # YOUR CODE HERE: replace this raise.
    raise NotImplementedError("Part 2: compute_bucket_assignment — see handout §2")


def overlap_bytes(tensors: Sequence[torch.Tensor], buckets: Sequence[Sequence[int]],
                  ready_order: Sequence[int]) -> list[int]:
    """For each bucket, in index order: the bytes of gradient that backward still produces after DDP launches the
    bucket's all-reduce (what that all-reduce can overlap with), when backward produces the gradients of
    ``tensors`` one at a time in ``ready_order``. Handout §2 says what must hold.
    """
    # YOUR CODE HERE: replace this raise.
    raise NotImplementedError("Part 2: overlap_bytes — see handout §2")
