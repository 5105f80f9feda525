"""Q11: the world size read off weak_scaling as the first whose efficiency is ABOVE the level (> instead of <)."""
ANSWERS = "answers.py"

EDITS = {ANSWERS: [('    below = next((row["world_size"] for row in bert if row["efficiency"] < 0.5), None)',
                    '    below = next((row["world_size"] for row in bert if row["efficiency"] > 0.5), None)')]}
VIOLATES = "Q11"
CAUGHT_BY = {"6.11": "one of the two is wrong"}
