"""The all-reduce is issued synchronously (async_op=False) from the hook: backward waits for communication."""
from selftest.cases import REDUCER

EDITS = {REDUCER: [("bucket.work = dist.all_reduce(bucket.buffer, group=self.process_group, async_op=True)",
                    "dist.all_reduce(bucket.buffer, group=self.process_group)  # done when it returns\n"
                    "            bucket.work = _Done()"),
                   ("\n\n@dataclass\nclass Bucket:", "\n\nclass _Done:\n    def wait(self):\n        return True\n"
                    "\n\n@dataclass\nclass Bucket:")]}
CAUGHT_BY = {"3.8": "async_op=True"}
