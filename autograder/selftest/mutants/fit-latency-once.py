"""Q9: α fitted with the latency paid once per all-reduce (t = α + 2(K-1)/K · n/β), not 2(K-1) times."""
ANSWERS = "answers.py"

EDITS = {ANSWERS: [("    latency = [2 * (k - 1) for n in sizes]", "    latency = [1 for n in sizes]")]}
VIOLATES = "Q9"
CAUGHT_BY = {"6.9": "latency counted once"}
