"""overlap_bytes as a replay of backward: gradients arrive one by one, and the next bucket in index order is
launched while it has nothing missing (no positions, no suffix sums)."""
from autograder.selftest.kinds import BUCKETING, Function

EDITS = {BUCKETING: [
    Function("overlap_bytes", '''
def overlap_bytes(tensors: Sequence[torch.Tensor], buckets: Sequence[Sequence[int]],
                  ready_order: Sequence[int]) -> list[int]:
    """For each bucket, in index order: the bytes backward still produces after the bucket is launched."""
    size = [t.numel() * t.element_size() for t in tensors]
    total = sum(size[i] for i in ready_order)
    bucket_of = {i: b for b, bucket in enumerate(buckets) for i in bucket}
    missing = [len(bucket) for bucket in buckets]
    produced, next_bucket, launched_at = 0, 0, []
    for i in ready_order:
        produced += size[i]
        missing[bucket_of[i]] -= 1
        while next_bucket < len(buckets) and missing[next_bucket] == 0:
            launched_at.append(produced)
            next_bucket += 1
    return [total - at for at in launched_at]
'''),
]}
