"""Written from the release's stubs and the contract alone, none of torch's structure: parallel lists instead of a bucket record, one helper from ready gradient to launch, every reduction a Future, each gradient scaled while copied in; Bonus A's count under no_sync() kept by the Reducer's own flags."""
import os

from autograder.selftest.kinds import REDUCER, Function
from autograder.selftest.runner import REPO, apply_edits

STATE = ("        # YOUR DESIGN (handout §3): the state your Reducer keeps between calls (C1-C8).\n", '''\
        self.flats: list[torch.Tensor] = []  # bucket b's flat buffer
        self.slots: list[list[torch.Tensor]] = []  # bucket b's views, one per parameter, in buffer order
        self.members: list[list[int]] = []  # bucket b's parameter indices
        self.where: dict[int, tuple[int, int]] = {}  # parameter index -> (bucket, slot)
        self.missing: list[int] = []  # gradients bucket b still waits for in this backward
        self.results: list[torch.futures.Future | None] = []  # bucket b's reduction, once launched
        self.launched = 0  # buckets launched in this backward (always a prefix: 0 .. launched-1)
        self.armed = False  # a synchronised forward ran: this backward reduces
        self.unused_now: list[int] = []  # (Bonus A) no gradient in this backward: arrived at its first hook
        self.reducing = False  # a backward started reducing and has not finished
''')

HELPERS = ("    # YOUR DESIGN (handout §3): your steps from a ready gradient to a launched bucket (C2, C3, C4, C7).\n", '''\
    def _arrived(self, index: int) -> None:
        """Parameter ``index``'s gradient is final: into its slot, then launch what index order allows."""
        b, k = self.where[index]
        grad, slot = self.params[index].grad, self.slots[b][k]
        if grad is None:
            slot.zero_()
        elif self.comm_hook is None:
            torch.mul(grad, 1.0 / self.world_size, out=slot)  # averaged on the way in, as torch does
        else:
            slot.copy_(grad)  # a hook gets raw gradients
        self.missing[b] -= 1
        while self.launched < len(self.flats) and self.missing[self.launched] == 0:
            self._launch(self.launched)
            self.launched += 1

    def _launch(self, b: int) -> None:
        if self.comm_hook is None:
            work = dist.all_reduce(self.flats[b], group=self.process_group, async_op=True)
            self.results[b] = work.get_future()
        else:
            bucket = GradBucket(b, self.flats[b], [self.params[i] for i in self.members[b]],
                                is_last=b == len(self.flats) - 1)
            self.results[b] = self.comm_hook(self.comm_hook_state, bucket)

    def _gradient_seen(self, index: int, _param: torch.nn.Parameter) -> None:
        """(Bonus A) A gradient in a backward that nothing armed: one under no_sync() counts as a use."""
        if not self.armed and not self.reducing:
            self.unsynced.add(index)

''')

# Bonus A: no class of its own, the Reducer's flags tell a backward under no_sync() from a synchronised one.
USAGE = ("        # YOUR DESIGN (handout §3): Bonus A (handout §4.4), what record_usage will need to know.\n", '''\
        self.unsynced: set[int] = set()  # gradients of backwards under no_sync() since the last record
        self.usage_hooks = [p.register_post_accumulate_grad_hook(weak_hook(self._gradient_seen, i))
                            for i, p in enumerate(self.params)]
''')

FUNCTIONS = [
    Function("Reducer.build_buckets", '''
def build_buckets(self, bucket_indices: Sequence[Sequence[int]]) -> None:
    self.flats, self.slots, self.members, self.where = [], [], [], {}
    for b, indices in enumerate(bucket_indices):
        params = [self.params[i] for i in indices]
        flat = torch.zeros(sum(p.numel() for p in params), dtype=params[0].dtype, device=params[0].device)
        starts = [sum(p.numel() for p in params[:k]) for k in range(len(params))]
        self.flats.append(flat)
        self.slots.append([flat.as_strided(p.size(), p.stride(), start) for p, start in zip(params, starts)])
        self.members.append(list(indices))
        self.where.update({i: (b, k) for k, i in enumerate(indices)})
    self.missing = [0] * len(self.flats)
    self.results = [None] * len(self.flats)
'''),
    Function("Reducer.prepare_for_backward", '''
def prepare_for_backward(self, unused: Sequence[int] = ()) -> None:
    self.record_usage(unused)
    if self.reducing:
        raise RuntimeError(UNFINISHED_REDUCTION)
    self.missing = [len(m) for m in self.members]
    self.results = [None] * len(self.flats)
    self.launched = 0
    self.armed = True
    self.unused_now = list(unused)
'''),
    Function("Reducer.autograd_hook", '''
def autograd_hook(self, index: int, param: torch.nn.Parameter) -> None:
    if not self.armed:
        return
    if not self.reducing:
        self.reducing = True
        torch.autograd.Variable._execution_engine.queue_callback(self.finalize_backward)
        for unused in self.unused_now:
            self._arrived(unused)
    self._arrived(index)
'''),
    Function("Reducer.finalize_backward", '''
def finalize_backward(self) -> None:
    self.armed = False
    if self.launched < len(self.flats):  # a bucket never filled: write nothing, the next forward raises
        torch.futures.wait_all([f for f in self.results[:self.launched]])
        return
    used = self.all_reduce_usage()
    for b, future in enumerate(self.results):
        value = future.wait()
        flat = value[0] if isinstance(value, list) else value  # all_reduce's future holds a list
        offset = 0
        for index in self.members[b]:
            param = self.params[index]
            piece = flat.as_strided(param.size(), param.stride(), flat.storage_offset() + offset)
            offset += param.numel()
            if used is not None and not used[index]:
                continue
            if param.grad is None:
                param.grad = piece.clone()
            else:
                param.grad.copy_(piece)
    self.reducing = False
'''),
    Function("Reducer.record_usage", '''
def record_usage(self, unused: Sequence[int]) -> None:
    if self.local_used is None:
        return
    unused_here = sorted(set(unused) - self.unsynced)
    self.unsynced = set()
    self.local_used.fill_(1)
    if unused_here:
        self.local_used[torch.tensor(unused_here, dtype=torch.long)] = 0
'''),
    Function("Reducer.all_reduce_usage", '''
def all_reduce_usage(self) -> torch.Tensor | None:
    if self.local_used is None:
        return None
    counts = self.local_used.clone()
    dist.all_reduce(counts, group=self.process_group)
    return counts
'''),
]


def _from_the_release() -> str:
    with open(os.path.join(REPO, "assignment", REDUCER), encoding="utf-8") as f:
        return apply_edits(f.read(), REDUCER, [STATE, HELPERS, USAGE, *FUNCTIONS], "own-design")


EDITS = {REDUCER: _from_the_release()}
