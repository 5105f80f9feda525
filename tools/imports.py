"""Staff tool: who imports whom in this repository, its import circles, and the modules that share a name.

    python -m tools.imports            # the circles, shared names and sys.path edits (exit 1 if any circle)
    python -m tools.imports --graph    # every edge: importer -> imported
    python -m tools.imports --folders  # who imports whom, folder by folder (how many imports)

Read from the source (ast), never by importing: every ``import``, ``from ... import`` (at module level or
inside a function: a lazy import is a dependency too) and every string that is a dotted module name, alone or
as "module:function" (``importlib.import_module("...")``, what a worker is told to run). A name is looked up as the code finds it when it runs: in the importer's own folder of imports (its
*root*: solutions/, autograder/, tools/, ...), then in the others. The generated release (assignment/) and
the self-test's edited copies of student files (mutants, correct variants) are not code of this repository.
"""

from __future__ import annotations

import argparse
import ast
import os
import re
import subprocess
import sys
from collections import defaultdict

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# The folders code imports from (what is on sys.path when it runs), most specific first: the student side's
# release root, the grader's staged folder, the student templates (course.py in a release), the pytest plugin,
# and the repository's root for the staff packages (autograder, tools, handout: pyproject.toml).
ROOTS = ("solutions", "autograder", "tools/student", "tools/plugins", "")
NOT_CODE = ("assignment/", "autograder/selftest/mutants/", "autograder/selftest/correct/",
            "autograder/selftest/submissions/")
MODULE_STRING = re.compile(r"[A-Za-z_]\w*(\.\w+)+(:\w+)?")  # a string that names a module (or its function)
CONVENTIONAL = {"__init__.py", "__main__.py", "conftest.py"}  # names every package or test folder may have


def python_files(repo: str = REPO) -> list[str]:
    listed = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard", "*.py"], cwd=repo,
                            capture_output=True, text=True, check=True).stdout.split()
    return sorted(p for p in listed if not p.startswith(NOT_CODE) and os.path.exists(os.path.join(repo, p)))


def roots_of(path: str) -> list[str]:
    """The roots ``path`` lies under, most specific first."""
    return [r for r in ROOTS if not r or path.startswith(r + "/")]


def module_name(path: str, root: str | None = None) -> str:
    """``path``'s module name as imported from ``root`` (default: its most specific root)."""
    root = roots_of(path)[0] if root is None else root
    relative = os.path.relpath(path, root or ".")[:-3].replace(os.sep, ".")
    return relative[: -len(".__init__")] if relative.endswith(".__init__") else relative


def imported_names(path: str, tree: ast.AST) -> set[str]:
    """Every module name ``path`` imports (absolute; relative imports resolved against its package)."""
    package = module_name(path).rsplit(".", 1)[0] if "." in module_name(path) or path.endswith("__init__.py") else ""
    if path.endswith("__init__.py"):
        package = module_name(path)
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".") if package else []
                parts = parts[: len(parts) - node.level + 1] if node.level > 1 else parts
                base = ".".join([*parts, *([base] if base else [])])
            names.add(base)
            names.update(f"{base}.{alias.name}" for alias in node.names)  # ``from pkg import module``
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and MODULE_STRING.fullmatch(node.value):
            names.add(node.value.partition(":")[0])  # import_module("a.b"), a worker's "a.b:function"
    return names


def graph(repo: str = REPO) -> dict[str, set[str]]:
    """{file: the files of this repository it imports}."""
    files = python_files(repo)
    by_root: dict[str, dict[str, str]] = defaultdict(dict)
    for path in files:
        for root in roots_of(path):
            by_root[root][module_name(path, root)] = path
    edges: dict[str, set[str]] = {}
    for path in files:
        with open(os.path.join(repo, path), encoding="utf-8") as f:
            tree = ast.parse(f.read(), path)
        order = [*roots_of(path), *[r for r in ROOTS if r not in roots_of(path)]]
        found = set()
        for name in imported_names(path, tree):
            target = next((by_root[root][name] for root in order if name in by_root[root]), None)
            if target and target != path:
                found.add(target)
        edges[path] = found
    return edges


def circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one file (Tarjan's algorithm, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(edges):
        if start in index:
            continue
        work = [(start, iter(sorted(edges[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    top = stack.pop()
                    on_stack.discard(top)
                    component.append(top)
                    if top == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def shared_names(repo: str = REPO) -> dict[str, list[str]]:
    """{basename: its files} for the modules and folders of code that share a name (conventional ones apart)."""
    files = python_files(repo)
    names: dict[str, list[str]] = defaultdict(list)
    for path in files:
        if os.path.basename(path) not in CONVENTIONAL:
            names[os.path.basename(path)[:-3]].append(path)
    for folder in sorted({os.path.dirname(p) for p in files if p.endswith("__init__.py")}):
        names[os.path.basename(folder)].append(folder + "/")
    return {name: paths for name, paths in sorted(names.items()) if len(paths) > 1}


def path_edits(repo: str = REPO) -> list[str]:
    """file:line of every ``sys.path.insert`` / ``sys.path[:0] =`` in code of this repository."""
    found = []
    for path in python_files(repo):
        with open(os.path.join(repo, path), encoding="utf-8") as f:
            tree = ast.parse(f.read(), path)
        for node in ast.walk(tree):
            call = isinstance(node, ast.Call) and ast.unparse(node.func) == "sys.path.insert"
            splice = (isinstance(node, ast.Assign) and any(ast.unparse(t).startswith("sys.path[") for t in node.targets))
            if call or splice:
                found.append(f"{path}:{node.lineno}")
    return found


def listing(title: str, lines: list[str]) -> None:
    print(f"{len(lines)} {title}")
    for line in lines:
        print(f"  {line}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.imports", description=__doc__.splitlines()[0])
    parser.add_argument("--graph", action="store_true", help="print every edge")
    parser.add_argument("--folders", action="store_true", help="the edges summed folder by folder")
    args = parser.parse_args(argv)
    edges = graph()
    if args.folders:
        counts: dict[tuple[str, str], int] = defaultdict(int)
        for path, targets in edges.items():
            for target in targets:
                if os.path.dirname(path) != os.path.dirname(target):
                    counts[os.path.dirname(path), os.path.dirname(target)] += 1
        for (source, target), count in sorted(counts.items()):
            print(f"{source}/ -> {target}/: {count}")
        return 0
    if args.graph:
        for path in sorted(edges):
            for target in sorted(edges[path]):
                print(f"{path} -> {target}")
        return 0
    found = circles(edges)
    print(f"{len(edges)} files, {sum(map(len, edges.values()))} imports between them")
    listing("import circle(s)", [" <-> ".join(component) for component in found])
    listing("name(s) shared by modules or packages", [f"{n}: {', '.join(p)}" for n, p in shared_names().items()])
    listing("sys.path edit(s)", path_edits())
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
