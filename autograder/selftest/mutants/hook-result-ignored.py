"""With a comm hook, the tensor the hook's future returns is ignored: the bucket's buffer is copied back."""
from autograder.selftest.kinds import REDUCER

EDITS = {REDUCER: [("            return self.future.wait()\n",
                    "            self.future.wait()\n            return self.buffer  # the hook reduced it, surely\n")]}
VIOLATES = "C4"
CAUGHT_BY = {"3.11": "the future returns"}
