"""Tensor hooks (param.register_hook) see each gradient before autograd accumulates it: the Reducer accumulates it into .grad itself, then hands autograd zeros."""
from autograder.selftest.kinds import REDUCER, Function

EDITS = {REDUCER: [
    ("@dataclass\nclass Bucket:\n", '''def weak_grad_hook(method: Callable, index: int) -> Callable:
    """A tensor hook ``hook(grad)`` that calls ``method(index, grad)`` through a weak reference to its object
    (what it returns replaces the gradient autograd accumulates)."""
    owner, function = weakref.ref(method.__self__), method.__func__

    def hook(grad: torch.Tensor) -> torch.Tensor | None:
        live = owner()
        return None if live is None else function(live, index, grad)
    return hook


@dataclass
class Bucket:
'''),
    ("""        self.hook_handles = [param.register_post_accumulate_grad_hook(weak_hook(self.autograd_hook, i))
                             for i, param in enumerate(self.params)]
""",
     """        # Tensor hooks run with this backward's gradient of the parameter (a tied weight's two uses already
        # summed), before autograd adds it to .grad.
        self.hook_handles = [param.register_hook(weak_grad_hook(self.autograd_hook, i))
                             for i, param in enumerate(self.params)]
"""),
    Function("Reducer.autograd_hook", '''
def autograd_hook(self, index: int, grad: torch.Tensor) -> torch.Tensor | None:
    """Runs with parameter ``index``'s new gradient, BEFORE autograd accumulates it into ``.grad``."""
    if not self.expect_autograd_hooks:  # no_sync() or no_grad forward: let autograd accumulate it locally
        return None
    # The bucket needs the accumulated gradient (.grad may hold earlier no_sync micro-batches), so do what
    # AccumulateGrad would do, here: add in place, or keep a copy when there is no .grad yet.
    param = self.params[index]
    with torch.no_grad():
        if param.grad is None:
            param.grad = grad.detach().clone()
        else:
            param.grad.add_(grad)
    if not self.require_finalize:  # first gradient of this backward
        self.require_finalize = True
        torch.autograd.Variable._execution_engine.queue_callback(self.finalize_backward)
        for unused in self.unused:  # (Bonus A) no gradient in this backward: ready now
            self.mark_variable_ready(unused)
    self.mark_variable_ready(index)
    return torch.zeros_like(grad)  # already accumulated: autograd must not add it a second time
'''),
]}
