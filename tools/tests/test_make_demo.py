"""`make demo` (solutions/demo.py, provided to students), run as a student runs it, on the reference: the two DDPs
train bit for bit alike, and the collectives table leaves out when torch rebuilds its buckets (Bonus B's question)."""

from __future__ import annotations

import re

from conftest import copy_release, make, replace_stubs_with_solutions


def test_the_reference_trains_like_torch_and_the_rebuild_stays_bonus_bs_question(tmp_path):
    release = copy_release(str(tmp_path / "assignment"))
    replace_stubs_with_solutions(release)
    result = make(release, "demo")
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    assert re.findall(r"^\s+\d+\s+\S+\s+bitwise equal: (\w+)", out, re.M) == ["yes"] * 5, out
    assert "minddp and torch: identical from iteration 2 on" in out, out
    table = out.split("3. Collectives per phase", 1)[1].split("Left out above", 1)
    assert len(table) == 2, out  # the footnote that says the rebuild's broadcasts are left out
    forwards = [line for line in table[0].splitlines() if re.match(r"\s+steps? [\d-]+ forward", line)]
    assert forwards and not any("broadcast" in line for line in forwards), table[0]
