"""Q6: the best cap read off the sweep as the one with the LONGEST step (max instead of min)."""
ANSWERS = "answers.py"

EDITS = {ANSWERS: [('        return min(sweep["points"], key=lambda point: point["step_s"])["cap_bytes"]',
                    '        return max(sweep["points"], key=lambda point: point["step_s"])["cap_bytes"]')]}
VIOLATES = "Q6"
CAUGHT_BY = {"6.6": "one of the two is wrong"}
