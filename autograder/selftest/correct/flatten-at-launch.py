"""No persistent flat buffer: keeps per-parameter gradient copies, flattens them when the bucket launches."""
from autograder.selftest.kinds import REDUCER, Function

EDITS = {REDUCER: [
    ("from torch._utils import _unflatten_dense_tensors",
     "from torch._utils import _flatten_dense_tensors, _unflatten_dense_tensors"),
    Function("Bucket", '''
@dataclass
class Bucket:
    """The gradients of some parameters, all-reduced at once as one flat tensor."""

    index: int
    variable_indices: list[int]
    grads: list  # this iteration's gradient copies, in bucket order (None: not ready yet)
    pending: int = 0
    buffer: torch.Tensor | None = None  # made at launch by flattening ``grads``
    work: dist.Work | None = None
    future: torch.futures.Future | None = None

    def wait(self) -> torch.Tensor:
        if self.future is not None:
            return self.future.wait()
        self.work.wait()
        return self.buffer
'''),
    Function("Reducer.build_buckets", '''
def build_buckets(self, bucket_indices: Sequence[Sequence[int]]) -> None:
    self.buckets, self.locators = [], {}
    for bucket_index, indices in enumerate(bucket_indices):
        for position, i in enumerate(indices):
            self.locators[i] = (bucket_index, position)
        self.buckets.append(Bucket(bucket_index, list(indices), [None] * len(indices)))
'''),
    Function("Reducer.mark_variable_ready", '''
def mark_variable_ready(self, index: int) -> None:
    bucket_index, position = self.locators[index]
    bucket = self.buckets[bucket_index]
    param = self.params[index]
    if param.grad is None:
        copy = torch.zeros_like(param)  # unused here: contributes zeros
    elif self.comm_hook is None:
        copy = param.grad * (1.0 / self.world_size)  # a new tensor, so .grad may change later
    else:
        copy = param.grad.clone()
    bucket.grads[position] = copy
    bucket.pending -= 1
    if bucket.pending == 0:
        self.mark_bucket_ready(bucket_index)
'''),
    Function("Reducer.all_reduce_bucket", '''
def all_reduce_bucket(self, bucket: Bucket) -> None:
    bucket.buffer = _flatten_dense_tensors(bucket.grads)
    bucket.grads = [None] * len(bucket.grads)  # the flat tensor has them now
    if self.comm_hook is None:
        bucket.work = dist.all_reduce(bucket.buffer, group=self.process_group, async_op=True)
    else:
        params = [self.params[i] for i in bucket.variable_indices]
        bucket.future = self.comm_hook(self.comm_hook_state, GradBucket(
            bucket.index, bucket.buffer, params, is_last=bucket.index == len(self.buckets) - 1))
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
        params = [self.params[i] for i in bucket.variable_indices]
        for index, param, value in zip(bucket.variable_indices, params,
                                       _unflatten_dense_tensors(bucket.wait(), params)):
            if global_used is not None and not global_used[index]:
                continue
            if param.grad is None:
                param.grad = value.clone()
            else:
                param.grad.copy_(value)
        bucket.buffer = None
    self.require_finalize = False
'''),
]}
