"""minddp: a small DistributedDataParallel built on torch.distributed, one lecture concept per module.

    process_group  Part 1  torchrun environment, rank layout, init/destroy        (handout §1)
    bucketing      Part 2  parameters -> buckets                                   (handout §2)
    reducer        Part 3  autograd hooks, ordered async all-reduce, finalize      (handout §3)
    ddp            Part 4  the wrapper: broadcasts, no_sync, buffers               (handout §4)
    timeline       Part 5  the alpha-beta timeline model of overlap and scaling    (handout §5)
    launch, workers, models, model_shapes: provided helpers.

Nothing is imported here on purpose: importing one module never loads the others.
"""
