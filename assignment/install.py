# GENERATED from tools/student/install.py by tools/assign.py (staff: edit that file, then `make assignment`).
"""Create a virtual environment with the pinned packages, torch as its CPU build (standard library only).

    python3 install.py VENV -r requirements.txt [-r more.txt ...]      (make install)

Why this is not a plain ``pip install -r``: on Linux, PyPI's torch wheel is the CUDA build (several GB of
CUDA libraries this homework never uses), so torch comes from PyTorch's CPU index there, as on Gradescope
(autograder/setup.sh). On macOS (and Windows) PyPI's wheel is already the CPU build. ``TORCH_INDEX_URL``
overrides the choice; empty means pip's own index (a machine with a CPU wheel there, or no way out).

Before installing, it asks pip what it would download and prints the size, so nobody is surprised.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import urllib.parse
import urllib.request

TORCH_CPU_INDEX = "https://download.pytorch.org/whl/cpu"


def torch_index(platform: str = sys.platform, environ: os._Environ | dict = os.environ) -> str:
    """Where torch comes from ('' = pip's own index)."""
    if "TORCH_INDEX_URL" in environ:
        return environ["TORCH_INDEX_URL"]
    return TORCH_CPU_INDEX if platform.startswith("linux") else ""


def reachable(index: str, timeout_s: float = 15.0) -> str | None:
    """None if ``index`` answers, else why not (asked once: pip would retry every package with back-off)."""
    try:
        with urllib.request.urlopen(index.rstrip("/") + "/torch/", timeout=timeout_s):
            return None
    except (OSError, ValueError) as error:
        return str(getattr(error, "reason", error))


def torch_pin(requirement_files: list[str]) -> str:
    """The ``torch==...`` line of the requirements (the pin lives there, nowhere else)."""
    for path in requirement_files:
        with open(path, encoding="utf-8") as f:
            for line in f:
                line = line.split("#", 1)[0].strip()
                if line.replace(" ", "").startswith("torch=="):
                    return line
    raise SystemExit(f"install.py: no torch== pin in {', '.join(requirement_files)}")


def steps(requirement_files: list[str], index: str) -> list[list[str]]:
    """The pip commands, in order: torch alone from ``index`` (if any), then everything (torch is then
    already satisfied, so pip's index never replaces it)."""
    everything = [arg for path in requirement_files for arg in ("-r", path)]
    first = [[torch_pin(requirement_files), "--index-url", index]] if index else []
    return first + [everything]


def planned_downloads(pip: list[str], args: list[str]) -> list[tuple[str, int | None]]:
    """What ``pip install args`` would download now, per file: (name and version, bytes or None), from pip's
    dry-run report; sizes from the index's Content-Length, or the file itself for a local wheel."""
    with tempfile.TemporaryDirectory() as folder:
        report = os.path.join(folder, "report.json")
        subprocess.run([*pip, "install", "--quiet", "--dry-run", "--report", report, *args], check=True)
        with open(report, encoding="utf-8") as f:
            planned = json.load(f).get("install", [])
    return [(f"{item['metadata']['name']} {item['metadata']['version']}",
             _size_of(item.get("download_info", {}).get("url", ""))) for item in planned]


def _size_of(url: str) -> int | None:
    parsed = urllib.parse.urlparse(url)
    try:
        if parsed.scheme == "file":
            return os.path.getsize(urllib.request.url2pathname(parsed.path))
        with urllib.request.urlopen(urllib.request.Request(url, method="HEAD"), timeout=20) as answer:
            length = answer.headers.get("Content-Length")
            return int(length) if length else None
    except (OSError, ValueError):
        return None


def describe(downloads: list[tuple[str, int | None]]) -> str:
    known = sum(size or 0 for _, size in downloads)
    lines = [f"  {name:<40} {f'{size / 1e6:,.1f} MB' if size is not None else 'size unknown'}"
             for name, size in downloads]
    unknown = " (and some of unknown size)" if any(size is None for _, size in downloads) else ""
    return "\n".join(lines + [f"  {len(downloads)} packages, {known / 1e6:,.0f} MB{unknown}"
                              " (pip's cache may already hold some)"])


def install(venv: str, requirement_files: list[str], index: str) -> None:
    """Each step's downloads are listed (with sizes) before pip fetches them."""
    python = os.path.join(venv, "bin", "python")
    if not os.path.exists(python):
        subprocess.run([sys.executable, "-m", "venv", venv], check=True)
    pip = [python, "-m", "pip", "--disable-pip-version-check"]
    print(f"install.py: torch from {index or 'pip’s own index'} ({'its CPU build' if index else 'the default wheel'})")
    for args in steps(requirement_files, index):
        downloads = planned_downloads(pip, args)
        if downloads:
            print(f"install.py: pip install {' '.join(args)} will download:\n{describe(downloads)}", flush=True)
            subprocess.run([*pip, "install", "--quiet", *args], check=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("venv")
    parser.add_argument("-r", dest="requirements", action="append", required=True)
    args = parser.parse_args(argv)
    index = torch_index()
    problem = reachable(index) if index else None
    if problem:
        print(f"install.py: {index} is unreachable ({problem}); torch comes from pip's own configuration instead "
              "(what it will download is listed below: on Linux, PyPI's torch is the CUDA build, several GB; set "
              "TORCH_INDEX_URL to a reachable index to choose)", file=sys.stderr)
        index = ""
    try:
        install(args.venv, args.requirements, index)
    except subprocess.CalledProcessError as error:
        print(f"install.py: `{' '.join(error.cmd)}` failed (exit code {error.returncode}); see pip's message above",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
