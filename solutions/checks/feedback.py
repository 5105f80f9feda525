"""Provided — what you read when a scenario could not even finish: the pool's typed failures, in words."""

from __future__ import annotations

from checks.pool import RankFailure, ScenarioError

# Messages of gloo when ranks' collectives do not pair up (one rank launched what the others did not).
GLOO_MISMATCH = ("Connection reset by peer", "Connection closed by peer", "doesn't match expected size", "Timed out")


def scenario_failure(error: ScenarioError) -> str:
    """One paragraph for the first failure that explains the others, then the details."""
    kinds = {f.kind for f in error.failures}
    first = next((f for kind in ("memory", "output", "raised", "exited", "garbled", "timeout")
                  for f in error.failures if f.kind == kind), error.failures[0])
    if first.kind == "timeout" or kinds == {"timeout"}:
        return timed_out(error)
    if first.kind == "memory":
        return f"Your code used too much memory, so it was stopped: rank {first.rank} {first.message}."
    if first.kind == "output":
        return (f"Your code printed too much, so it was stopped: rank {first.rank} {first.message}; print less "
                f"(e.g. not in every autograd hook).")
    if first.kind == "exited":
        return exited(first) + _others(error, first)
    if first.kind == "garbled":
        return (f"Rank {first.rank}'s reply was not what the scenario returns ({first.message}): did your code "
                "print to the channel, or replace part of the harness?")
    return raised(first) + _others(error, first)


def timed_out(error: ScenarioError) -> str:
    stuck = [f.rank for f in error.failures if f.kind == "timeout"]
    parts = [f"Your code did not finish in time: {error.what} ran over {error.deadline_s:.0f} s on rank(s) {stuck} "
             f"(finished: {error.finished}). A common cause is ranks launching different collectives, or the same "
             "collectives in a different order; or a loop that never ends."]
    parts += [f"rank {f.rank} was stuck here:\n{f.where}" for f in error.failures if f.kind == "timeout"]
    return "\n\n".join(parts)


def exited(f: RankFailure) -> str:
    if f.code is not None and f.code < 0:
        how = f"was killed by signal {-f.code}"
        if f.code == -9:
            how += " (SIGKILL: usually the machine ran out of memory; does your code keep tensors it no longer needs?)"
    else:
        how = f"exited with code {f.code}"
    text = (f"A process running your code (rank {f.rank}) {how} before it reported a result (os._exit, a crash, "
            "or an abort).")
    return text + (f"\nIts output ends with:\n{f.log}" if f.log.strip() else "")


def raised(f: RankFailure) -> str:
    hint = ""
    if "INTERNAL ASSERT FAILED" in f.message:
        hint = ("\nThat is one of torch's own internal checks failing inside a call your code made (not a bug to "
                "report to torch): the last frames of your files below show which call, and with what.")
    if any(s in f.message or s in f.where for s in GLOO_MISMATCH):
        hint = ("\nThe ranks' collectives did not pair up: one rank launched a collective the others did not, "
                "or in a different order or size (handout §3).")
    return (f"Your code raised {f.error}: {f.message.strip()}{hint}\n\nWhere (innermost calls last), on rank "
            f"{f.rank}:\n{f.where.rstrip()}")


def _others(error: ScenarioError, shown: RankFailure) -> str:
    rest = [f for f in error.failures if f is not shown]
    if not rest:
        return ""
    return "\n\nOther ranks: " + "; ".join(
        f"rank {f.rank} {'raised ' + f.error if f.kind == 'raised' else f.kind}" for f in rest)
