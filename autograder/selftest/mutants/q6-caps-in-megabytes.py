"""Q6: the caps given in MB (1, 50) instead of bytes, as the sweep's table would be read off a plot."""
ANSWERS = "answers.py"

EDITS = {ANSWERS: [("    return (1000000, 50000000, 1.265864912283417, 2.710272, 0.9661390205897566)",
                    "    return (1, 50, 1.265864912283417, 2.710272, 0.9661390205897566)")]}
VIOLATES = "Q6"
CAUGHT_BY = {"6.6": "one of the two is wrong"}
