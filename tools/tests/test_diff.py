"""`assign.py diff`: stub vs solution per function, and a student's submission vs the solution."""

from __future__ import annotations

import json
import os
import re
import zipfile

from conftest import REPO, run_assign, write


def test_stub_diff_names_every_function_and_sums_up():
    result = run_assign("diff")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    for name in ("node_and_local_rank", "compute_bucket_assignment", "Reducer.mark_variable_ready",
                 "Reducer.prepare_for_backward", "DistributedDataParallel.forward", "simulate_step"):
        assert f" · {name} · " in out, name
    assert "── Part 3 · minddp/reducer.py · Reducer.autograd_hook · 8 solution lines" in out
    assert "--- stub\n+++ solution" in out
    assert "-        raise NotImplementedError(\"Part 3: Reducer.autograd_hook — see handout §3\")" in out
    # a function of a design region: all of it is solution, the stub has none of it
    assert ("── Part 3 · minddp/reducer.py · Reducer.mark_bucket_ready · 5 solution lines\n--- stub\n+++ solution\n"
            "@@ -0,0 +1,5 @@\n+    def mark_bucket_ready(") in out
    assert "SOLUTION" not in out  # marker lines are not part of the diff
    table = out[out.index("Part  File"):].splitlines()
    assert table[2].split() == ["1", "minddp/process_group.py", "6", table[2].split()[-1]]
    assert table[-1].split()[0] == "total" and "\033[" not in out


def test_color_is_optional():
    assert "\033[32m+" in run_assign("diff", "--color").stdout


def _solution(path: str) -> str:
    with open(os.path.join(REPO, "solutions", path), encoding="utf-8") as f:
        return f.read()


def test_submission_zip_is_compared_function_by_function(tmp_path):
    reducer = _solution("minddp/reducer.py").replace("self.next_bucket += 1", "self.next_bucket = self.next_bucket + 1")
    bucketing = _solution("minddp/bucketing.py").replace(
        "    return list(range(num_params - 1, -1, -1))",
        '    raise NotImplementedError("Part 2: reverse_order — see handout §2")')
    bucketing += "\n\ndef my_helper():\n    return 1\n"
    archive = tmp_path / "submission.zip"
    with zipfile.ZipFile(archive, "w") as zf:  # inside a top folder, as some students zip it
        zf.writestr("hw/minddp/reducer.py", reducer)
        zf.writestr("hw/minddp/bucketing.py", bucketing)
        zf.writestr("hw/minddp/process_group.py", _solution("minddp/process_group.py"))
    out = run_assign("diff", "--submission", str(archive)).stdout
    assert re.search(r"Reducer\.mark_bucket_ready · \d+ solution lines · differs", out)
    assert "+            self.next_bucket = self.next_bucket + 1" in out
    assert "--- solution\n+++ submission" in out
    assert re.search(r"reverse_order · \d+ solution lines · still a stub", out)
    assert re.search(r"Reducer\.build_buckets · \d+ solution lines · identical", out)
    assert re.search(r"DistributedDataParallel\.forward · \d+ solution lines · missing", out)  # ddp.py not submitted
    rows = {line.split()[1]: line for line in out.splitlines() if line.strip().startswith(("1 ", "2 ", "4 "))}
    assert "added: my_helper" in rows["minddp/bucketing.py"]
    assert "file missing" in rows["minddp/ddp.py"]


def test_submission_folder_works_too(tmp_path):
    write(str(tmp_path / "sub" / "minddp" / "timeline.py"), _solution("minddp/timeline.py"))
    out = run_assign("diff", "--submission", str(tmp_path / "sub")).stdout
    assert "simulate_step · 12 solution lines · identical" in out


def test_missing_submission_is_an_error(tmp_path):
    result = run_assign("diff", "--submission", str(tmp_path / "nowhere.zip"))
    assert result.returncode == 2 and "not a folder or a .zip file" in result.stderr


def test_comments_and_docstrings_are_not_differences_unless_asked(tmp_path):
    """The 2026-12-01 student: code identical to the solution but for comments (the stub's leftover
    `# YOUR CODE HERE`) and a docstring of their own is identical; COMMENTS=1 shows those lines."""
    timeline = _solution("minddp/timeline.py").replace(
        "    return ((n - 1) * nosync_step + sync_step) / n\n",
        "    # YOUR CODE HERE\n\n    return ((n - 1) * nosync_step + sync_step) / n  # the average\n", 1)
    timeline = re.sub(r'(def ring_allreduce_time\([^)]*\)[^:]*:\n)(\s+)"""', r'\1\2"""My own words.\n\2', timeline, count=1)
    assert timeline != _solution("minddp/timeline.py")
    write(str(tmp_path / "sub" / "minddp" / "timeline.py"), timeline)
    out = run_assign("diff", "--submission", str(tmp_path / "sub")).stdout
    assert re.search(r"skip_sync_step_time · \d+ solution lines · identical", out)
    assert re.search(r"ring_allreduce_time · \d+ solution lines · identical", out)
    shown = run_assign("diff", "--submission", str(tmp_path / "sub"), "--comments").stdout
    assert re.search(r"skip_sync_step_time · \d+ solution lines · differs", shown) and "# YOUR CODE HERE" in shown


def test_results_put_each_parts_verdicts_beside_its_code(tmp_path):
    """Each part's score at its first function; each failed entry's whole message (a stand-in's note after the
    reason included) under the function it concerns: named by its check's runs (5.1's cases call
    ring_allreduce_time), by its message, else the first function that differs."""
    timeline = _solution("minddp/timeline.py").replace("return total / n", "return total / n + 0.0  # changed")
    write(str(tmp_path / "sub" / "minddp" / "timeline.py"), timeline)
    stand_in = "(Graded with a stand-in built from torch's own code in place of your minddp/reducer.py, ...)"
    results = {"tests": [
        {"number": "5.1", "name": "ring cost", "score": 0.0, "max_score": 3.0, "status": "failed",
         "output": "On the handout's cases: yours 0.05002 / expected 0.10002\n\n" + stand_in},
        {"number": "5.3", "name": "simulator", "score": 0.0, "max_score": 5.0, "status": "failed",
         "output": "\nOn 3 cases: simulate_step started bucket 1 before bucket 0 ended\nmore"},
        {"number": "5.4", "name": "ddp step", "score": 2.0, "max_score": 2.0, "status": "passed", "output": ""},
        {"number": "A.1", "name": "unused", "score": 2.0, "max_score": 0.0, "status": "passed", "output": ""},
        {"number": "0.1", "name": "Integrity report (staff only)", "score": 0.0, "max_score": 0.0,
         "status": "passed", "output": "grader version x"}]}
    write(str(tmp_path / "results.json"), json.dumps(results))
    out = run_assign("diff", "--submission", str(tmp_path / "sub"), "--results", str(tmp_path / "results.json")).stdout
    sections = {line.split(" · ")[2]: block for block in out.split("── Part ")[1:]
                for line in [("── Part " + block).splitlines()[0]]}
    ring, simulate = sections["ring_allreduce_time"], sections["simulate_step"]
    assert "Part 5 verdicts: 2/10 points, 1 of 3 entries passed" in sections[out.split("── Part 5 · ")[1]
                                                                           .split(" · ")[1]]
    assert "✗ 5.1 ring cost (0/3 points)\n     │ On the handout's cases: yours 0.05002 / expected 0.10002\n     │\n" \
           f"     │ {stand_in}" in ring  # the whole message, the reason first
    assert "✗ 5.3 simulator (0/5 points)\n     │ On 3 cases: simulate_step started bucket 1" in simulate
    assert "     │ more" in simulate and "5.3" not in ring
    assert out.count("Part 5 verdicts") == 1  # once per part, not per function
    from tools import on_student_side
    with on_student_side():
        from checks.registry import public_checks
        bonus_a = sum(c.weight for c in public_checks() if c.part == "A")  # extra credit: not in results.json
    assert f"Bonus A verdicts: 2/{bonus_a:g} points of extra credit" in out and "Integrity report" not in out
