"""`make measure` (solutions/measure.py, provided to students), run as a student runs it: before any part is done."""

from __future__ import annotations

import ast

import pytest
from conftest import copy_release, make

from tools import on_student_side


@pytest.fixture(scope="module")
def solutions_on_path():
    with on_student_side():
        yield


@pytest.fixture(scope="module")
def measured(tmp_path_factory) -> tuple[str, dict]:
    """One quick `make measure` in a fresh release whose student files are all stubs (about 10 s)."""
    release = copy_release(str(tmp_path_factory.mktemp("release") / "assignment"))
    result = make(release, "measure", "REPEATS=1", timeout=240)
    assert result.returncode == 0, result.stdout + result.stderr
    pasted = result.stdout.split("in answers.py (handout §6, Q8):\n", 1)[1]
    return result.stdout, ast.literal_eval(pasted)


def test_make_measure_needs_no_student_code_and_prints_a_dict_q8_accepts(measured, solutions_on_path):
    from checks import part6
    stdout, answer = measured
    import measure
    assert sorted(answer["allreduce_s"]) == list(measure.SIZES)
    assert list(answer) == list(part6.MEASUREMENT_KEYS)
    checked = part6.read_measurements(answer)  # raises Failure with the message a student would read
    alpha, beta = part6.fit_alpha_beta(checked["allreduce_s"], checked["world_size"])
    assert alpha > 0 and beta > 0, (alpha, beta, stdout)


def test_a_run_past_its_deadline_is_stopped_and_every_worker_reaped(solutions_on_path, monkeypatch):
    import measure
    started = []
    real_popen = measure.subprocess.Popen
    monkeypatch.setattr(measure.subprocess, "Popen", lambda *a, **k: started.append(real_popen(*a, **k)) or started[-1])
    with pytest.raises(SystemExit, match="still running after"):
        measure.run_workers(repeats=1, deadline_s=0.2)  # the workers are still importing torch by then
    assert len(started) == measure.WORLD_SIZE
    assert all(proc.returncode is not None for proc in started)  # killed and waited for: no zombie left
