# GENERATED from solutions/checks/worker_loop.py by tools/assign.py (staff: edit that file, then `make assignment`).
# Provided code: do not edit it by hand; the grader uses its own copy.
"""Provided — a worker, from its fork to its exit: its own session, log and environment (``_child``), then
the loop that joins the gloo process group and runs the scenarios it is sent (``worker_main``), reporting
an exception as data (``_error_report``). Its parent is the fork server (``checks.fork_server``).
"""

from __future__ import annotations

import importlib
import json
import os
import signal
import socket
import sys
import traceback
from collections.abc import Callable

from checks import wire
from checks.error_text import steady
from checks.wire import TAIL_CHARS, encode, recv_message, send_message

# A traceback's frames in these files are the worker's, not the scenario's: its loop, and the encoding of a
# reply (a scenario that returned what cannot be sent fails in ``encode``).
LOOP_FILES = (__file__, wire.__file__)


def _child(request: dict, fds: list[int], child_setup: Callable[[dict], None] | None) -> None:
    """In a forked child: its own session and log, its environment, the setup hook, then the worker loop."""
    os.setsid()  # its own process group: the pool kills it and anything it starts
    channel, stack, out = fds
    os.dup2(out, 1)
    os.dup2(out, 2)
    os.close(out)
    os.environ.clear()
    os.environ.update(request["env"])
    sys.path[:0] = [p for p in os.environ.get("MINDDP_PATHS", "").split(os.pathsep) if p]
    main = child_setup(request["setup"]) if child_setup else None  # the hook may give the child another job
    (main or worker_main)(channel, stack)


def worker_main(fd: int, stack_fd: int) -> None:
    """Join the process group, then run requests until told to stop. Results go out before any teardown:
    gloo sometimes aborts at exit, which must not look like a failure."""
    import faulthandler
    import gc
    from datetime import timedelta

    # The names this loop uses are bound here, before any scenario (or student code) runs in this process.
    sock, dumps, loads, send = socket.socket(fileno=fd), json.dumps, json.loads, send_message
    faulthandler.register(signal.SIGUSR1, file=os.fdopen(stack_fd, "w"), all_threads=True)
    try:
        import torch.distributed as dist
        dist.init_process_group("gloo", timeout=timedelta(seconds=float(os.environ["MINDDP_COLLECTIVE_TIMEOUT_S"])))
        send(sock, dumps({"ok": True, "result": None}).encode())
    except BaseException as error:
        send(sock, dumps({"ok": False, "error": _error_report(error)}).encode())
        os._exit(1)
    while True:
        try:
            message = recv_message(sock)
        except OSError:
            break
        if message is None:
            break
        request = loads(message)
        if request.get("fn") is None:
            break
        try:
            module_name, _, function_name = request["fn"].partition(":")
            function = getattr(importlib.import_module(module_name), function_name)
            payload = dumps({"ok": True, "result": encode(function(**request["kwargs"]))}).encode()
        except BaseException as error:  # report everything, even SystemExit from a scenario
            payload = dumps({"ok": False, "error": _error_report(error)}).encode()
        send(sock, payload)
        payload = request = None
        gc.collect()
    gc.collect()
    try:
        dist.destroy_process_group()
    finally:
        os._exit(0)


def _error_report(error: BaseException) -> dict:
    """An exception as data: its class's name, its text, the end of its traceback (what a public entry shows;
    a hidden entry says only "raised an exception"). Building it never raises, whatever the class does (a
    ``__str__`` that raises, a metaclass whose ``__name__`` is not a string): the run is then still a failure
    reported by the rank, never a rank that died."""
    tb = error.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_filename in LOOP_FILES:  # the worker loop is not the story
        tb = tb.tb_next
    where = _text(lambda: steady("".join(traceback.format_exception(type(error), error, tb, limit=-12))))
    during = _text(lambda: getattr(error, "raised_during", ""))  # a scenario's word on where it was (its step)
    message = _text(lambda: steady(str(error)))[:TAIL_CHARS] + (f" [raised in {during}]" if during else "")
    return {"error": _text(lambda: type(error).__name__) or "an exception", "message": message,
            "where": where[-2 * TAIL_CHARS:]}


def _text(make: Callable[[], object]) -> str:
    """``make()`` if it gives a string, else ""; "(its text cannot be shown)" if it raises."""
    try:
        text = make()
    except BaseException:  # noqa: BLE001 - student code's __str__, __getattr__ or metaclass: any exception at all
        return "(its text cannot be shown)"
    return text if isinstance(text, str) else ""
