"""true_backward_order reverses the permutation itself instead of inverting it (right only for involutions)."""
from autograder.selftest.kinds import Function

TIMELINE = "minddp/timeline.py"

EDITS = {TIMELINE: [Function("true_backward_order", '''
def true_backward_order(permutation):
    """Gradients come in reverse original order: read the permutation backwards."""
    return [permutation[original] for original in reversed(range(len(permutation)))]
''')]}
VIOLATES = "true_backward_order"
CAUGHT_BY = {"5.7": "instead of inverted"}
