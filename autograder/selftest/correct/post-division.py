"""Copies raw gradients into the bucket, all-reduces the SUM and divides by world size after the wait."""
from autograder.selftest.kinds import REDUCER, SCALE_BUCKET, Function

EDITS = {REDUCER: [
    Function("Reducer.mark_variable_ready", '''
def mark_variable_ready(self, index: int) -> None:
    """Copy parameter ``index``'s raw gradient into its bucket; the average is taken after the all-reduce."""
    bucket_index, position = self.locators[index]
    bucket = self.buckets[bucket_index]
    grad, slot = self.params[index].grad, bucket.views[position]
    if grad is None:
        slot.zero_()
    else:
        slot.copy_(grad)  # raw: with or without a comm hook
    bucket.pending -= 1
    if bucket.pending == 0:
        self.mark_bucket_ready(bucket_index)
'''),
    Function("Reducer.finalize_backward", '''
def finalize_backward(self) -> None:
    """End of backward: wait for every bucket, write the averaged gradients back, reset."""
    self.expect_autograd_hooks = False
    if self.next_bucket < len(self.buckets):
        for bucket in self.buckets[:self.next_bucket]:
            bucket.wait()
        return
    global_used = self.all_reduce_usage()
    for bucket in self.buckets:
        reduced = bucket.wait()
        if self.comm_hook is None:
            reduced.div_(self.world_size)  # SUM -> mean; a comm hook's result is already final
        shaped = bucket.laid_out(reduced)
        for index, value in zip(bucket.variable_indices, shaped):
            param = self.params[index]
            if global_used is not None and not global_used[index]:
                continue
            if param.grad is None:
                param.grad = value.clone()
            else:
                param.grad.copy_(value)
    self.require_finalize = False
'''),
    (SCALE_BUCKET, ""),
]}
