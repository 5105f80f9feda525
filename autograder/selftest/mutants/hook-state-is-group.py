"""The comm hook is called with the Reducer's process group as its state, not with the state registered with it (torch's built-in hooks take a group as state, so it looks right)."""
from autograder.selftest.kinds import REDUCER

EDITS = {REDUCER: [("            bucket.future = self.comm_hook(self.comm_hook_state, grad_bucket)\n",
                    "            bucket.future = self.comm_hook(self.process_group, grad_bucket)\n")]}
VIOLATES = "C4"
CAUGHT_BY = {"3.11": "state"}
