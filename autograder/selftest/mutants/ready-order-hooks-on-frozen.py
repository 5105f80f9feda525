"""Bonus B: the ready-order hooks are registered on every parameter of the module, frozen ones included, so the indices noted are the module's, not the Reducer's."""
from autograder.selftest.kinds import DDP

EDITS = {DDP: [("                             for i, p in enumerate(self.params)]\n",
                "                             for i, p in enumerate(self.module.parameters())]\n")]}
VIOLATES = "B2"
CAUGHT_BY = {"B.1": "frozen"}
