"""Each bucket's averaged values are written back to .grad by a fut.then(...) continuation of its reduction, chained once every bucket is launched; finalize waits for the chained futures."""
from autograder.selftest.kinds import REDUCER, Function

EDITS = {REDUCER: [
    Function("Reducer.mark_bucket_ready", '''
def mark_bucket_ready(self, bucket_index: int) -> None:
    """Launch every ready bucket in index order; once the last one is launched, chain every bucket's
    write-back to .grad onto its future: it runs as soon as that bucket's reduction completes. (Not before:
    a backward whose reduction never finishes must leave .grad alone, as torch's DDP does.)"""
    while self.next_bucket < len(self.buckets) and self.buckets[self.next_bucket].pending == 0:
        self.all_reduce_bucket(self.buckets[self.next_bucket])
        self.next_bucket += 1
    if self.next_bucket == len(self.buckets):
        for bucket in self.buckets:
            bucket.future = bucket.future.then(lambda fut, bucket=bucket: self.write_back(bucket, fut.value()))


def write_back(self, bucket: Bucket, reduced: torch.Tensor) -> torch.Tensor:
    """Copy a reduced bucket into the .grad of its parameters that got a gradient on this rank (a parameter
    unused here waits for the usage counts: finalize_backward). Returns the reduced flat tensor."""
    views = bucket.views if reduced is bucket.buffer else bucket.laid_out(reduced)
    unused = set(self.unused)
    pairs = [(self.params[i].grad, view) for i, view in zip(bucket.variable_indices, views, strict=True)
             if i not in unused]
    if pairs:
        torch._foreach_copy_([grad for grad, _ in pairs], [view for _, view in pairs])
    return reduced
'''),
    Function("Reducer.all_reduce_bucket", '''
def all_reduce_bucket(self, bucket: Bucket) -> None:
    """Start the reduction of one bucket; ``bucket.future`` completes with the reduced flat tensor."""
    if self.comm_hook is None:
        bucket.buffer.mul_(1.0 / self.world_size)
        bucket.work = dist.all_reduce(bucket.buffer, group=self.process_group, async_op=True)
        bucket.future = bucket.work.get_future().then(lambda fut: fut.value()[0])  # all_reduce's is a list
    else:
        grad_bucket = GradBucket(bucket.index, bucket.buffer, [self.params[i] for i in bucket.variable_indices],
                                 is_last=bucket.index == len(self.buckets) - 1)
        bucket.future = self.comm_hook(self.comm_hook_state, grad_bucket)
'''),
    Function("Reducer.finalize_backward", '''
def finalize_backward(self) -> None:
    """End of backward: wait for every bucket (its continuation wrote its .grad), then the unused ones."""
    self.expect_autograd_hooks = False
    if self.next_bucket < len(self.buckets):
        for bucket in self.buckets[:self.next_bucket]:
            bucket.wait()
        return
    global_used = self.all_reduce_usage()
    torch.futures.wait_all([bucket.future for bucket in self.buckets])
    for index in self.unused:  # no gradient on this rank (Bonus A)
        if global_used is not None and not global_used[index]:
            continue  # unused on every rank: .grad stays as it was
        bucket_index, position = self.locators[index]
        bucket = self.buckets[bucket_index]
        reduced = bucket.future.value()
        views = bucket.views if reduced is bucket.buffer else bucket.laid_out(reduced)
        param = self.params[index]
        if param.grad is None:
            param.grad = views[position].clone()
        else:
            param.grad.copy_(views[position])
    self.require_finalize = False
'''),
]}
