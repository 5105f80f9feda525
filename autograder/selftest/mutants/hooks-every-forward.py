"""The Reducer's hooks are registered in prepare_for_backward, i.e. again in every synchronised forward: they pile up and fire several times per backward."""
from autograder.selftest.kinds import REDUCER

EDITS = {REDUCER: [
    ("""        self.hook_handles = [param.register_post_accumulate_grad_hook(weak_hook(self.autograd_hook, i))
                             for i, param in enumerate(self.params)]
""", "        self.hook_handles = []  # registered in prepare_for_backward, when a backward will synchronise\n"),
    ("        self.next_bucket = 0\n        self.expect_autograd_hooks = True\n",
     """        self.next_bucket = 0
        self.expect_autograd_hooks = True
        self.hook_handles += [param.register_post_accumulate_grad_hook(weak_hook(self.autograd_hook, i))
                              for i, param in enumerate(self.params)]
"""),
]}
# Check 3.2 (one bucket per tensor) passes: a one-gradient bucket launches on the first call, correctly.
VIOLATES = "C3"
CAUGHT_BY = {"3.1": "gradients when backward returned differ", "3.4": "one hook call"}
