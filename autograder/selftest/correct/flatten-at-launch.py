"""No persistent flat buffer: keeps per-parameter gradient copies, lays them out in a new flat tensor (each in its parameter's layout) when the bucket launches."""
from autograder.selftest.kinds import BUCKET_CLASS, REDUCER, Function

EDITS = {REDUCER: [
    Function("Bucket", '''
@dataclass
class Bucket:
    """The gradients of some parameters, all-reduced at once as one flat tensor."""

    index: int
    variable_indices: list[int]
    grads: list  # this iteration's gradient copies, in bucket order (None: not ready yet)
    pending: int = 0
    buffer: torch.Tensor | None = None  # made at launch from ``grads``
    work: dist.Work | None = None
    future: torch.futures.Future | None = None

    def wait(self) -> torch.Tensor:
        if self.future is not None:
            return self.future.wait()
        self.work.wait()
        return self.buffer
'''),
    (BUCKET_CLASS, '''def offsets_of(params: list) -> list[int]:
    """Where each parameter's slot starts in a flat tensor of their gradients."""
    return [sum(p.numel() for p in params[:k]) for k in range(len(params))]


''' + BUCKET_CLASS),
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
    params = [self.params[i] for i in bucket.variable_indices]
    bucket.buffer = torch.empty(sum(p.numel() for p in params), dtype=params[0].dtype, device=params[0].device)
    torch._foreach_copy_(slots(bucket.buffer, params, offsets_of(params)), bucket.grads)  # torch's layout
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
                                       slots(bucket.wait(), params, offsets_of(params))):
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
