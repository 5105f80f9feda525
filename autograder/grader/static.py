"""Static checks on each student file, before anything runs: it compiles, and it does not use torch's DDP.

The homework is to build DDP, so torch's own machinery is off limits in student code (handout §8: allowed
APIs). This scan catches plain uses; the workers also trap the same APIs at run time. Neither can stop a
determined student inside their own process (SECURITY.md), so ``integrity_findings`` lists, for staff only
(a hidden test), every construct that could hide such an attempt or reach outside the homework.
"""

from __future__ import annotations

import ast

BANNED_MODULES = ("torch.nn.parallel", "torch.distributed.algorithms.ddp_comm_hooks")
BANNED_ATTRIBUTES = {"DistributedDataParallel", "_compute_bucket_assignment_by_size", "_broadcast_coalesced",
                     "ddp_comm_hooks", "_DistributedDataParallel"}
BANNED_FROM_TORCH = {"Reducer"}  # torch.distributed.Reducer / torch._C._distributed_c10d.Reducer
BANNED_STRINGS = ("_compute_bucket_assignment_by_size", "ddp_comm_hooks", "_broadcast_coalesced",
                  "torch.nn.parallel", "_distributed_c10d")


def compile_error(source: str, filename: str) -> str | None:
    """Why Python cannot compile ``source``, or None. Whatever compiling raises is the file's fault, never the
    grader's: a syntax error, null bytes (ValueError), nesting too deep for the compiler (RecursionError,
    MemoryError)."""
    try:
        compile(source, filename, "exec", dont_inherit=True)
    except SyntaxError as error:
        return f"{filename}, line {error.lineno}: {error.msg}\n    {(error.text or '').rstrip()}"
    except (ValueError, RecursionError, MemoryError, OverflowError) as error:
        what = {RecursionError: "it is nested too deeply for Python's compiler",
                MemoryError: "compiling it needs more memory than Python has"}.get(type(error), str(error)[:200])
        return f"{filename}: Python cannot compile it: {what}"
    return None


def _root_name(node: ast.AST) -> str | None:
    while isinstance(node, ast.Attribute):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def banned_uses(source: str, filename: str) -> list[str]:
    """Human-readable 'file:line: what' for every use of torch's DDP machinery."""
    tree = ast.parse(source, filename)
    torch_aliases = {"torch", "dist", "c10d"}
    # Docstrings and other bare string statements only talk about APIs: mentioning one is fine.
    prose = {id(node.value) for node in ast.walk(tree)
             if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)}
    found = []
    for node in ast.walk(tree):
        where = f"{filename}:{getattr(node, 'lineno', '?')}"
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith(BANNED_MODULES):
                    found.append(f"{where}: import {alias.name}")
                if alias.name.startswith("torch"):
                    torch_aliases.add((alias.asname or alias.name).split(".")[0])
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module.startswith(BANNED_MODULES):
                found.append(f"{where}: from {node.module} import ...")
            elif node.module.startswith("torch"):
                for alias in node.names:
                    if alias.name in BANNED_ATTRIBUTES | BANNED_FROM_TORCH:
                        found.append(f"{where}: from {node.module} import {alias.name}")
                    torch_aliases.add(alias.asname or alias.name)
        elif isinstance(node, ast.Attribute):
            if node.attr in BANNED_ATTRIBUTES:
                found.append(f"{where}: .{node.attr}")
            elif node.attr in BANNED_FROM_TORCH and _root_name(node) in torch_aliases:
                found.append(f"{where}: {_root_name(node)}...{node.attr} (torch's C++ Reducer)")
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in prose:
            hits = [s for s in BANNED_STRINGS if s in node.value]
            if hits:
                found.append(f"{where}: string mentioning {hits[0]}")
    return sorted(set(found), key=lambda s: (int(s.split(":")[1]) if s.split(":")[1].isdigit() else 0, s))


def check_file(path: str, display_name: str) -> tuple[str | None, list[str]]:
    """(compile error or None, banned uses) for one staged student file."""
    with open(path, "rb") as f:
        raw = f.read()
    source = raw.decode("utf-8", errors="replace")
    error = compile_error(source, display_name)
    if error:
        return error, []
    try:
        return None, banned_uses(source, display_name)
    except (RecursionError, MemoryError):  # compiled, but too deep for the scan: it cannot be checked, so not graded
        return f"{display_name}: it is nested too deeply to be checked for torch's DDP machinery", []


# name -> why it deserves a look; matched against imported modules, called names and attributes.
SUSPICIOUS = {
    "marshal": "loads code objects", "exec": "runs code from a string", "eval": "runs code from a string",
    "compile": "builds code at run time", "ctypes": "calls C directly", "importlib": "imports by computed name",
    "__import__": "imports by computed name", "modules": "sys.modules: swaps or reads loaded modules",
    "get_objects": "gc: reaches every live object", "get_referrers": "gc: reaches other code's objects",
    "get_referents": "gc: reaches other code's objects", "_getframe": "reads other functions' frames",
    "currentframe": "reads other functions' frames", "f_back": "reads other functions' frames",
    "f_globals": "reads other functions' globals", "f_locals": "reads other functions' locals",
    "tb_frame": "reads frames of a traceback", "__code__": "reads or replaces code objects",
    "__globals__": "reads another function's globals", "__subclasses__": "reaches classes by enumeration",
    "__builtins__": "replaces builtins", "__dict__": "reaches attributes by computed name",
    "subprocess": "starts programs", "fork": "starts processes", "system": "starts programs",
    "popen": "starts programs", "spawn": "starts processes", "execv": "starts programs", "execve": "starts programs",
    "multiprocessing": "starts processes", "pty": "starts programs", "socket": "opens network connections",
    "pickle": "loads objects from bytes", "setattr": "sets attributes by computed name (monkeypatching?)",
    "vars": "reads or writes a namespace by name (vars(module)[name] = ... replaces a library's function)",
    "globals": "reads or writes a namespace by name", "AF_UNIX": "a Unix socket (ranks talking past the process group?)",
    "TCPStore": "talks to a rendezvous store directly", "FileStore": "talks to a rendezvous store directly",
    "HashStore": "a store of its own",
}
TABLE_VALUES = 200  # a literal with more constants than this: a table of answers computed elsewhere?
LONG_STRING = 4000  # ... or a string this long (data in disguise?)
SUSPICIOUS_TEXT = ("/autograder", "/proc", "results.json", "checks.", "scenarios", "ReadyProbe", "_dump_fr_trace")


def integrity_findings(path: str, display_name: str) -> list[str]:
    """'file:line: construct (why)' for every suspicious construct (a hint for staff, never a verdict)."""
    try:
        with open(path, "rb") as f:
            tree = ast.parse(f.read().decode("utf-8", errors="replace"), display_name)
    except (OSError, SyntaxError, ValueError, RecursionError, MemoryError):
        return []
    try:
        return _findings(tree, display_name)
    except (RecursionError, MemoryError):
        return [f"{display_name}: nested too deeply to scan"]


def _findings(tree: ast.AST, display_name: str) -> list[str]:
    prose = {id(node.value) for node in ast.walk(tree)
             if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)}
    inner: set[int] = set()  # literals inside a literal already counted
    found = []
    for node in ast.walk(tree):
        names = []
        if isinstance(node, ast.Import):
            names = [a.name.split(".")[0] for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            names = [(node.module or "").split(".")[0]] + [a.name for a in node.names]
        elif isinstance(node, ast.Attribute):
            names = [node.attr]
            if isinstance(node.ctx, ast.Store) and _root_name(node) in ("torch", "dist", "nn", "sys", "os"):
                found.append((node.lineno, f"assigns {ast.unparse(node)} (monkeypatching a library)"))
        elif isinstance(node, ast.Name):
            names = [node.id]
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "getattr" \
                and len(node.args) > 1 and not isinstance(node.args[1], ast.Constant):
            found.append((node.lineno, "getattr with a computed name"))
        elif isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Store) and \
                isinstance(node.value, (ast.Call, ast.Attribute)) and "__dict__" in ast.unparse(node.value) + \
                (ast.unparse(node.value.func) if isinstance(node.value, ast.Call) else ""):
            found.append((node.lineno, f"writes {ast.unparse(node)[:60]} (a namespace written by name)"))
        if isinstance(node, (ast.Import, ast.ImportFrom)) and any(n.split(".")[0] == "checks" for n in names):
            found.append((node.lineno, "imports the grading harness (grading.*): no student file needs it"))
        if isinstance(node, (ast.Dict, ast.List, ast.Set, ast.Tuple)) and id(node) not in inner:
            constants = [n for n in ast.walk(node) if isinstance(n, ast.Constant)]
            for child in ast.walk(node):
                if child is not node and isinstance(child, (ast.Dict, ast.List, ast.Set, ast.Tuple)):
                    inner.add(id(child))
            if len(constants) > TABLE_VALUES:
                found.append((node.lineno, f"a literal table of {len(constants):,} values (answers computed elsewhere?)"))
        if isinstance(node, ast.Constant) and isinstance(node.value, (str, bytes)) and len(node.value) > LONG_STRING \
                and id(node) not in prose:
            found.append((node.lineno, f"a literal of {len(node.value):,} characters (data in disguise?)"))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in prose:
            found += [(node.lineno, f"string mentioning {t!r}") for t in SUSPICIOUS_TEXT if t in node.value]
        found += [(getattr(node, "lineno", 0), f"{n} ({SUSPICIOUS[n]})") for n in names if n in SUSPICIOUS]
    return [f"{display_name}:{line}: {what}" for line, what in sorted(set(found))]
