"""The README's durations are generated from tools/timings.json (never typed), as tools/timings.py writes them."""

from tools import timings


def test_readme_shows_the_kept_measurements():
    assert timings.main(["check"]) == 0, "README.md's block differs from `tools/timings.py readme`: run make timings"


def test_a_tier_is_the_sum_of_its_targets_or_a_dash():
    seconds = {"lint": 10, "check-sync": 5, "unit": 30, "validate": 20, "selftest@fast": 200, "py310": 100}
    text = timings.block({"seconds": seconds, "machine": "2 CPUs", "date": "2026-12-01"})
    assert "| `make check` | 45 s |" in text
    assert "| `make test` | 4 min |" in text  # 265 s (py310 is CI's, not make test's)
    assert f"| `.ci/run` | {timings.DASH} |" in text  # selftest@ci, docker and ci-last were not measured
    assert "2 CPUs, 2026-12-01" in text


def test_the_selection_is_part_of_the_selftest_name(monkeypatch):
    monkeypatch.setenv("SELFTEST", "all")
    monkeypatch.setenv("MUTANTS", "all")
    assert timings.selection("selftest") == "selftest@all"
    monkeypatch.setenv("SELFTEST", "fast")
    assert timings.selection("selftest") == "selftest@ci"  # what .ci/run's make test grades
    monkeypatch.setenv("SELFTEST", "isolation")
    assert timings.selection("selftest") == "selftest@other"
    monkeypatch.setenv("SELFTEST", "fast")
    monkeypatch.delenv("MUTANTS")
    assert timings.selection("selftest") == "selftest@fast"
    assert timings.selection("unit") == "unit"


def test_keep_updates_what_was_measured_and_keeps_the_rest_of_the_same_machine():
    old = {"machine": "2 CPUs", "date": "2026-12-01", "seconds": {"selftest@fast": 130, "unit": 80}}
    live = {"machine": "2 CPUs", "date": "2026-12-03", "seconds": {"unit": 60, "limits": 500}, "started": {"x": 1}}
    assert timings.kept(old, live) == {"machine": "2 CPUs", "date": "2026-12-03",
                                       "seconds": {"selftest@fast": 130, "unit": 60, "limits": 500}}
    other = {**live, "machine": "8 CPUs"}
    assert timings.kept(old, other)["seconds"] == {"unit": 60, "limits": 500}


def _record_many(names: list) -> None:
    for name in names:
        timings.record("start", name)
        timings.record("stop", name)


def test_targets_run_side_by_side_all_record_their_time(tmp_path, monkeypatch):
    """`make ci-last` runs make targets at the same time: none may lose another's figure."""
    import multiprocessing
    monkeypatch.setattr(timings, "LIVE", str(tmp_path / "dist" / "timings.json"))
    names = [[f"t{i}-{j}" for j in range(15)] for i in range(6)]
    workers = [multiprocessing.get_context("fork").Process(target=_record_many, args=(n,)) for n in names]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    recorded = timings.load(timings.LIVE)
    assert sorted(recorded["seconds"]) == sorted(n for group in names for n in group) and not recorded["started"]
