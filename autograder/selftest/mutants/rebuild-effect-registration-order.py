"""rebuild_order_effect's "no rebuild" buckets visit the parameters in registration order, where DDP's first buckets
visit them in reverse registration order."""
TIMELINE = "minddp/timeline.py"

EDITS = {TIMELINE: [('return {"no_rebuild_s": step(None),',
                     'return {"no_rebuild_s": step(list(range(len(tensors)))),')]}
VIOLATES = "B5"
CAUGHT_BY = {"B.3": "no_rebuild_s"}
