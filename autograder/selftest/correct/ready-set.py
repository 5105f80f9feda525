"""Tracks the set of ready parameters instead of per-bucket counters; a bucket launches when all its parameters are in it;
multiplies each gradient by 1/world_size while copying it in, as torch does (not the whole bucket at launch)."""
from autograder.selftest.kinds import REDUCER, SCALE_BUCKET, Function

EDITS = {REDUCER: [
    Function("Reducer.prepare_for_backward", '''
def prepare_for_backward(self, unused: Sequence[int] = ()) -> None:
    """Reset per-iteration state before a synchronised backward (``unused``: ready at its first hook)."""
    self.record_usage(unused)
    if self.require_finalize:
        raise RuntimeError(UNFINISHED_REDUCTION)
    self.ready: set[int] = set()  # parameters whose gradient is in its bucket this iteration
    for bucket in self.buckets:
        bucket.work = bucket.future = None
    self.next_bucket = 0
    self.expect_autograd_hooks = True
    self.unused = list(unused)
'''),
    Function("Reducer.mark_variable_ready", '''
def mark_variable_ready(self, index: int) -> None:
    bucket_index, position = self.locators[index]
    grad, slot = self.params[index].grad, self.buckets[bucket_index].views[position]
    if grad is None:
        slot.zero_()
    elif self.comm_hook is None:
        torch.mul(grad, 1.0 / self.world_size, out=slot)
    else:
        slot.copy_(grad)
    self.ready.add(index)
    self.mark_bucket_ready(bucket_index)
'''),
    Function("Reducer.mark_bucket_ready", '''
def mark_bucket_ready(self, bucket_index: int) -> None:
    """Launch, in index order, every bucket whose parameters are all ready."""
    while (self.next_bucket < len(self.buckets)
           and self.ready.issuperset(self.buckets[self.next_bucket].variable_indices)):
        self.all_reduce_bucket(self.buckets[self.next_bucket])
        self.next_bucket += 1
'''),
    (SCALE_BUCKET, ""),
]}
