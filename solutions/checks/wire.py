"""Provided — what crosses between the caller and its workers (``checks.pool`` and ``checks.worker_loop``).

A worker's result is JSON, never pickle: tensors travel as (dtype, shape, bytes), bit for bit, and arrive as
numpy arrays, so the caller never needs torch. One length-prefixed message per request and per reply; the
caller reads a reply without ever blocking (``Inbox``) and trusts nothing in it (``parse_reply``,
``reply_outcome``): what is not a well-formed reply is a ``RankFailure`` of that rank. A worker's log and
stack dump are files the caller opened, read back with ``tail_of``.
"""

from __future__ import annotations

import base64
import binascii
import json
import os
import socket
import sys
from dataclasses import dataclass
from typing import Any

MAX_REPLY_BYTES = 32 * 2**20  # a larger reply is refused before it is read (the largest real one: ~9 MB)
MAX_REPLY_TOKENS = 1_000_000  # JSON brackets and commas: a reply of millions of tiny lists would take GBs
TENSOR_DTYPES = {"float16": 2, "bfloat16": 2, "float32": 4, "float64": 8, "int8": 1, "uint8": 1, "int16": 2,
                 "int32": 4, "int64": 8, "bool": 1}
TAIL_CHARS = 2000  # of a log or a traceback, in a failure


# -- failures, as data --------------------------------------------------------------------------------------

@dataclass
class RankFailure:
    """What went wrong on one rank. ``kind``: "raised" (an exception: ``error`` is its type, ``message``
    its text, ``where`` the end of its traceback), "timeout" (``where``: the rank's stack when the deadline
    passed), "exited" (``code``: exit code, negative for a signal), "garbled" (a reply that is not JSON of
    the expected shape), or a kind a subclass adds ("memory", "output")."""

    rank: int
    kind: str
    error: str = ""
    message: str = ""
    where: str = ""
    code: int | None = None
    log: str = ""  # the end of what the rank printed


# -- the JSON channel: tensors as (dtype, shape, bytes) --------------------------------------------------------

def encode(obj: Any) -> Any:
    """JSON-ready copy of ``obj``; a tensor becomes {"__tensor__": dtype, "shape", "data": base64} (bit-exact)."""
    torch = sys.modules.get("torch")  # a tensor can only exist if torch was imported
    if torch is not None and isinstance(obj, torch.Tensor):
        t = obj.detach().cpu().contiguous()
        raw = t.view(-1).view(torch.uint8).numpy().tobytes() if t.numel() else b""
        return {"__tensor__": str(t.dtype).replace("torch.", ""), "shape": list(t.shape),
                "data": base64.b64encode(raw).decode("ascii")}
    if isinstance(obj, dict):
        return {str(k): encode(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [encode(v) for v in obj]
    if obj is None or isinstance(obj, (bool, int, float, str)):
        return obj
    raise TypeError(f"a scenario returned {type(obj).__name__}, which cannot be sent to the caller")


def encode_arrays(obj: Any) -> Any:
    """``encode`` for decoded results (numpy arrays), so a caller can store them without torch."""
    np = sys.modules.get("numpy")
    if np is not None and isinstance(obj, np.ndarray):
        dtype = "float32" if obj.dtype == np.float32 else str(obj.dtype)
        return {"__tensor__": dtype, "shape": list(obj.shape),
                "data": base64.b64encode(np.ascontiguousarray(obj).tobytes()).decode("ascii")}
    if isinstance(obj, dict):
        return {str(k): encode_arrays(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [encode_arrays(v) for v in obj]
    return obj


def decode(obj: Any) -> Any:
    """Inverse of ``encode``, with numpy arrays for tensors (bfloat16 widened to float32, exactly), so the
    caller never needs torch."""
    if isinstance(obj, dict):
        if "__tensor__" in obj:
            return _array(obj)
        return {k: decode(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [decode(v) for v in obj]
    return obj


def _array(obj: dict):
    """A numpy array from its encoding, checked: a known dtype, a shape of sizes, exactly the bytes it needs."""
    import numpy as np
    dtype, shape = obj.get("__tensor__"), obj.get("shape")
    if dtype not in TENSOR_DTYPES or not isinstance(shape, list) or \
            not all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in shape):
        raise ValueError(f"not a tensor encoding: dtype {str(dtype)[:40]!r}, shape {str(shape)[:40]}")
    try:
        raw = base64.b64decode(obj.get("data", ""), validate=True)
    except (binascii.Error, TypeError, ValueError):
        raise ValueError("a tensor's data is not base64") from None
    count = 1
    for n in shape:
        count *= n
    if count * TENSOR_DTYPES[dtype] != len(raw):
        raise ValueError(f"a tensor of shape {shape} and dtype {dtype} cannot hold {len(raw)} bytes")
    if dtype == "bfloat16":
        return (np.frombuffer(raw, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32).reshape(shape)
    return np.frombuffer(raw, dtype=np.dtype(dtype)).reshape(shape)


# -- the channel: one length-prefixed JSON message per request and per reply -----------------------------------

def send_message(sock: socket.socket, payload: bytes) -> None:
    sock.sendall(len(payload).to_bytes(8, "big"))
    sock.sendall(payload)  # not joined to its header: a reply of tensors is megabytes, a copy as much again


def recv_message(sock: socket.socket) -> bytes | None:
    """The next whole message (blocking), or None at end of file: the worker's side (trusted sender)."""
    header = _recv_exactly(sock, 8)
    return None if header is None else _recv_exactly(sock, int.from_bytes(header, "big"))


def _recv_exactly(sock: socket.socket, n: int) -> bytes | None:
    chunks, left = [], n
    while left:
        chunk = sock.recv(min(left, 1 << 20))
        if not chunk:
            return None
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


class Inbox:
    """The caller's side of one rank's channel: bytes arrive as they come (never a blocking read, so a rank
    that sends half a message cannot stall the caller); a message over MAX_REPLY_BYTES is refused unread."""

    def __init__(self, sock: socket.socket):
        self.sock = sock
        sock.setblocking(False)
        self.buffer = bytearray()

    def fileno(self) -> int:
        return self.sock.fileno()

    def read(self) -> tuple[str, bytes | None]:
        """("message", payload), ("more", None) if a message is not complete yet, ("closed" | "too large", None)."""
        try:
            chunk = self.sock.recv(1 << 20)
        except BlockingIOError:
            chunk = None
        except OSError:
            return "closed", None
        if chunk == b"":
            return "closed", None
        if chunk:
            self.buffer += chunk
        if len(self.buffer) >= 8:
            size = int.from_bytes(self.buffer[:8], "big")
            if size > MAX_REPLY_BYTES:
                return "too large", None
            if len(self.buffer) >= 8 + size:
                payload = bytes(self.buffer[8:8 + size])
                del self.buffer[:8 + size]
                return "message", payload
        return "more", None

    def close(self) -> None:
        self.sock.close()


def parse_reply(payload: bytes) -> Any:
    """A reply's JSON with its tensors decoded; ValueError if it is anything else (too many values, too
    deep, a malformed tensor...): student code wrote it, so nothing about it is trusted."""
    if payload.count(b"[") + payload.count(b"{") + payload.count(b",") > MAX_REPLY_TOKENS:
        raise ValueError(f"more than {MAX_REPLY_TOKENS:,} JSON values")
    try:
        reply = json.loads(payload)
        if isinstance(reply, dict) and reply.get("ok") is True and "result" in reply:
            reply["result"] = decode(reply["result"])
        return reply
    except (ValueError, RecursionError, MemoryError, TypeError, KeyError, AttributeError) as error:
        raise ValueError(f"{type(error).__name__}: {str(error)[:200]}") from None


def reply_outcome(rank: int, payload: bytes, log: str = "") -> Any:
    """What a rank's message says: its result, or a RankFailure. A message must be ``{"ok": true, "result":
    ...}`` or ``{"ok": false, "error": {"error", "message", "where"}}`` (``worker_loop._error_report``);
    anything else is "garbled". (Check 1.4's ranks, which torchrun starts, write the same message to a file.)"""
    try:
        reply = parse_reply(payload)
    except ValueError as error:
        return RankFailure(rank, "garbled", message=f"its reply was not what a scenario returns ({error})", log=log)
    if isinstance(reply, dict) and reply.get("ok") is True and "result" in reply:
        return reply["result"]
    error = reply.get("error") if isinstance(reply, dict) and reply.get("ok") is False else None
    if isinstance(error, dict) and all(isinstance(error.get(k), str) for k in ("error", "message", "where")):
        return RankFailure(rank, "raised", error["error"][:200], error["message"][:TAIL_CHARS + 100],
                           error["where"][-2 * TAIL_CHARS:], log=log)
    return RankFailure(rank, "garbled", message="its reply did not have the expected shape", log=log)


def tail_of(path: str, limit: int = TAIL_CHARS) -> str:
    """The last ``limit`` characters of a file we opened (never follows what a worker could swap in)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return ""
    with os.fdopen(fd, "rb") as f:
        size = os.fstat(fd).st_size
        f.seek(max(0, size - limit))
        return f.read(limit).decode("utf-8", "replace")
