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
    # BEGIN SOLUTION
    return list(range(num_params - 1, -1, -1))
    # END SOLUTION


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
    # BEGIN SOLUTION
    open_buckets: dict[tuple, list[int]] = {}  # (dtype, device) -> indices in the group's open bucket
    open_bytes: dict[tuple, int] = {}
    sealed_count: dict[tuple, int] = {}  # how many buckets each group has sealed: picks its next limit
    buckets: list[list[int]] = []
    for index in order:
        tensor = tensors[index]
        group = (tensor.dtype, tensor.device)
        if group not in open_buckets:
            open_buckets[group], open_bytes[group], sealed_count[group] = [], 0, 0
        open_buckets[group].append(index)
        open_bytes[group] += tensor.numel() * tensor.element_size()
        limit = bucket_size_limits[min(sealed_count[group], len(bucket_size_limits) - 1)]
        if open_bytes[group] >= limit:
            buckets.append(open_buckets[group])
            open_buckets[group], open_bytes[group] = [], 0
            sealed_count[group] += 1
    for group in reversed(list(open_buckets)):  # dicts keep first-seen order; torch closes the newest first
        if open_buckets[group]:
            buckets.append(open_buckets[group])
    return buckets
    # END SOLUTION


def overlap_bytes(tensors: Sequence[torch.Tensor], buckets: Sequence[Sequence[int]],
                  ready_order: Sequence[int]) -> list[int]:
    """For each bucket, in index order: the bytes of gradient that backward still produces after DDP launches the
    bucket's all-reduce (what that all-reduce can overlap with), when backward produces the gradients of
    ``tensors`` one at a time in ``ready_order``. Handout §2 says what must hold.
    """
    # BEGIN SOLUTION
    position = {index: k for k, index in enumerate(ready_order)}
    left_after = [0] * len(ready_order)  # left_after[k]: bytes produced after the k-th gradient
    for k in range(len(ready_order) - 2, -1, -1):
        tensor = tensors[ready_order[k + 1]]
        left_after[k] = left_after[k + 1] + tensor.numel() * tensor.element_size()
    result, launched = [], -1
    for bucket in buckets:
        # All ranks launch the buckets in index order: a complete bucket waits for its predecessors' launch.
        launched = max(launched, *(position[index] for index in bucket))
        result.append(left_after[launched])
    return result
    # END SOLUTION
