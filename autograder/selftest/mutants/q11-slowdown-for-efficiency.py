"""Q11: ResNet-50's slowdown at the largest world size (iteration at K over one rank's) given for its efficiency."""
ANSWERS = "answers.py"

EDITS = {ANSWERS: [("    return (1.515354063771205, 1.6388802682119978, 256, 0.8328008516469857)",
                    "    return (1.515354063771205, 1.6388802682119978, 256, 1 / 0.8328008516469857)")]}
VIOLATES = "Q11"
CAUGHT_BY = {"6.11": "one of the two is wrong"}
