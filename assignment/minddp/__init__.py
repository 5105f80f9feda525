# GENERATED from solutions/minddp/__init__.py by tools/assign.py (staff: edit that file, then `make assignment`).
# Provided code: do not edit it by hand; the grader uses its own copy.
"""minddp: a small DistributedDataParallel built on torch.distributed, one lecture concept per module.

    process_group  Part 1  torchrun environment, rank layout, init/destroy        (lecture §1.3)
    bucketing      Part 2  parameters -> buckets                                   (lecture §2.2)
    reducer        Part 3  autograd hooks, ordered async all-reduce, finalize      (lecture §2.3)
    ddp            Part 4  the wrapper: broadcasts, no_sync, buffers               (lecture §1.4, §4)
    timeline       Part 5  the alpha-beta timeline model of overlap and scaling    (lecture §3, §5)
    launch, workers, models, model_shapes: provided helpers.

Nothing is imported here on purpose: importing one module never loads the others.
"""
