"""Only counts gradients as they arrive; when a bucket is complete, fills its buffer with one torch._foreach_copy_."""
from autograder.selftest.kinds import REDUCER, Function

EDITS = {REDUCER: [
    Function("Reducer.mark_variable_ready", '''
def mark_variable_ready(self, index: int) -> None:
    """Count parameter ``index`` as ready; the bucket's buffer is filled when its last gradient arrives."""
    bucket_index, _ = self.locators[index]
    bucket = self.buckets[bucket_index]
    bucket.pending -= 1
    if bucket.pending == 0:
        self.fill_bucket(bucket)
        self.mark_bucket_ready(bucket_index)


def fill_bucket(self, bucket: Bucket) -> None:
    """Copy every gradient of a complete bucket into its slot with one _foreach_copy_ (a parameter without a
    gradient, unused on this rank, contributes zeros)."""
    slots, grads = [], []
    for index, view in zip(bucket.variable_indices, bucket.views, strict=True):
        grad = self.params[index].grad
        if grad is None:
            view.zero_()
        else:
            slots.append(view)
            grads.append(grad)
    if grads:  # all of a bucket's parameters may be unused here
        torch._foreach_copy_(slots, grads)
'''),
]}
