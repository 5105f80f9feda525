"""no_sync() keeps a stack of the states it replaced: each exit pops the state its entry pushed."""
from autograder.selftest.kinds import DDP, Function

EDITS = {DDP: [
    Function("DistributedDataParallel.no_sync", '''
@contextlib.contextmanager
def no_sync(self) -> Iterator[None]:
    """Forwards run inside this context produce gradients that only accumulate locally."""
    if not hasattr(self, "_sync_states"):
        self._sync_states: list[bool] = []
    self._sync_states.append(self.require_backward_grad_sync)
    self.require_backward_grad_sync = False
    try:
        yield
    finally:
        self.require_backward_grad_sync = self._sync_states.pop()
'''),
]}
