"""pytest plugin for `assign.py validate`: write each test's outcome and failure text as JSON.

    python -m pytest -p pytest_outcomes --outcomes-json=out.json      (with tools/plugins on PYTHONPATH)

The failure text is pytest's own report, plus what a failed subprocess printed: a test that runs a script
(``subprocess.run(..., check=True, capture_output=True)``) otherwise hides the stub's NotImplementedError
in an exception attribute no report shows.
"""

from __future__ import annotations

import json
import subprocess

import pytest

MAX_TEXT = 20_000


def pytest_addoption(parser):
    parser.addoption("--outcomes-json", default=None, help="write each test's outcome here (JSON)")


class Outcomes:
    def __init__(self, path: str):
        self.path = path
        self.tests: dict[str, dict] = {}
        self.collect_errors: dict[str, str] = {}
        self.extra: dict[str, str] = {}

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item, call):
        yield
        if call.excinfo is not None:
            text = _subprocess_output(call.excinfo.value)
            if text:
                self.extra[item.nodeid] = self.extra.get(item.nodeid, "") + text

    def pytest_runtest_logreport(self, report):
        test = self.tests.setdefault(report.nodeid, {"outcome": "passed", "duration": 0.0, "text": ""})
        test["duration"] += report.duration
        if report.failed:
            test["outcome"] = "failed" if report.when == "call" else "error"
            test["text"] += f"[{report.when}]\n{report.longreprtext}\n"
        elif report.skipped and test["outcome"] == "passed":
            test["outcome"] = "skipped"
            test["text"] += f"[{report.when}] skipped: {report.longreprtext}\n"

    def pytest_collectreport(self, report):
        if report.failed:
            self.collect_errors[report.nodeid] = report.longreprtext[-MAX_TEXT:]

    def pytest_sessionfinish(self, session, exitstatus):
        for nodeid, text in self.extra.items():
            if nodeid in self.tests:
                self.tests[nodeid]["text"] += f"[subprocess output]\n{text}"
        for test in self.tests.values():
            test["text"] = test["text"][-MAX_TEXT:]  # the end holds the exception that ended the test
        with open(self.path, "w", encoding="utf-8") as f:
            json.dump({"exitstatus": int(exitstatus), "tests": self.tests, "collect_errors": self.collect_errors},
                      f, indent=1)


def _subprocess_output(error: BaseException | None) -> str:
    seen = set()
    parts = []
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        if isinstance(error, subprocess.CalledProcessError):
            for stream in (error.stdout, error.stderr):
                if stream:
                    parts.append(stream.decode("utf-8", "replace") if isinstance(stream, bytes) else stream)
        error = error.__cause__ or error.__context__
    return "\n".join(parts)


def pytest_configure(config):
    path = config.getoption("--outcomes-json")
    if path:
        config.pluginmanager.register(Outcomes(path), "outcomes-json")
