"""The reference pass's cache (grader/reference.py): used only where this machine reproduces it.

A few real reference calls on real workers: the cache setup.sh would make, a grading that reuses it, and
the ways a cache must be refused (another grader, a canary whose bits differ) so that the pass is computed
again, exactly as without a cache.
"""

from __future__ import annotations

import json
import os
import shutil

import pytest

from checks.check import Run  # noqa: E402
from checks.registry import public_checks  # noqa: E402
from grader.hidden import HIDDEN  # noqa: E402
from grader.reference import CACHE_NAME, ReferencePass, call_id, canaries, fingerprint, source_digest  # noqa: E402
from grader.run import trusted_env  # noqa: E402

SOLUTIONS = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "solutions")
ALL_RUNS = [run for check in public_checks() for run in (*check.runs, *HIDDEN.get(check.number, ()))]


def key_of(fn: str, world_size: int, **kwargs) -> str:
    return Run(fn, kwargs, world_size).key()


def test_canaries_are_the_cheapest_two_rank_training_run_of_each_model():
    calls = {key_of("train", 2, model="mlp", steps=3): (Run("train", {"model": "mlp"}, 2), {"model": "mlp"}, 0.2),
             key_of("train", 2, model="mlp", steps=1): (Run("train", {"model": "mlp"}, 2), {"model": "mlp"}, 0.1),
             key_of("train", 2, model="tied"): (Run("train", {"model": "tied"}, 2), {"model": "tied"}, 0.5),
             key_of("train", 2, model="tied", hold_back=True):
                 (Run("train", {}, 2), {"model": "tied", "hold_back": True}, 0.01),  # a fresh secret each run
             key_of("train", 3, model="convbn"): (Run("train", {"model": "convbn"}, 3), {"model": "convbn"}, 0.01),
             key_of("bucket_cases", 1): (Run("bucket_cases", {}, 1), {}, 0.0)}
    assert canaries(calls) == sorted([key_of("train", 2, model="mlp", steps=1), key_of("train", 2, model="tied")])


def test_the_fingerprint_covers_every_source_file_but_the_cache(tmp_path):
    (tmp_path / "grader").mkdir()
    (tmp_path / "grader" / "run.py").write_text("x = 1\n")
    before = source_digest(str(tmp_path))
    (tmp_path / CACHE_NAME).write_text("{}")
    assert source_digest(str(tmp_path)) == before
    (tmp_path / "grader" / "run.py").write_text("x = 2\n")
    assert source_digest(str(tmp_path)) != before
    assert fingerprint(str(tmp_path))["torch"].startswith("2.13.0")


@pytest.fixture(scope="module")
def small_pass(tmp_path_factory):
    """Two canary kinds and a call that is no canary: the cache a setup.sh would make of them."""
    chosen = [run for run in ALL_RUNS if run.fn == "train" and run.world_size == 2
              and run.kwargs.get("model") in ("tied", "mixed") and not run.kwargs.get("hold_back")][:3]
    chosen += [next(run for run in ALL_RUNS if run.fn == "timeline_cases")]
    source = tmp_path_factory.mktemp("source")
    (source / "marker.txt").write_text("a grader's source\n")
    cache = str(source / CACHE_NAME)
    made = ReferencePass(chosen, SOLUTIONS, SOLUTIONS, trusted_env())
    made.run(cache, str(source))
    assert made.how == "computed" and os.path.exists(cache)
    return chosen, str(source), cache, made


def fresh(chosen, source, cache, verify=True) -> ReferencePass:
    again = ReferencePass(chosen, SOLUTIONS, SOLUTIONS, trusted_env())
    again.run(cache, source, verify)
    return again


def test_a_grading_reuses_the_cache_after_its_canaries_agree(small_pass, tmp_path):
    chosen, source, cache, made = small_pass
    copy = str(tmp_path / CACHE_NAME)
    shutil.copyfile(cache, copy)
    again = fresh(chosen, source, copy)
    assert again.how.startswith("cached: ") and "canaries identical" in again.how
    tried = canaries({k: (*again.calls[k], made.seconds[k]) for k in again.calls})
    assert 0 < len(tried) < len(again.calls)
    for key in made.calls:
        assert json.dumps(again.result(key), default=str) == json.dumps(made.result(key), default=str)
        if key not in tried:  # (a canary's time is its own, measured now)
            assert again.seconds[key] >= made.seconds[key]  # cached times are scaled by this machine's speed, never down


def read_cache(path: str) -> tuple[dict, dict]:
    """(the index, {call id: result as stored}) of a cache file: an index line, then a line per call's result."""
    with open(path, "rb") as f:
        index = json.loads(f.readline())
        body = f.read()
    return index, {k: json.loads(body[offset:offset + length]) for k, (offset, length, _, _) in index["calls"].items()}


def write_cache(path: str, index: dict, results: dict) -> None:
    lines = [json.dumps(results[k]).encode() for k in index["calls"]]
    offset = 0
    for entry, line in zip(index["calls"].values(), lines, strict=True):
        entry[:2] = [offset, len(line)]
        offset += len(line) + 1
    with open(path, "wb") as f:
        f.write(json.dumps(index).encode() + b"\n" + b"".join(line + b"\n" for line in lines))


def test_a_canary_whose_bits_differ_sends_the_whole_pass_back_to_be_computed(small_pass, tmp_path):
    chosen, source, cache, made = small_pass
    index, results = read_cache(cache)
    tried = canaries({k: (*made.calls[k], index["calls"][call_id(k)][2]) for k in made.calls})
    results[call_id(tried[0])][0]["param_sums"] = "not what this machine computes"
    other = next(k for k in made.calls if k not in tried)
    results[call_id(other)] = {"a result": "this machine would never give"}
    copy = str(tmp_path / CACHE_NAME)
    write_cache(copy, index, results)
    again = fresh(chosen, source, copy)
    assert again.how.startswith("computed: 1 of ") and "canaries differ" in again.how
    assert again.result(other) != {"a result": "this machine would never give"}
    assert read_cache(copy)[1][call_id(other)] != {"a result": "this machine would never give"}  # stored anew


def test_a_cache_that_is_not_whole_is_not_used(small_pass, tmp_path):
    chosen, source, cache, _ = small_pass
    copy = str(tmp_path / CACHE_NAME)
    with open(cache, "rb") as f, open(copy, "wb") as out:
        out.write(f.read()[:-2])
    again = fresh(chosen, source, copy)
    assert again.how == "computed" and len(read_cache(copy)[1]) == len(again.calls)


def test_a_cache_of_another_grader_is_not_used(small_pass, tmp_path):
    chosen, source, cache, _ = small_pass
    other_source = tmp_path / "source"
    shutil.copytree(source, other_source)
    (other_source / "marker.txt").write_text("another grader's source\n")
    again = fresh(chosen, str(other_source), str(other_source / CACHE_NAME))
    assert again.how.startswith("computed: the cache was made by another grader")


def test_staff_tools_use_their_own_cache_as_it_is(small_pass, tmp_path):
    chosen, source, cache, made = small_pass
    copy = str(tmp_path / CACHE_NAME)
    shutil.copyfile(cache, copy)
    again = fresh(chosen, source, copy, verify=False)
    assert again.how.startswith("cached: made on this machine for staff tools")
    assert again.pool_start_s == made.pool_start_s and again.seconds == made.seconds
