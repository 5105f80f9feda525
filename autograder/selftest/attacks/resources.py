"""Attacks on what a grading can use up: time (hangs, slow runs under every deadline, the whole grading's
budget), memory held after a rank replied, threads (the uid's limit), and the disk a worker's logs fill."""

from __future__ import annotations

from autograder.selftest.attacks.shared import ANSWERS, TIMELINE, absent, all_of, stub, tests_fail, tests_pass
from autograder.selftest.kinds import AT_END, BUCKETING, DDP, PROCESS_GROUP, REDUCER, REDUCER_INIT_BODY, Case, Function

# ============================================================================================================
# Time, memory, disk
# ============================================================================================================

HANG = "\n\nwhile True:  # at import\n    pass\n"

HANG_INIT = r'''
def init_process_group(backend=None, timeout=DEFAULT_TIMEOUT):
    while True:
        pass
'''

SLOW_BUCKETS = r'''


_SEEN = []


def compute_bucket_assignment(tensors, bucket_size_limits, order=None):  # replaces the stub above
    """Take 13 s per scenario run (under every deadline), then fail: never a time-out."""
    import sys
    import time
    frame = sys._getframe(1)
    while frame is not None and frame.f_code.co_name != "bucket_cases":
        frame = frame.f_back
    cases = frame.f_locals.get("cases") if frame is not None else None
    if not any(c is cases for c in _SEEN):
        _SEEN.append(cases)
        time.sleep(13)
    raise NotImplementedError("Part 2: compute_bucket_assignment")
'''

MEMORY_AFTER_REPLY = r'''


_HOG = {"finalized": 0, "report": None}


def _after_finalize():
    """Rank 0: once it has replied, hold 1 GiB while rank 1 is still in its last step (nobody watches)."""
    import threading
    import time
    _HOG["finalized"] += 1
    if _HOG["finalized"] != 3:
        return
    if dist.get_rank() == 1:
        time.sleep(4)
        return

    def hog():
        time.sleep(0.5)
        block = torch.ones(2**28)  # 1 GiB, every page touched
        import resource
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # kB (no /proc in a chroot jail)
        time.sleep(3)
        del block
        _HOG["report"] = f"rank 0 held 1 GiB (peak RSS {peak // 1024} MB) for 3 s after replying"
    threading.Thread(target=hog, daemon=True).start()


def _report_hog():
    if _HOG["report"]:
        raise RuntimeError("UNMONITORED: " + _HOG["report"])
'''

LOG_MARKER = "MINDDP-LOGFILL-7f3a"
LOG_FILL = f'''


import sys as _sys
_sys.stdout.write("{LOG_MARKER}" + "x" * (8 * 2**20))  # 8 MB per worker: under the 32 MB cap, never removed
_sys.stdout.flush()
'''


# ============================================================================================================
# Threads
# ============================================================================================================

THREAD_BOMB = r'''


def _many_threads():
    """Start threads until the machine says no: a worker's uid may have RLIMIT_NPROC of them, all told."""
    import threading
    import time
    started = 0
    try:
        for _ in range(5000):
            threading.Thread(target=time.sleep, args=(30,), daemon=True).start()
            started += 1
    except RuntimeError as error:
        raise RuntimeError(f"THREADS stopped at {started}: {error}") from None
    raise RuntimeError(f"THREADS all {started} started")


_many_threads()
'''


def threads_capped(results: dict, isolated: bool) -> list:
    """The thread bomb stopped at the uid's limit (grader/isolation.py: MAX_THREADS), well before 5000."""
    import re
    text = "\n".join(t.get("output", "") for t in results.get("tests", []) if str(t.get("number")) == "2.1")
    found = re.search(r"THREADS stopped at (\d+)", text)
    if not found:
        return [f"2.1 does not show where the threads stopped: {text[:300]!r}"]
    return [] if int(found.group(1)) <= 1024 else [f"{found.group(1)} threads started: more than the uid's limit"]


ATTACKS: list = [
    # -- threads ---------------------------------------------------------------------------------------------
    Case("thread-bomb", "bucketing.py starts threads at import until refused: the uid's RLIMIT_NPROC stops them, "
         "that check fails, and every later check runs as usual",
         edits={BUCKETING: [(AT_END, THREAD_BOMB)]}, zero=("2",), says={"2": "THREADS stopped at"},
         check=threads_capped),

    # -- time, memory, disk ----------------------------------------------------------------------------------
    Case("all-parts-hang", "every part hangs: init_process_group (check 1.4's launch) and, at import, "
         "bucketing, reducer, ddp, timeline and answers; 1.1-1.3 work. Every hang is stopped at its deadline "
         "and the rest of its part given up (how long that takes at half a vCPU: make gradescope-sim)",
         edits={PROCESS_GROUP: [Function("init_process_group", HANG_INIT)], BUCKETING: [(AT_END, HANG)],
                REDUCER: [(AT_END, HANG)], DDP: [(AT_END, HANG)], TIMELINE: [(AT_END, HANG)],
                ANSWERS: [(AT_END, HANG)]},
         zero=("2", "3", "4", "5", "6", "A", "B"), full=(),
         says={"2": "importing your minddp/bucketing.py never finished", "3": "did not finish",
               "5": "importing your minddp/timeline.py never finished",
               "6": "importing your answers.py never finished"},
         check=all_of(tests_pass("1.1", "1.1h", "1.2", "1.2h", "1.3", "1.3h"), tests_fail("1.4")), waits=True),
    Case("slow-not-hanging", "bucketing.py takes 13 s per scenario run (under every deadline) and then fails: "
         "no run times out, so only the part's time budget (from the reference's own times) can stop it",
         edits={BUCKETING: stub(BUCKETING) + SLOW_BUCKETS}, zero=("2",),
         says={"2": "used up its time"}, waits=True),  # a part's time budget comes from the reference's own times
    Case("slow-everywhere", "every student file sleeps 6 s when a worker imports it (each check's workers do): "
         "no run misses its deadline, but the sum is more than the whole grading may take (here a 3-minute limit, "
         "as if Gradescope's were that): each part gets its share of the time, the rest is 'Not run (time "
         "budget)', and the grading ends in time with partial credit",
         edits={path: [(AT_END, "\n\nimport time as _time\n_time.sleep(6)\n")] for path in
                (PROCESS_GROUP, BUCKETING, REDUCER, DDP, TIMELINE, ANSWERS)},
         full=(), score=(1, 109), says={"2": "Not run (time budget)"}, time_limit_s=180, waits=True,
         check=lambda results, isolated: [] if results["extra_data"].get("execution_s", 999) < 180 else
         [f"the grading took {results['extra_data'].get('execution_s')} s, past its 180 s limit"]),
    Case("memory-after-reply", "rank 0 allocates 1 GiB in a thread right after it replied, while rank 1 "
         "still trains: the memory watch must look at every rank until all have replied",
         edits={REDUCER: [(AT_END, MEMORY_AFTER_REPLY),
                          ("        self.require_finalize = False\n        # END SOLUTION",
                           "        self.require_finalize = False\n        _after_finalize()\n        # END SOLUTION"),
                          (REDUCER_INIT_BODY, "        _report_hog()\n" + REDUCER_INIT_BODY)]},
         full=(), says={"3": "memory"}, check=absent("UNMONITORED", why="a rank used 1 GiB unwatched"), waits=True),
    Case("worker-log-fill", "every worker that imports timeline.py prints 8 MB (under the 32 MB cap): "
         "legitimate, but the logs must not stay on the host's disk after the grading (the runner reports "
         "whatever the grading leaves in its TMPDIR)",
         edits={TIMELINE: [(AT_END, LOG_FILL)]}),

]
