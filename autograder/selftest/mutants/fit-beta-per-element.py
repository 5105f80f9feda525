"""Q9: β fitted in float32 elements per second: the sizes counted in elements, not in bytes."""
ANSWERS = "answers.py"

EDITS = {ANSWERS: [("    bandwidth = [2 * (k - 1) / k * n for n in sizes]",
                    "    bandwidth = [2 * (k - 1) / k * (n / 4) for n in sizes]")]}
VIOLATES = "Q9"
CAUGHT_BY = {"6.9": "float32 elements per second"}
