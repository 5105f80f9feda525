"""Static checks on each student file, before anything runs: it compiles, and it does not use torch's DDP.

The homework is to build DDP, so torch's own machinery is off limits in student code (handout §8: allowed
APIs). This scan catches plain uses; the workers also trap the same APIs at run time. Neither can stop a
determined student inside their own process (SECURITY.md), so ``integrity_findings`` lists, for staff only
(a hidden test), every construct that could hide such an attempt or reach outside the homework.
"""

from __future__ import annotations

import ast
import re

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


# name -> why it deserves a look; matched against imported modules, called names and attributes, and the
# names a getattr-like call is given as a string.
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
    "__getattribute__": "reaches attributes by name", "__setattr__": "sets attributes by name (monkeypatching?)",
    "__delattr__": "deletes attributes by name", "attrgetter": "reaches attributes by name",
    "methodcaller": "calls methods by name", "getattr_static": "reaches attributes by name",
    "__doc__": "reads a docstring at run time (data in prose?)",
    "subprocess": "starts programs", "fork": "starts processes", "system": "starts programs",
    "popen": "starts programs", "spawn": "starts processes", "execv": "starts programs", "execve": "starts programs",
    "multiprocessing": "starts processes", "pty": "starts programs", "socket": "opens network connections",
    "pickle": "loads objects from bytes", "setattr": "sets attributes by computed name (monkeypatching?)",
    "vars": "reads or writes a namespace by name (vars(module)[name] = ... replaces a library's function)",
    "globals": "reads or writes a namespace by name", "AF_UNIX": "a Unix socket (ranks talking past the process group?)",
    "TCPStore": "talks to a rendezvous store directly", "FileStore": "talks to a rendezvous store directly",
    "HashStore": "a store of its own", "PrefixStore": "talks to a rendezvous store directly",
    "_get_default_store": "talks to the process group's rendezvous store directly",
}
TABLE_VALUES = 200  # a literal with more constants than this (numbers in its strings count): answers computed elsewhere?
LONG_STRING = 4000  # ... or a string this long (data in disguise?)
SUSPICIOUS_TEXT = ("/autograder", "/proc", "results.json", "checks.", "scenarios", "ReadyProbe", "_dump_fr_trace",
                   "default_pg")  # (gloo's keys in the rendezvous store: check 1.4's evidence, written by hand?)
LIBRARIES = ("torch", "sys", "os", "builtins", "gc", "checks", "launch_probe")  # their modules and what they hold
BY_NAME = ("getattr", "setattr", "delattr", "hasattr", "__getattribute__", "__getattr__", "__setattr__", "__delattr__",
           "getattr_static", "attrgetter", "methodcaller")  # calls whose argument is an attribute's name
NUMBER = re.compile(r"\d+(?:\.\d+)?")
INIT_PROCESS_GROUP = "init_process_group"  # check 1.4 rests on process_group.py calling torch's


def integrity_findings(path: str, display_name: str) -> list[str]:
    """'file:line: construct (why)' for every suspicious construct (a hint for staff, never a verdict)."""
    try:
        with open(path, "rb") as f:
            tree = ast.parse(f.read().decode("utf-8", errors="replace"), display_name)
    except (OSError, SyntaxError, ValueError, RecursionError, MemoryError):
        return []
    try:
        found = _findings(tree, display_name) + _aliased_writes(tree) + _text_tables(tree)
        if display_name.endswith("process_group.py"):
            found += _no_process_group(tree)
    except (RecursionError, MemoryError):
        return [f"{display_name}: nested too deeply to scan"]
    return [f"{display_name}:{line}: {what}" for line, what in sorted(set(found))]


def _findings(tree: ast.AST, display_name: str) -> list[tuple[int, str]]:
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
        elif isinstance(node, ast.Name):
            names = [node.id]
        elif isinstance(node, ast.Call) and _called(node) in BY_NAME:
            name = _name_argument(node)
            if name is None:
                found.append((node.lineno, f"{_called(node)} with an attribute name built at run time"))
            else:
                names = [name]  # getattr(dist, "TCPStore") names TCPStore as surely as dist.TCPStore does
        elif isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Store) and \
                isinstance(node.value, (ast.Call, ast.Attribute)) and "__dict__" in ast.unparse(node.value) + \
                (ast.unparse(node.value.func) if isinstance(node.value, ast.Call) else ""):
            found.append((node.lineno, f"writes {ast.unparse(node)[:60]} (a namespace written by name)"))
        if isinstance(node, (ast.Import, ast.ImportFrom)) and any(n.split(".")[0] == "checks" for n in names):
            found.append((node.lineno, "imports the grading harness (grading.*): no student file needs it"))
        if isinstance(node, (ast.Dict, ast.List, ast.Set, ast.Tuple)) and id(node) not in inner:
            values = 0
            for child in ast.walk(node):
                if child is not node and isinstance(child, (ast.Dict, ast.List, ast.Set, ast.Tuple)):
                    inner.add(id(child))
                values += _values(child)
            if values > TABLE_VALUES:
                found.append((node.lineno, f"a literal table of {values:,} values (answers computed elsewhere?)"))
        if isinstance(node, ast.Constant) and isinstance(node.value, (str, bytes)) and len(node.value) > LONG_STRING \
                and id(node) not in prose:
            found.append((node.lineno, f"a literal of {len(node.value):,} characters (data in disguise?)"))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in prose:
            found += [(node.lineno, f"string mentioning {t!r}") for t in SUSPICIOUS_TEXT if t in node.value]
        found += [(getattr(node, "lineno", 0), f"{n} ({SUSPICIOUS[n]})") for n in names if n in SUSPICIOUS]
    return found


def _values(node: ast.AST) -> int:
    """How many values a constant holds toward an answer table: 1, or the numbers written in a string."""
    if not isinstance(node, ast.Constant):
        return 0
    if isinstance(node.value, str):
        return max(1, len(NUMBER.findall(node.value)))
    return 1


def _called(call: ast.Call) -> str:
    func = call.func
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""


def _name_argument(call: ast.Call) -> str | None:
    """The attribute name a getattr-like call is given, if it is written as a literal (None: built at run time).
    A method call's name is its first argument, a function's its second (attrgetter's: its first)."""
    index = 0 if isinstance(call.func, ast.Attribute) or _called(call) in ("attrgetter", "methodcaller") else 1
    if len(call.args) <= index:
        return "" if not call.args else None  # too few arguments to say: not a name built at run time either
    argument = call.args[index]
    return argument.value if isinstance(argument, ast.Constant) and isinstance(argument.value, str) else None


def _text_tables(tree: ast.AST) -> list[tuple[int, str]]:
    """Numbers written in the file's strings, docstrings included: a table of answers in prose, parsed at run
    time, counts as one (each string alone, and all of them together)."""
    counts = [(node.lineno, len(NUMBER.findall(node.value))) for node in ast.walk(tree)
              if isinstance(node, ast.Constant) and isinstance(node.value, str)]
    found = [(line, f"a string holding {n:,} numbers (a table of answers in text?)") for line, n in counts
             if n > TABLE_VALUES]
    total = sum(n for _, n in counts)
    if not found and total > TABLE_VALUES:
        line = max(counts, key=lambda c: c[1])[0]
        found.append((line, f"its strings hold {total:,} numbers in all (a table of answers in text?)"))
    return found


def _aliased_writes(tree: ast.AST) -> list[tuple[int, str]]:
    """Attribute writes (``x.name = ...``, ``del x.name``) on any alias of a library module (torch, sys, os,
    ...) or of what one holds: names bound by import, by assignment from one another (``d = dist``,
    ``self.d = torch.distributed``, ``d = [dist][0]``, ``for d in (dist,)``), as default values or as
    arguments of the file's own functions (``patch(dist)``): monkeypatching however it is spelt."""
    aliases = _aliases(tree)
    return [(node.lineno, f"assigns {ast.unparse(node)[:80]} (monkeypatching a library)") for node in ast.walk(tree)
            if isinstance(node, ast.Attribute) and isinstance(node.ctx, (ast.Store, ast.Del))
            and _path(node.value) is not None and any(_path(node.value) == a or _path(node.value).startswith(a + ".")
                                                      for a in aliases)]


def _path(node: ast.AST) -> str | None:
    """"a.b.c" for a chain of names and attributes, else None."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _path(node.value)
        return None if base is None else f"{base}.{node.attr}"
    return None


def _refers(node: ast.AST | None, aliases: set[str]) -> bool:
    """Whether the value of ``node`` may be an alias: an alias's path, one picked out of a literal, a
    conditional or ``getattr`` of one (a call's result is not: ``torch.zeros(3)`` is a tensor)."""
    if node is None:
        return False
    path = _path(node)
    if path is not None:
        return any(path == a or path.startswith(a + ".") for a in aliases)
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return any(_refers(e, aliases) for e in node.elts)
    if isinstance(node, ast.Dict):
        return any(_refers(v, aliases) for v in node.values)
    if isinstance(node, (ast.Subscript, ast.Starred)):
        return _refers(node.value, aliases)
    if isinstance(node, ast.IfExp):
        return _refers(node.body, aliases) or _refers(node.orelse, aliases)
    if isinstance(node, ast.BoolOp):
        return any(_refers(v, aliases) for v in node.values)
    if isinstance(node, ast.NamedExpr):
        return _refers(node.value, aliases)
    if isinstance(node, ast.Call) and _called(node) in ("getattr", "getattr_static", "__getattribute__"):
        return any(_refers(a, aliases) for a in [node.func, *node.args])
    return False


def _targets(node: ast.AST) -> list[str]:
    """The paths a binding target names (every element of an unpacking)."""
    if isinstance(node, (ast.Tuple, ast.List)):
        return [p for e in node.elts for p in _targets(e)]
    if isinstance(node, ast.Starred):
        return _targets(node.value)
    path = _path(node)
    return [path] if path is not None else []


def _aliases(tree: ast.AST) -> set[str]:
    """Every path that may hold a library module or what one holds (flow-insensitive, to a fixed point)."""
    aliases = {"torch", "dist", "nn", "sys", "os"}  # the usual names, imported or not
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            aliases |= {a.asname or a.name.split(".")[0] for a in node.names if a.name.split(".")[0] in LIBRARIES}
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in LIBRARIES and node.level == 0:
            aliases |= {a.asname or a.name for a in node.names}
    functions = {f.name: f for f in ast.walk(tree) if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))}
    while True:
        before = len(aliases)
        for node in ast.walk(tree):
            bound: list[tuple[list[ast.AST], ast.AST | None]] = []
            if isinstance(node, ast.Assign):
                bound = [(node.targets, node.value)]
            elif isinstance(node, (ast.AnnAssign, ast.AugAssign, ast.NamedExpr)):
                bound = [([node.target], node.value)]
            elif isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
                bound = [([node.target], node.iter)]
            elif isinstance(node, (ast.With, ast.AsyncWith)):
                bound = [([item.optional_vars], item.context_expr) for item in node.items if item.optional_vars]
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                args = node.args
                positional = args.posonlyargs + args.args
                bound = [([ast.Name(a.arg)], d) for a, d in zip(positional[len(positional) - len(args.defaults):],
                                                                 args.defaults, strict=True)]
                bound += [([ast.Name(a.arg)], d) for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True)]
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in functions:
                params = [a.arg for a in functions[node.func.id].args.posonlyargs + functions[node.func.id].args.args]
                bound = [([ast.Name(p)], a) for p, a in zip(params, node.args, strict=False)]
                bound += [([ast.Name(k.arg)], k.value) for k in node.keywords if k.arg]
            for targets, value in bound:
                if _refers(value, aliases):
                    aliases |= {p for t in targets for p in _targets(t)}
        if len(aliases) == before:
            return aliases


def _no_process_group(tree: ast.AST) -> list[tuple[int, str]]:
    """process_group.py that never calls torch's init_process_group (check 1.4 passes only if its ranks join
    a process group through the rendezvous store, which ranks could also write by hand: SECURITY.md)."""
    calls = any(isinstance(n, ast.Call) and _called(n) == INIT_PROCESS_GROUP and isinstance(n.func, ast.Attribute)
                for n in ast.walk(tree))
    return [] if calls else [(1, f"never calls torch.distributed's {INIT_PROCESS_GROUP} (check 1.4's process group "
                                 "made some other way?)")]
