"""A whole submission written from the student zip and the handout's contracts alone, by a helper who never saw the reference (2026-12-02: 17 minutes, no hint opened): every file as uploaded (submissions/handout-only.zip), with the provided code that later releases changed brought up to date, as a student would merge a new release."""
import ast
import os
import zipfile

from autograder.selftest.kinds import AT_END, BUCKETING, REDUCER, Function
from autograder.selftest.runner import REPO, apply_edits

HERE = os.path.dirname(os.path.abspath(__file__))
# Provided (outside the stubs) and changed since 2026-12-02: Bonus A's usage accounting (2026-12-04, torch's
# count of gradients under no_sync()), the student's to write since 2026-12-06 (issue 33): taken from the reference,
# as the release of 2026-12-04 provided it.
PROVIDED_SINCE = {REDUCER: (["Reducer.enable_usage_tracking", "Reducer.record_usage"], ["UsedUnderNoSync"]),
                  # Asked since 2026-12-06 (issue 33, handout §2.5): the helper's file has no overlap_bytes; the
                  # reference's is added, and the variant speaks for the rest of bucketing.py.
                  BUCKETING: ([], ["overlap_bytes"])}
# Asked by the contract since (issue 35, C1): a slot has its parameter's strides, as torch's (as_strided). The
# helper's slots were row-major views (view_as), right under the contract of 2026-12-02: made torch's, in the
# helper's own names.
CONTRACT_SINCE = {REDUCER: [
    ("views = [buffer[o:o + n].view_as(p) for o, n, p in zip(offsets, numels, params)]",
     "views = [buffer.as_strided(p.size(), p.stride(), o) for o, p in zip(offsets, params)]"),
    ("return [flat[o:o + n].view_as(p) for o, n, p in zip(self.offsets, self.numels, self.params)]",
     "return [flat.as_strided(p.size(), p.stride(), flat.storage_offset() + o) for o, p in zip(self.offsets, self.params)]"),
]}


def reference_source(path: str, qualname: str) -> str:
    """The reference's source of ``qualname`` (a function, a method or a class) in ``path``."""
    with open(os.path.join(REPO, "solutions", path), encoding="utf-8") as f:
        text = f.read()
    scope, node = ast.parse(text).body, None
    for name in qualname.split("."):
        node = next(n for n in scope if isinstance(n, (ast.FunctionDef, ast.ClassDef)) and n.name == name)
        scope = node.body
    return "\n".join(text.splitlines()[node.lineno - 1:node.end_lineno])


with zipfile.ZipFile(os.path.join(HERE, "..", "submissions", "handout-only.zip")) as archive:
    EDITS = {name: archive.read(name).decode("utf-8") for name in archive.namelist()}
for path, edits in CONTRACT_SINCE.items():
    EDITS[path] = apply_edits(EDITS[path], path, edits, "handout-only")
for path, (replaced, added) in PROVIDED_SINCE.items():
    EDITS[path] = apply_edits(EDITS[path], path, [Function(q, reference_source(path, q)) for q in replaced]
                              + [(AT_END, "\n\n" + reference_source(path, q) + "\n") for q in added], "handout-only")
# Parts 5 and 6 were redesigned since (2026-12-06, issue 33): the experiments became the student's to write, with a
# design problem, and the written questions ask what they found. The helper's files answer the old contract: they
# stay out (those parts run the reference's files), and the variant speaks for Parts 1-4 and the bonus.
for path in ("minddp/timeline.py", "answers.py"):
    del EDITS[path]
