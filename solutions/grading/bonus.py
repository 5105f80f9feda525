"""Bonus A (unused parameters) and B (bucket rebuild), handout §4: extra credit, graded with your own files."""

from __future__ import annotations

from grading.checks import Check, Outcome, fail, train
from grading.compare import same_training
from grading.part3 import bucket_records

UNUSED = {"find_unused_parameters": True}


def unused_everywhere(o: Outcome) -> None:
    for rank, (r, g) in enumerate(zip(o.ref, o.got, strict=True)):
        for name, none in r["grad_is_none"].items():
            if g["grad_is_none"].get(name) != none:
                fail(f"rank {rank}, {name}: grad is {'None' if g['grad_is_none'].get(name) else 'a tensor'}; torch "
                     f"leaves it {'None' if none else 'a tensor'} (handout §4, bonus A)")
    same_training(o, "4 (bonus A)")


def usage_bitmap(o: Outcome) -> None:
    for rank, g in enumerate(o.got):
        for step, entry in enumerate(g["steps"]):
            usage = [c for c in entry["backward"][-1] if c["dtypes"] == ["Int"]]
            if len(usage) != 1:
                fail(f"rank {rank}, step {step + 1}: expected exactly one int32 all-reduce (the usage bitmap) per "
                     f"backward, saw {len(usage)} (handout §4, bonus A)")
    same_training(o, "4 (bonus A)")


CHECKS = [
    Check("A.1", "a parameter unused on every rank keeps grad=None, nothing hangs", weight=2, section="4",
          runs=(train("minddp", "branch b unused on every rank", model="branchy", steps=3, use_b="none",
                      ddp_kwargs=UNUSED),),
          compare=unused_everywhere),
    Check("A.2", "a parameter used on rank 0 only ends as (g0 + 0) / 2 on both ranks", weight=2, section="4",
          runs=(train("minddp", "branch b used on rank 0 only", model="branchy", steps=3, use_b="rank0",
                      ddp_kwargs=UNUSED),),
          compare=unused_everywhere),
    Check("A.3", "one extra int32 all-reduce of the usage bitmap per backward", weight=1, section="4",
          runs=(train("minddp", "branch b used on every rank", model="branchy", steps=2, use_b="all",
                      ddp_kwargs=UNUSED),),
          compare=usage_bitmap),
    Check("B.1", "buckets rebuilt in the observed gradient-ready order match torch's from iteration 2", weight=5,
          section="4", runs=tuple(train("minddp", label, model=model, steps=3, hook="record",
                                        ddp_kwargs={"bucket_cap_mb_list": [0.001, 0.01], "rebuild_buckets": True})
                                  for model, label in (("convbn", "Conv + BatchNorm (weights ready before biases)"),
                                                       ("twobranch", "two branches, rank 0 computes branch a last"))),
          compare=lambda o: bucket_records(o, "4 (bonus B)")),
]
