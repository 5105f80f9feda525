"""The hidden Gradescope autograder for the minddp homework; start reading at run.py.

The grader imports the check library (``checks``, the same package students run their public tests
with) from the autograder's pristine ``harness/`` copy, or from the repository's solutions/ when run there.
"""

import os
import sys

_SOURCE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
for _path in (os.path.join(_SOURCE, "harness"), os.path.join(os.path.dirname(_SOURCE), "solutions")):
    if os.path.isdir(os.path.join(_path, "checks")):
        if _path not in sys.path:
            sys.path.insert(0, _path)
        break
