# GENERATED from solutions/tests/test_ddp.py by tools/assign.py (staff: edit that file, then `make assignment`).
# Public tests: do not edit them by hand; the grader runs its own copy (and more tests).
"""Parts 3 and 4 — the Reducer and the wrapper, compared with torch's own DDP (handout §3, §4).

Each test runs the same scenario (tests/scenarios.py) with impl="torch" and impl="minddp" on the same
gloo workers and compares the records: values bit for bit at world size 2, buckets and their launch
order, collectives per phase, and overlap by order of events.
"""

from __future__ import annotations

import pytest
import torch

from minddp.workers import ScenarioError

MLP_CAPS = {  # 6 x Linear(512, 512): weight 1 MiB + bias 2 KiB per layer
    "bucket_per_tensor": {"bucket_cap_mb": 0},
    "bucket_per_layer": {"bucket_cap_mb": 1},
    "single_bucket": {"bucket_cap_mb": 100},
    "torch_defaults": {},
}


def run_both(pool, **scenario):
    """(torch's records, minddp's records), one record per rank. minddp runs first so a stub fails fast."""
    ours = pool.run("scenarios:train", impl="minddp", **scenario)
    return pool.run("scenarios:train", impl="torch", **scenario), ours


def first_difference(ref: dict, got: dict) -> str:
    """Name the first step and quantity where minddp departs from torch, with the final max difference."""
    for step, (r, g) in enumerate(zip(ref["steps"], got["steps"])):
        for key, what in (("buffers", "buffers after forward"), ("grads", "gradients when backward returned"),
                          ("params", "parameters after optimizer.step()")):
            if r[key] != g[key]:
                worst = max(((name, (ref["params"][name] - got["params"][name]).abs().max().item())
                             for name in ref["params"]), key=lambda item: item[1])
                return (f"step {step}: {what} differ from torch DDP's; after the last step the largest "
                        f"parameter difference is {worst[1]:.3g} in {worst[0]}")
    return ""


def assert_bitwise_equal(refs: list, gots: list) -> None:
    for rank, (ref, got) in enumerate(zip(refs, gots)):
        assert got["params_at_start"] == ref["params_at_start"], \
            f"rank {rank}: parameters after construction differ from torch's (handout §4: broadcast from rank 0)"
        assert got["buffers_at_start"] == ref["buffers_at_start"], \
            f"rank {rank}: buffers after construction differ from torch's (handout §4: broadcast from rank 0)"
        problem = first_difference(ref, got)
        assert not problem, f"rank {rank}: {problem}"


@pytest.mark.parametrize("caps", MLP_CAPS.values(), ids=MLP_CAPS.keys())
def test_mlp_bitwise_equal_to_torch(pool2, caps):
    assert_bitwise_equal(*run_both(pool2, model="mlp", steps=5, ddp_kwargs=caps))


@pytest.mark.parametrize("model", ["convbn", "tied", "frozen", "mixed", "many_small"])
def test_models_bitwise_equal_to_torch(pool2, model):
    """convbn: buffers after every forward; tied: one parameter used twice; frozen: skipped; mixed dtypes."""
    assert_bitwise_equal(*run_both(pool2, model=model, steps=5, ddp_kwargs={"bucket_cap_mb": 0.01}))


def test_construction_broadcast_from_rank_0(pool2):
    refs, gots = run_both(pool2, model="convbn", steps=3, seed_per_rank=True)
    assert gots[0]["params_at_start"] == gots[1]["params_at_start"], "ranks start from different weights"
    assert_bitwise_equal(refs, gots)


def test_world_size_3_close_to_torch(pool3):
    # At 3 ranks x * (1/3) rounds, and gloo's summation order depends on the buffer layout: ~1 ulp.
    refs, gots = run_both(pool3, model="mlp", steps=5, ddp_kwargs={"bucket_cap_mb": 1})
    for rank, (ref, got) in enumerate(zip(refs, gots)):
        for name, value in ref["params"].items():
            torch.testing.assert_close(got["params"][name], value, rtol=1e-6, atol=1e-7,
                                       msg=lambda m, rank=rank, name=name: f"rank {rank}, {name}: {m}")
    assert gots[0]["params"].keys() == gots[2]["params"].keys()
    assert all(gots[0]["steps"][-1]["params"] == g["steps"][-1]["params"] for g in gots), \
        "replicas diverged: every rank must end with identical parameters"


@pytest.mark.parametrize("model, caps", [
    ("mlp", {"bucket_cap_mb_list": [1, 2]}),
    ("mlp", {"bucket_cap_mb": 0}),
    ("many_small", {"bucket_cap_mb_list": [0.005, 0.02]}),
    ("tied", {"bucket_cap_mb": 0.005}),
])
def test_buckets_and_launch_order_match_torch(pool2, model, caps):
    """From iteration 2 on, torch buckets by observed ready order; for these models that is reverse order."""
    refs, gots = run_both(pool2, model=model, steps=3, ddp_kwargs=caps, hook="record")
    for rank, (ref, got) in enumerate(zip(refs, gots)):
        for step in (1, 2):
            assert got["steps"][step]["buckets"] == ref["steps"][step]["buckets"], (
                f"rank {rank}, iteration {step + 1}: (bucket index, parameters) in launch order differ "
                f"(handout §2, §3)\n  yours:  {got['steps'][step]['buckets']}\n"
                f"  torch's: {ref['steps'][step]['buckets']}")


@pytest.mark.parametrize("model", ["mlp", "many_small", "mixed"])
def test_one_allreduce_per_bucket_in_backward(pool2, model):
    refs, gots = run_both(pool2, model=model, steps=3, ddp_kwargs={"bucket_cap_mb_list": [0.01, 0.05]})
    for ref, got in zip(refs, gots):
        for step in (1, 2):
            assert got["steps"][step]["forward"] == [[]], "no collective in forward without buffers"
            ours = sorted(map(str, got["steps"][step]["backward"][0]))
            theirs = sorted(map(str, ref["steps"][step]["backward"][0]))
            assert ours == theirs, f"all-reduces in backward differ from torch's:\n{ours}\n{theirs}"


def test_backward_overlaps_communication(pool2):
    """A bucket is launched before the last gradient exists, and waiting for it does not block backward:
    rank 1 holds back its first all-reduce until rank 0 has computed every gradient (scenarios.ReadyProbe)."""
    refs, gots = run_both(pool2, model="mlp", steps=2, ddp_kwargs={"bucket_cap_mb": 1}, hold_back=True)
    for got in gots:
        assert got["steps"][1]["allreduces_before_last_grad"] >= 1, (
            "no all-reduce was launched before the last gradient was computed: launch each bucket "
            "from inside backward as soon as it is ready (handout §3)")
        assert not got["steps"][1]["backward_blocked"], (
            "rank 0 could not finish backward while rank 1 held back its first all-reduce: your all-reduce "
            "blocks backward; launch it with async_op=True and wait only in finalize_backward (handout §3)")
    assert refs[0]["steps"][1]["allreduces_before_last_grad"] >= 1  # torch overlaps too
    assert not refs[1]["steps"][1]["backward_blocked"]  # and never blocks backward


def test_ready_order_differs_between_ranks(pool2):
    """Rank 0 and rank 1 produce the two branches' gradients in opposite orders; launch order is by index."""
    refs, gots = run_both(pool2, model="twobranch", steps=5, ddp_kwargs={"bucket_cap_mb": 0.01})
    assert_bitwise_equal(refs, gots)


@pytest.mark.parametrize("model", ["mlp", "convbn"])
def test_no_sync_accumulation(pool2, model):
    refs, gots = run_both(pool2, model=model, steps=3, accumulate=4, no_sync="forward")
    assert_bitwise_equal(refs, gots)
    for got in gots:
        for step in got["steps"]:
            assert step["backward"][:3] == [[], [], []], \
                "a backward whose forward ran inside no_sync() must launch no collective (handout §4)"
            assert any(c["op"] == "all_reduce" for c in step["backward"][3]), "the last micro-batch must sync"


def test_no_sync_around_backward_only_still_syncs(pool2):
    refs, gots = run_both(pool2, model="convbn", steps=2, accumulate=3, no_sync="backward")
    assert_bitwise_equal(refs, gots)
    for got in gots:
        assert all(step["backward"][0] for step in got["steps"]), \
            "the no_sync switch is read in forward: wrapping only backward still synchronises (handout §4)"


def test_buffers_broadcast_at_start_of_forward(pool2):
    refs, gots = run_both(pool2, model="convbn", steps=3)
    for ref, got in zip(refs, gots):
        theirs = ref["steps"][0]["forward"][0]  # later forwards of torch's also rebuild buckets
        assert theirs and {c["op"] for c in theirs} == {"broadcast"}
        for step in got["steps"]:
            assert step["forward"][0] == theirs, (
                "rank 0's buffers are broadcast at the start of each forward, one broadcast per dtype "
                f"(handout §4)\n  yours:  {step['forward'][0]}\n  torch's: {theirs}")
    assert_bitwise_equal(refs, gots)


def test_fp16_compression_hook_matches_torch(pool2):
    assert_bitwise_equal(*run_both(pool2, model="mlp", steps=3, hook="fp16", ddp_kwargs={"bucket_cap_mb": 1}))


# -- bonus: unused parameters and bucket rebuild ---------------------------------------------------------------

@pytest.mark.parametrize("use_b", ["none", "rank0", "all"])
def test_find_unused_parameters(pool2, use_b):
    scenario = dict(model="branchy", steps=3, use_b=use_b, ddp_kwargs={"find_unused_parameters": True})
    refs, gots = run_both(pool2, **scenario)
    assert_bitwise_equal(refs, gots)
    for ref, got in zip(refs, gots):
        for name, grad in ref["grads"].items():
            assert (got["grads"][name] is None) == (grad is None), f"{name}: grad None-ness differs from torch"
        usage = [c for c in got["steps"][1]["backward"][0] if c["dtypes"] == ["Int"]]
        assert len(usage) == 1, "one extra int32 all-reduce of the usage bitmap per backward"
    if use_b == "none":
        assert gots[0]["grads"]["b.weight"] is None, "globally unused parameters keep grad=None"


def test_unused_parameter_without_flag_raises_like_torch(pool2):
    for impl in ("torch", "minddp"):
        with pytest.raises(ScenarioError, match="Expected to have finished reduction"):
            pool2.run("scenarios:train", impl=impl, model="branchy", steps=2, use_b="none")


@pytest.mark.parametrize("model", ["twobranch", "convbn"])
def test_rebuild_buckets_in_observed_order(pool2, model):
    """Gradients become ready against registration order (twobranch: rank 0 computes branch a last;
    convbn: conv and BatchNorm weights before biases): rebuilt buckets follow the observed order."""
    scenario = dict(model=model, steps=3, hook="record",
                    ddp_kwargs={"bucket_cap_mb_list": [0.001, 0.01], "rebuild_buckets": True})
    refs, gots = run_both(pool2, **scenario)
    assert_bitwise_equal(refs, gots)
    for ref, got in zip(refs, gots):
        assert got["steps"][2]["buckets"] == ref["steps"][2]["buckets"]
