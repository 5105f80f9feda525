"""Buckets each (dtype, device) group on its own, then sorts all buckets by when they were sealed."""
from autograder.selftest.kinds import BUCKETING, Function

EDITS = {BUCKETING: [
    Function("reverse_order", '''
def reverse_order(num_params: int) -> list[int]:
    """Indices of ``num_params`` parameters in the order backward is assumed to produce them."""
    return list(reversed(range(num_params)))
'''),
    Function("compute_bucket_assignment", '''
def compute_bucket_assignment(tensors: Sequence[torch.Tensor],
                              bucket_size_limits: Sequence[int],
                              order: Sequence[int] | None = None) -> list[list[int]]:
    """Assign tensors to buckets; return a list of buckets, each a list of indices into ``tensors``."""
    if not bucket_size_limits:
        raise ValueError("bucket_size_limits must hold at least one limit in bytes")
    if order is None:
        order = reverse_order(len(tensors))
    # Groups are independent: split the visit by (dtype, device), remembering each tensor's visit step.
    groups: dict[tuple, list[tuple[int, int]]] = {}  # first-seen order
    for step, index in enumerate(order):
        tensor = tensors[index]
        groups.setdefault((tensor.dtype, tensor.device), []).append((step, index))
    # A sealed bucket is numbered by the step that sealed it; the unfinished ones come after all of
    # them, the most recently first-seen group first.
    keyed = []
    for rank, members in enumerate(groups.values()):
        bucket, nbytes, sealed = [], 0, 0
        for step, index in members:
            bucket.append(index)
            nbytes += tensors[index].numel() * tensors[index].element_size()
            if nbytes >= bucket_size_limits[min(sealed, len(bucket_size_limits) - 1)]:
                keyed.append(((0, step), bucket))
                bucket, nbytes, sealed = [], 0, sealed + 1
        if bucket:
            keyed.append(((1, -rank), bucket))
    keyed.sort(key=lambda entry: entry[0])
    return [bucket for _, bucket in keyed]
'''),
]}
