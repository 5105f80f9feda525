"""Attacks on the reply channel between a worker and the trusted side (student code runs in the worker, so it
can always write there): forged, early, deeply nested, huge and half-sent replies, and a value shaped like
the channel's encoding of a tensor. Whatever arrives there is data to validate, never trusted."""

from __future__ import annotations

from autograder.selftest.attacks.shared import (
    CHANNEL,
    EVERY_PART,
    SCENARIO_ARGS,
    TIMELINE,
    all_of,
    output_of,
    stub,
    tests_fail,
    tests_pass,
)
from autograder.selftest.kinds import (
    AT_END,
    BUCKETING,
    PROCESS_GROUP,
    REDUCER,
    REDUCER_IMPORTS,
    REDUCER_INIT_BODY,
    Case,
    Function,
)

# A forged reply whose lists are all empty, written on the channel before the worker's own: the comparisons
# must not zip() it with the reference's list (and the worker's real reply, one message late, must not
# answer the next request).
TRUNCATE_REPLIES = CHANNEL + r'''


def _truncate_replies():
    if _channel() is not None:
        _send_raw(b'{"ok": true, "result": []}')


_truncate_replies()
'''

# A forged reply 200,000 lists deep (under the token cap): json.loads raises RecursionError, not ValueError.
DEEP_REPLY = CHANNEL + r'''


def _deep_reply():
    if _channel() is not None:
        _send_raw(b'{"ok": true, "result": ' + b"[" * 200_000 + b"]" * 200_000 + b"}")


_deep_reply()
'''

TENSOR_DICT = r'''
def read_torchrun_env(environ=None):
    """Returns a value that looks like one of the channel's tensors to the trusted side."""
    return DistEnv(0, 1, 0, 1, {"__tensor__": "object", "shape": [1], "data": ""}, 1)
'''

# 30 MB of "[]," (under the 32 MB cap): 10 million empty lists if the trusted side parsed it.
HUGE_REPLY = CHANNEL + r'''


def _huge_reply(megabytes=30):
    if _channel() is None:
        return
    body = bytearray(b"[],") * (megabytes * 2**20 // 3)
    body[-1:] = b"]"
    _send_raw(b'{"ok": true, "result": [' + bytes(body) + b"}")


_huge_reply()
'''

# A partial message on the channel: a length header, a few bytes, then silence.
PARTIAL_FRAME = SCENARIO_ARGS + CHANNEL + r'''


def _stall_the_channel():
    import os
    import time
    args = _scenario_args() or {}
    if not (args.get("impl") == "reducer" and args.get("model") == "tied" and
            args.get("ddp_kwargs") == {"bucket_cap_mb": 0.005} and dist.get_rank() == 0):
        return  # only check 3.4's public run
    _channel().sendall((64).to_bytes(8, "big") + b'{"ok": tr')
    time.sleep(75)
    os._exit(0)
'''


ATTACKS: list = [
    Case("truncated-replies", "stubs whose process_group.py, bucketing.py and timeline.py write a forged "
         "reply with an empty list on the worker's channel before the worker's own: the comparisons must not "
         "zip() it with the reference's list, nor take the late real reply as the next request's",
         start="stubs", edits={PROCESS_GROUP: stub(PROCESS_GROUP) + TRUNCATE_REPLIES,
                               BUCKETING: stub(BUCKETING) + TRUNCATE_REPLIES,
                               TIMELINE: stub(TIMELINE) + TRUNCATE_REPLIES},
         zero=EVERY_PART, full=(), score=(0, 0)),
    Case("deeply-nested-reply", "bucketing.py writes a reply 200,000 lists deep on its channel: the trusted "
         "side's json.loads raises RecursionError, which is not a ValueError",
         edits={BUCKETING: [(AT_END, DEEP_REPLY)]}, zero=("2",)),
    Case("tensor-shaped-value", "read_torchrun_env returns a DistEnv whose master_addr is "
         "{'__tensor__': 'object', ...}: the trusted side decodes it as a numpy array",
         edits={PROCESS_GROUP: [Function("read_torchrun_env", TENSOR_DICT)]}, full=("2", "3", "4", "5", "6", "A", "B"),
         check=all_of(tests_fail("1.1", "1.1h", "1.2", "1.2h", "1.4"), tests_pass("1.3", "1.3h"))),
    Case("huge-reply", "each process that imports timeline.py first writes 30 MB of '[],[],...' on its "
         "channel (under the 32 MB cap): 10 million lists if the trusted side parsed it (Gradescope has 768 MB "
         "for everything); the reply must be refused by its count of values, before parsing",
         edits={TIMELINE: [(AT_END, HUGE_REPLY)]}, zero=("5",), full=("1", "2", "3", "4", "6", "A", "B.1"),
         says={"5": "JSON values"}),
    Case("partial-frame", "in check 3.4's public run rank 0 writes a message header and 9 bytes on its "
         "channel, then sleeps 75 s: the trusted side must still stop it at the run's deadline",
         edits={REDUCER: [(REDUCER_IMPORTS, REDUCER_IMPORTS + PARTIAL_FRAME),
                          (REDUCER_INIT_BODY, "        _stall_the_channel()\n" + REDUCER_INIT_BODY)]},
         full=("1", "2", "4", "5", "6", "A", "B"),
         check=all_of(tests_fail("3.4"), output_of("3.4", "did not finish in time",
                                                   "the trusted side blocked on a half-sent reply"))),

]
