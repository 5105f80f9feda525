"""finalize_backward copies each bucket's buffer into .grad first and waits on the works afterwards."""
from autograder.selftest.kinds import REDUCER

EDITS = {REDUCER: [("            reduced = bucket.wait()\n",
                    "            reduced = bucket.buffer if bucket.future is None else bucket.wait()  # in place\n"),
                   ("        self.require_finalize = False\n        # END SOLUTION",
                    "        for bucket in self.buckets:\n"
                    "            bucket.wait()  # before the next backward reuses the buffers\n"
                    "        self.require_finalize = False\n        # END SOLUTION")]}
VIOLATES = "C6"
CAUGHT_BY = {"3.1": "before its all-reduce completed"}
