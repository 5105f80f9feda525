"""Prints one line per bucket launch and per backward, logs the rest; launch loop is a for/break over the remaining buckets."""
from autograder.selftest.kinds import REDUCER, REDUCER_IMPORTS, Function

USAGE = "        global_used = self.all_reduce_usage()\n"  # in finalize_backward, after the early return

EDITS = {REDUCER: [
    (REDUCER_IMPORTS, REDUCER_IMPORTS + "import logging\n\nlog = logging.getLogger(__name__)\n"),
    Function("Reducer.mark_variable_ready", '''
def mark_variable_ready(self, index: int) -> None:
    bucket_index, position = self.locators[index]
    bucket = self.buckets[bucket_index]
    grad, slot = self.params[index].grad, bucket.views[position]
    log.debug("param %d ready (bucket %d, %d still pending)", index, bucket_index, bucket.pending - 1)
    if grad is None:
        slot.zero_()
    else:
        slot.copy_(grad)
    bucket.pending -= 1
    if bucket.pending == 0:
        self.mark_bucket_ready(bucket_index)
'''),
    Function("Reducer.mark_bucket_ready", '''
def mark_bucket_ready(self, bucket_index: int) -> None:
    """Launch every ready bucket in index order, starting at ``next_bucket``."""
    for bucket in self.buckets[self.next_bucket:]:
        if bucket.pending > 0:
            log.info("bucket %d is ready but waits for bucket %d", bucket_index, bucket.index)
            break
        print(f"[rank {dist.get_rank()}] launching bucket {bucket.index} "
              f"({bucket.buffer.numel()} elements)", flush=True)
        self.all_reduce_bucket(bucket)
        self.next_bucket += 1
'''),
    (USAGE, '        print(f"[rank {dist.get_rank()}] backward done, waiting for {len(self.buckets)} buckets", flush=True)\n'
     + USAGE),
]}
