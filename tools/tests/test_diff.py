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
    write(str(tmp_path / "sub" / "minddp" / "timeline.py"), _solution("minddp/timeline.py"))
    results = {"tests": [
        {"number": "5.1", "name": "ring cost", "score": 3.0, "max_score": 3.0, "status": "passed", "output": ""},
        {"number": "5.3", "name": "simulator", "score": 0.0, "max_score": 5.0, "status": "failed",
         "output": "\nOn 3 cases: bucket 1 started before bucket 0 ended\nmore"}]}
    write(str(tmp_path / "results.json"), json.dumps(results))
    out = run_assign("diff", "--submission", str(tmp_path / "sub"), "--results", str(tmp_path / "results.json")).stdout
    part5 = out[out.index("── Part 5"):]
    assert "Part 5 verdicts: 3/8 points, 1 of 2 entries passed" in part5.splitlines()[1]
    assert "✗ 5.3 simulator: On 3 cases: bucket 1 started before bucket 0 ended" in part5
    assert out.count("Part 5 verdicts") == 1  # once per part, not per function
