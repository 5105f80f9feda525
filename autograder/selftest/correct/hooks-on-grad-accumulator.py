"""Hooks each parameter's AccumulateGrad node (grad_fn.next_functions), as torch DDP used to, not post-accumulate hooks."""
from autograder.selftest.kinds import REDUCER

EDITS = {REDUCER: [(
    """        self.hook_handles = [param.register_post_accumulate_grad_hook(weak_hook(self.autograd_hook, i))
                             for i, param in enumerate(self.params)]
""",
    """        # The AccumulateGrad node of a parameter runs its hooks right after it updated .grad. Autograd
        # only keeps that node alive while a graph uses it, so we keep it (else our hook is lost).
        self.grad_accumulators, self.hook_handles = [], []
        for i, param in enumerate(self.params):
            accumulator = param.expand_as(param).grad_fn.next_functions[0][0]
            hook = weak_hook(self.autograd_hook, i)
            self.hook_handles.append(accumulator.register_hook(
                lambda grad_inputs, grad_outputs, hook=hook, param=param: hook(param)))
            self.grad_accumulators.append(accumulator)
""")]}
