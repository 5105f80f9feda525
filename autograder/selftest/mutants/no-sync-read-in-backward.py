"""The no_sync switch is read when gradients arrive (in backward), not in forward."""
from autograder.selftest.kinds import DDP, HOOK_BODY, REDUCER, Function

EDITS = {
    DDP: [("        sync = torch.is_grad_enabled() and self.require_backward_grad_sync\n",
           "        sync = torch.is_grad_enabled()  # the hooks check no_sync() themselves\n"),
          Function("DistributedDataParallel.no_sync", '''
@contextlib.contextmanager
def no_sync(self) -> Iterator[None]:
    """Gradients that arrive inside this context only accumulate locally."""
    self.reducer.sync_enabled = False
    try:
        yield
    finally:
        self.reducer.sync_enabled = True
''')],
    REDUCER: [(HOOK_BODY, "        if not getattr(self, 'sync_enabled', True):  # inside no_sync()\n"
                          "            return\n" + HOOK_BODY)]}
VIOLATES = "W6"
CAUGHT_BY = {"4.4": "after a forward outside it"}
