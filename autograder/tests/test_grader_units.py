"""Fast tests of the grader's pieces that need no workers: static checks, staging, results.json, the checks."""

from __future__ import annotations

import io
import json
import os
import stat
import zipfile

import pytest

from checks.check import Outcome  # noqa: E402
from checks.claims import WITHDRAWN, audited  # noqa: E402
from checks.part6 import matches  # noqa: E402
from checks.registry import public_checks  # noqa: E402
from grader.hidden import HIDDEN  # noqa: E402
from grader.results import MAX_OUTPUT_CHARS, clip, plain, write_fallback, write_results  # noqa: E402
from grader.results import TestResult as Result  # noqa: E402 (pytest would try to collect "Test...")
from grader.stage import MAX_FILE_BYTES, locate, read_upload, stage  # noqa: E402
from grader.standins import STANDINS, standin_text  # noqa: E402
from grader.static import banned_uses, check_file, compile_error, integrity_findings  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PATHS = ["minddp/reducer.py", "answers.py"]


@pytest.mark.parametrize("line, banned", [
    ("from torch.nn.parallel import DistributedDataParallel", True),
    ("import torch.nn.parallel.distributed", True),
    ("x = torch.nn.parallel.DistributedDataParallel(m)", True),
    ("b = dist._compute_bucket_assignment_by_size(t, [1])", True),
    ("from torch.distributed.algorithms.ddp_comm_hooks import default_hooks", True),
    ("r = torch._C._distributed_c10d.Reducer", True),
    ("f = getattr(dist, '_broadcast_coalesced')", True),
    ("import importlib; importlib.import_module('torch.nn.parallel')", True),
    ("class DistributedDataParallel(nn.Module): pass", False),
    ("from .reducer import Reducer", False),
    ("'''Unlike torch.nn.parallel.DistributedDataParallel, ours is Python.'''", False),
    ("dist.all_reduce(t, async_op=True)", False),
])
def test_banned_api_scan(line, banned):
    assert bool(banned_uses(line + "\n", "ddp.py")) == banned


def test_reference_files_are_clean():
    for path in ("minddp/process_group.py", "minddp/bucketing.py", "minddp/reducer.py", "minddp/ddp.py",
                 "minddp/timeline.py", "answers.py"):
        full = os.path.join(REPO, "solutions", path)
        assert check_file(full, path) == (None, []), path
        assert integrity_findings(full, path) == [], f"the reference itself is flagged: {integrity_findings(full, path)}"


def test_compile_error_names_the_line():
    assert "line 2" in compile_error("x = 1\ndef f(:\n", "bucketing.py")


def test_whatever_compiling_raises_is_the_files_fault(tmp_path):
    """An expression nested too deeply makes compile() raise RecursionError, not SyntaxError: it once escaped
    the grader ("autograder error", no entries at all, score 0)."""
    deep = "x = 1" + " + 1" * 300_000 + "\n"
    assert "nested too deeply" in compile_error(deep, "minddp/bucketing.py")
    assert "null" in compile_error("x = 1\0\n", "minddp/bucketing.py")
    path = tmp_path / "bucketing.py"
    path.write_text(deep)
    error, banned = check_file(str(path), "minddp/bucketing.py")
    assert "nested too deeply" in error and banned == []
    assert integrity_findings(str(path), "minddp/bucketing.py") == []  # not parsable: nothing to list


def test_integrity_report_flags_what_could_hide_an_attempt(tmp_path):
    source = tmp_path / "reducer.py"
    source.write_text("import marshal, sys\nexec(marshal.loads(b''))\nx = getattr(sys, 'mod' + 'ules')\n"
                      "torch.distributed.all_reduce = None\nopen('/autograder/source/reference/x')\n"
                      "k = [c for c in object.__subclasses__()]\n")
    found = "\n".join(integrity_findings(str(source), "minddp/reducer.py"))
    for what in ("reducer.py:1: marshal", "reducer.py:2: exec", "reducer.py:3: getattr with an attribute name built",
                 "reducer.py:4: assigns torch.distributed.all_reduce", "'/autograder'", "reducer.py:6: __subclasses__"):
        assert what in found, (what, found)


def test_integrity_report_flags_tables_namespace_writes_sockets_and_the_harness(tmp_path):
    """What an answer table, a process group faked over a socket, or a library function replaced through its
    module's namespace look like in a student file (each a way past a check that the report must show)."""
    source = tmp_path / "bucketing.py"
    table = {str(i): [i, i + 1] for i in range(300)}
    source.write_text(f"import socket\nimport checks.scenarios\nTABLE = {table!r}\n"
                      "import torch.distributed as dist\nvars(dist)['all_reduce'] = print\n"
                      "dist.__dict__['broadcast'] = print\ns = socket.socket(socket.AF_UNIX)\n"
                      f"BLOB = {'x' * 5000!r}\n")
    found = "\n".join(integrity_findings(str(source), "minddp/bucketing.py"))
    for what in ("bucketing.py:1: socket", "bucketing.py:2: imports the grading harness",
                 "bucketing.py:3: a literal table of 900 values", "bucketing.py:5: vars (reads or writes a namespace",
                 "bucketing.py:6: writes dist.__dict__['broadcast']", "bucketing.py:7: AF_UNIX",
                 "bucketing.py:8: a literal of 5,000 characters"):
        assert what in found, (what, found)


def test_integrity_report_sees_tables_in_prose_aliases_and_names_built_at_run_time(tmp_path):
    """The red team's blind spots: an answer table in the module's docstring (parsed at run time), torch's
    functions replaced through an alias of the module however it is made, attribute names built at run time;
    and check 1.4's evidence written into the store by hand."""
    table = " ".join(f"{i}:{[i, i + 1]}" for i in range(120))
    source = tmp_path / "process_group.py"
    source.write_text(f'"""Bucketing. {table}"""\n'
                      "import torch.distributed as dist\nimport torch.distributed as tdist\n"
                      "d = dist\nd.all_reduce = print\n"
                      "class P:\n    def __init__(self):\n        self.m = [tdist][0]\n"
                      "    def go(self):\n        self.m.get_rank = print\n"
                      "def patch(module, value=None):\n    module.broadcast = value\n"
                      "patch(dist)\n"
                      "store = d.__getattribute__('TCP' + 'Store')('h', 1)\n"
                      "s = getattr(d, 'TCPStore')\n"
                      "store.set(f'default_pg/0//cpu//{0}', 'x')\n"
                      "t = __doc__\n")
    found = "\n".join(integrity_findings(str(source), "minddp/process_group.py"))
    for what in ("process_group.py:1: a string holding 360 numbers", "process_group.py:5: assigns d.all_reduce",
                 "process_group.py:10: assigns self.m.get_rank", "process_group.py:12: assigns module.broadcast",
                 "process_group.py:14: __getattribute__ with an attribute name built at run time",
                 "process_group.py:15: TCPStore (talks to a rendezvous store", "string mentioning 'default_pg'",
                 "process_group.py:17: __doc__", "never calls torch.distributed's init_process_group"):
        assert what in found, (what, found)
    quiet = tmp_path / "reducer.py"  # what the reference's own code does must stay quiet
    quiet.write_text("import torch\nimport torch.distributed as dist\nt = torch.zeros(3)\nt.grad = None\n"
                     "group = dist.group.WORLD if True else None\nfor p in [t]:\n    p.grad = t\n")
    assert [f for f in integrity_findings(str(quiet), "minddp/reducer.py") if "t.grad" in f or "p.grad" in f] == []


# -- a hidden entry's words --------------------------------------------------------------------------------

def test_hidden_entries_speak_only_the_graders_words():
    """A hidden entry's text is a function of grader-owned choices alone: an exception's class, message or a
    number of the student's never changes it; what one can say is bounded, and SECURITY.md states the bound."""
    from grader import hidden_words
    from tools.student.course import load_student_files
    checks = {c.number: c for c in public_checks()}
    file_of = {str(f.part): f.path for f in load_student_files(os.path.join(REPO, "solutions", "student_files.json"))}
    check = checks["3.3"]
    label = hidden_words.random_labels("3.3")[0]
    text = hidden_words.hidden_message(check, "raised", label, public_failed=False)
    assert "raised an exception on " + label in text and hidden_words.matches(check, text, file_of)
    for forged in (text.replace("an exception", "LEAK_4_1_2"), text + "\nTotal (bonus is extra) 110.0 / 100.0",
                   text.replace(label, label.replace("random configuration", "random configuration 9999: x\ny"))):
        assert not hidden_words.matches(check, forged, file_of), forged
    entries, total, most = hidden_words.bits(list(checks.values()), file_of)
    with open(os.path.join(REPO, "autograder", "SECURITY.md"), encoding="utf-8") as f:
        security = f.read()
    stated = f"at most {most:.1f} bits per entry, {total:.0f} bits over the {entries} hidden entries of one grading"
    assert stated in security, f"SECURITY.md's residual risks must say: {stated!r} (hidden_words.bits changed)"


# -- staging: regular files only, found by one rule ----------------------------------------------------------

def make_skeleton(tmp_path):
    skeleton = tmp_path / "skeleton"
    (skeleton / "minddp").mkdir(parents=True)
    (skeleton / "minddp" / "reducer.py").write_text("stub")
    (skeleton / "minddp" / "models.py").write_text("pristine")
    (skeleton / "answers.py").write_text("stub")
    return str(skeleton)


def test_staging_finds_nested_files_and_takes_only_student_files(tmp_path):
    upload = tmp_path / "upload"
    (upload / "hw" / "minddp").mkdir(parents=True)
    (upload / "hw" / "minddp" / "reducer.py").write_text("mine")
    (upload / "hw" / "minddp" / "models.py").write_text("tampered")
    staged = stage(read_upload(str(upload)), make_skeleton(tmp_path), PATHS, str(tmp_path / "work"))
    student = tmp_path / "work" / "student"
    assert (student / "minddp" / "reducer.py").read_text() == "mine"
    assert (student / "minddp" / "models.py").read_text() == "pristine", "provided files are never taken"
    assert staged.missing == ["answers.py"] and staged.found == {"minddp/reducer.py": "hw/minddp/reducer.py"}


def test_one_rule_prefers_the_path_then_the_shortest():
    names = ["a/b/minddp/reducer.py", "minddp/reducer.py", "old/reducer.py", "minddp/reducer.py.bak"]
    assert locate(names, "minddp/reducer.py") == ["minddp/reducer.py", "a/b/minddp/reducer.py"]
    assert locate(["x/reducer.py", "reducer.py"], "minddp/reducer.py") == ["reducer.py", "x/reducer.py"]


@pytest.mark.parametrize("kind", ["symlink", "symlink-dir", "fifo", "hardlink", "device", "too-large"])
def test_staging_refuses_what_is_not_a_regular_file(tmp_path, kind):
    upload = tmp_path / "upload"
    (upload / "minddp").mkdir(parents=True)
    target = upload / "minddp" / "reducer.py"
    secret = tmp_path / "secret.py"
    secret.write_text("the reference")
    if kind == "symlink":
        target.symlink_to(secret)
    elif kind == "symlink-dir":
        (upload / "minddp").rmdir()
        (tmp_path / "elsewhere").mkdir()
        (tmp_path / "elsewhere" / "reducer.py").write_text("the reference")
        (upload / "minddp").symlink_to(tmp_path / "elsewhere")
    elif kind == "fifo":
        os.mkfifo(target)
    elif kind == "hardlink":
        os.link(secret, target)
    elif kind == "device":
        os.mknod(target, 0o600 | stat.S_IFCHR, os.makedev(1, 5))  # /dev/zero's numbers
    else:
        target.write_bytes(b"#" * (MAX_FILE_BYTES + 1))
    upload_read = read_upload(str(upload))
    staged = stage(upload_read, make_skeleton(tmp_path), PATHS, str(tmp_path / "work"))
    assert "minddp/reducer.py" in staged.missing
    assert any("refused" in p and "minddp" in p for p in staged.problems), staged.problems
    assert (tmp_path / "work" / "student" / "minddp" / "reducer.py").read_text() == "stub"


def zip_bytes(members: dict[str, bytes], symlinks: dict[str, str] | None = None) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as zf:
        for name, data in members.items():
            zf.writestr(name, data)
        for name, target in (symlinks or {}).items():
            info = zipfile.ZipInfo(name)
            info.external_attr = (stat.S_IFLNK | 0o777) << 16
            zf.writestr(info, target)
    return out.getvalue()


def test_zip_members_cannot_escape_or_be_links(tmp_path):
    archive = tmp_path / "sub.zip"
    archive.write_bytes(zip_bytes({"../../evil.py": b"x", "minddp/reducer.py": b"mine"},
                                  symlinks={"answers.py": "/autograder/source/reference/answers.py"}))
    upload = read_upload(str(archive))
    assert upload.files == {"minddp/reducer.py": b"mine"}
    assert any("answers.py: refused" in p for p in upload.problems)
    assert not (tmp_path / "evil.py").exists()


def test_a_folder_holding_one_zip_is_read_as_that_zip(tmp_path):
    (tmp_path / "up").mkdir()
    (tmp_path / "up" / "submission.zip").write_bytes(zip_bytes({"minddp/reducer.py": b"mine"}))
    assert read_upload(str(tmp_path / "up")).files == {"minddp/reducer.py": b"mine"}


def test_broken_zips_are_reported_not_crashed_on(tmp_path):
    good = zip_bytes({"minddp/reducer.py": b"mine" * 100})
    (tmp_path / "truncated.zip").write_bytes(good[:len(good) // 2])
    assert "not a readable zip" in " ".join(read_upload(str(tmp_path / "truncated.zip")).problems)
    corrupt = bytearray(good)
    corrupt[good.index(b"mine")] ^= 0xFF  # the CRC no longer matches
    (tmp_path / "crc.zip").write_bytes(bytes(corrupt))
    upload = read_upload(str(tmp_path / "crc.zip"))
    assert upload.files == {} and "cannot be extracted" in " ".join(upload.problems)


def test_a_zip_bomb_is_bounded(tmp_path):
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("minddp/reducer.py", b"\0" * (50 * MAX_FILE_BYTES))
    (tmp_path / "bomb.zip").write_bytes(out.getvalue())
    upload = read_upload(str(tmp_path / "bomb.zip"))
    assert upload.files == {} and "larger than" in " ".join(upload.problems)


# -- results.json ------------------------------------------------------------------------------------------

def test_results_are_complete_clipped_plain_and_atomic(tmp_path):
    path = str(tmp_path / "results" / "results.json")
    write_fallback(path, "stopped early")
    assert json.loads(open(path).read())["score"] == 0.0
    tests = [Result("a", "1.1", 2.0, 2.0, "passed"), Result("b", "1.2", 3.0, output="x" * 200_000),
             Result("bonus", "A.1", 5.0, 5.0, "passed", extra_credit=True),
             Result("<img src=x onerror=alert(1)>\x1b[31m", "1.3", 1.0, output="\x1b[2Jred\x00")]
    data = write_results(path, tests, "summary\x07", 1.0, {"student_uid": 7})
    assert data["score"] == 7.0 and [t["max_score"] for t in data["tests"]] == [2.0, 3.0, 0.0, 1.0]
    assert len(data["tests"][1]["output"]) <= MAX_OUTPUT_CHARS
    assert data["output_format"] == data["test_output_format"] == "text"
    assert all(t["output_format"] == t["name_format"] == "text" for t in data["tests"])
    assert data["tests"][3]["output"] == "[2Jred" and "\x1b" not in data["tests"][3]["name"]
    assert data["output"] == "summary" and data["extra_data"] == {"student_uid": 7, "execution_s": 1.0}
    assert "execution_time" not in data, "a time measured after the hidden runs is staff's (extra_data) alone"
    assert json.loads(open(path).read()) == data
    assert os.listdir(tmp_path / "results") == ["results.json"], "no temporary file left behind"
    assert clip("short", 100) == "short" and plain("a\tb\nc") == "a\tb\nc"


# -- the checks: numbered, weighted, and every one with hidden inputs ------------------------------------------

def test_checks_are_numbered_and_weighted():
    checks = public_checks()
    numbers = [c.number for c in checks]
    assert len(numbers) == len(set(numbers)), "check numbers are unique"
    assert all(c.weight > 0 for c in checks)
    assert all(c.name and c.runs for c in checks)
    assert set(HIDDEN) <= set(numbers), f"hidden inputs of unknown checks: {set(HIDDEN) - set(numbers)}"
    without = [c.number for c in checks if c.number not in HIDDEN and c.public_share < 1]
    assert not without, f"checks that promise hidden inputs but have none: {without}"


def test_make_autograder_states_the_points_the_weights_give():
    """What a TA types into Gradescope ("Autograder points") and what the smoke zips must score are printed by
    `make autograder` from the checks' weights (a changed weight changes them), never typed in GRADESCOPE.md."""
    import re

    from autograder.assemble import deployment_card
    from checks.registry import full_marks
    required = sum(c.weight for c in public_checks() if not c.bonus)
    card = deployment_card("0123456789ab")
    for line in (f"Autograder points (Gradescope: Create Assignment): {required:g}",
                 f"a perfect submission shows {full_marks():g} / {required:g}",
                 f"dist/solutions.zip must score {full_marks():g} / {required:g}, dist/stubs.zip 0 / {required:g}"):
        assert line in card, card
    assert card.startswith("grader version 0123456789ab.DRAW (") and "\nrelease: none: " in card, card
    with open(os.path.join(REPO, "autograder", "GRADESCOPE.md"), encoding="utf-8") as f:
        typed = re.findall(r"\*\*\d+(?: / \d+)?\*\*|\b\d+ / \d+\b", f.read())
    assert typed == [], f"autograder/GRADESCOPE.md types totals the weights decide: {typed}"


def test_the_grader_version_names_what_can_change_a_score(tmp_path):
    """grader/grader_version.py: CODE changes with any file of the source folder but what is made from the rest
    (the reference cache) and the release's name; DRAW with the secret alone."""
    from grader import grader_version, reference, secret
    assert grader_version.CACHE_NAME == reference.CACHE_NAME and grader_version.SECRET_NAME == secret.NAME
    source = tmp_path / "source"
    for relpath, text in (("grader/hidden.py", "HIDDEN = {}"), ("harness/checks/part1.py", "weight = 2"),
                          ("skeleton/release.json", '{"release": "2026.1"}'), ("hidden-secret", "aa")):
        (source / relpath).parent.mkdir(parents=True, exist_ok=True)
        (source / relpath).write_text(text)
    code, draw = grader_version.version(str(source)).split(".")
    assert grader_version.release(str(source)) == "2026.1"
    (source / "reference-cache.json").write_text("{}")
    (source / "skeleton" / "release.json").write_text('{"release": "2026.2"}')
    (source / "grader" / "__pycache__").mkdir()
    (source / "grader" / "__pycache__" / "hidden.cpython-311.pyc").write_text("x")
    assert grader_version.version(str(source)) == f"{code}.{draw}"  # nothing that changes a score changed
    (source / "hidden-secret").write_text("bb")
    assert grader_version.version(str(source)).split(".") == [code, grader_version.draw_digest(str(source))] \
        and grader_version.draw_digest(str(source)) != draw
    for relpath in ("grader/hidden.py", "harness/checks/part1.py"):  # a hidden input, a weight
        before = grader_version.code_digest(str(source))
        (source / relpath).write_text((source / relpath).read_text() + " # changed")
        assert grader_version.code_digest(str(source)) != before, relpath


def test_answer_tolerance():
    assert matches(10.0005, 10.0) and not matches(10.1, 10.0)
    assert matches([["p1", "p0"], ["p2"]], [["p1", "p0"], ["p2"]])
    assert not matches([["p0", "p1"], ["p2"]], [["p1", "p0"], ["p2"]])
    assert not matches(True, 1) and not matches("3", 3)


# -- check 1.2's invalid environments: one fault each (handout §1: "Only environments with a single fault are
# graded"), so the variable the error must name is the only one it can name --------------------------------------

INTEGERS = {"WORLD_SIZE": 1, "LOCAL_WORLD_SIZE": 1, "RANK": 0, "LOCAL_RANK": 0, "MASTER_PORT": 1}
NAMED = {"E3": "RANK", "E4": "LOCAL_WORLD_SIZE", "E5": "LOCAL_RANK", "E6": "MASTER_PORT"}  # E1, E2: the broken one


def failing_rules(environ: dict) -> list[str]:
    """The rules E1-E6 of handout §1 that ``environ`` breaks, each judged on its own (not in the handout's
    order, which only decides which one a submission reports). A rule about values (E3-E6) is judged only
    when every variable it reads is present and valid: a missing or unparseable variable is one fault."""
    from checks.part1 import GOOD
    failing = []
    if any(not environ.get(name) for name in GOOD):
        failing.append("E1")
    values = {}
    for name, minimum in INTEGERS.items():
        try:
            values[name] = int(environ[name])
        except (KeyError, ValueError):
            if environ.get(name):
                failing.append("E2")
            continue
        if values[name] < minimum:
            failing.append("E2")
            del values[name]
    rank, world, local, per_node, port = (values.get(n) for n in (
        "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_PORT"))
    if None not in (rank, world) and rank >= world:
        failing.append("E3")
    if None not in (world, per_node) and (per_node > world or world % per_node):
        failing.append("E4")
    if None not in (local, per_node, rank) and (local >= per_node or local != rank % per_node):
        failing.append("E5")
    if port is not None and port > 65535:
        failing.append("E6")
    return sorted(set(failing))


def test_every_invalid_environment_of_check_1_2_has_exactly_one_fault():
    import random

    from checks import part1
    from grader import hidden
    public = [r for c in part1.CHECKS if c.number == "1.2" for r in c.runs]
    cases = [(c["env"], c["variable"]) for run in public + list(HIDDEN["1.2"]) for c in run.kwargs["invalid"]]
    for seed in range(20):  # the generator of the secret inputs, on other seeds
        r = random.Random(seed)
        cases += hidden.random_invalid(r, hidden.random_envs(r, 12))
    assert len(cases) > 60
    problems = [f"{environ} (must name {variable}) breaks {failing_rules(environ) or 'no rule'}"
                for environ, variable in cases if len(failing_rules(environ)) != 1
                or NAMED.get(failing_rules(environ)[0], variable) != variable]
    assert not problems, "\n".join(problems)
    valid = [e for run in public + list(HIDDEN["1.1"]) + list(HIDDEN["1.2"]) for e in run.kwargs["envs"]]
    assert [e for e in valid if failing_rules(e)] == []


def test_the_single_fault_rules_see_each_fault():
    """The evaluator above can fail: the environments the issue found with two faults are seen as such."""
    from checks.part1 import GOOD, env
    assert failing_rules(GOOD) == []
    assert failing_rules({**GOOD, "RANK": "8"}) == ["E3", "E5"]  # RANK 8 of 8, and local rank 1 != 8 mod 4
    assert failing_rules({**GOOD, "LOCAL_WORLD_SIZE": "3"}) == ["E4", "E5"]
    assert failing_rules(env(1, 2, 1, 4)) == ["E4"] and failing_rules({**GOOD, "MASTER_PORT": "65536"}) == ["E6"]
    assert failing_rules({**GOOD, "WORLD_SIZE": "0"}) == ["E2"] and failing_rules({**GOOD, "RANK": ""}) == ["E1"]


def test_an_error_names_a_variable_as_a_whole_word():
    from checks.part1 import names
    assert names("RANK=8 must be smaller than WORLD_SIZE=8", "RANK")
    assert names("environment variable RANK is not set", "RANK") and names("bad rank: RANK.", "RANK")
    assert not names("LOCAL_RANK=1 contradicts the layout", "RANK")
    assert not names("LOCAL_WORLD_SIZE=3 must divide 8", "WORLD_SIZE") and not names("RANKS", "RANK")


def test_standins_keep_the_release_and_replace_its_functions():
    for path in STANDINS:
        with open(os.path.join(REPO, "assignment", path), encoding="utf-8") as f:
            release = f.read()
        text = standin_text(path, release)
        assert text.startswith(release.rstrip("\n")) and "appended by the autograder" in text
        compile(text, path, "exec")


def test_gradescope_sim_refuses_a_root_the_student_uid_cannot_reach(tmp_path):
    """`make limits` once put ROOT under a mode-700 mktemp folder: setup.sh then failed, the student uid unable
    to run ROOT/venv/bin/python. The simulator says so before it installs anything."""
    from autograder import sim
    archive = tmp_path / "autograder.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("setup.sh", "")
        zf.writestr("run_autograder", "")
        zf.writestr("requirements.txt", "")
    closed = tmp_path / "closed"
    closed.mkdir(mode=0o700)
    os.chmod(closed, 0o700)
    with pytest.raises(SystemExit, match="not searchable by other users"):
        sim.lay_out(str(closed / "autograder"), str(archive), reuse_setup=False)
    assert not (closed / "autograder" / "source").exists()  # refused before anything was unpacked


def test_the_grader_fails_closed_when_isolation_cannot_be_set_up(tmp_path, monkeypatch):
    """As root without isolation, student code never runs: results.json says why, score 0, exit code 2."""
    from grader import run, sandbox
    monkeypatch.setattr(run.os, "geteuid", lambda: 0)
    monkeypatch.setattr(sandbox, "isolation_layers", lambda: "the student uid cannot run this Python")
    submission = tmp_path / "submission"
    (submission / "minddp").mkdir(parents=True)
    (submission / "minddp" / "reducer.py").write_text("raise SystemExit('student code ran')\n")
    results = tmp_path / "results.json"
    code = run.main(["--source", str(tmp_path / "no-source-needed"), "--submission", str(submission),
                     "--results", str(results)])
    data = json.loads(results.read_text())
    assert code == 2 and data["score"] == 0.0 and data["tests"] == []
    assert data["output"].startswith("autograder error: isolation unavailable (the student uid cannot run this "
                                     "Python); student code was not run.")


def test_every_self_test_submission_can_be_built(tmp_path):
    """Every mutant, correct variant and case edits the current reference: an anchor that moved with a change of
    the reference fails here, in `make check`, not half an hour into CI's grading of every submission. (Mutants
    and variants must also compile; some cases are broken on purpose.)"""
    from autograder.selftest import mutation, runner
    from autograder.selftest.cases import CASES
    for sub in mutation.submissions():
        folder = runner.make_submission(sub.case(every_part=False), str(tmp_path / sub.name))
        for path in sub.edits:
            with open(os.path.join(folder, path), encoding="utf-8") as f:
                compile(f.read(), f"{sub.name}: {path}", "exec")
    for case in CASES:
        runner.make_submission(case, str(tmp_path / case.name))


def test_make_tests_torchrun_launch_leaves_nothing_in_tmp(tmp_path, monkeypatch):
    """Check 1.4 under `make test` starts a real torchrun, which makes /tmp/torchelastic_* folders: they must go."""
    import tempfile

    from checks.local import launch
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr(tempfile, "tempdir", None)  # gettempdir() reads TMPDIR again
    assert len(launch(os.path.join(REPO, "solutions"), 2)) == 2
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("flag, value, says", [("--parts", "3,Z", "name some of 1, 2"),
                                               ("--checks", "3.1,9.9", "name some of 1.1, 1.2")])
def test_staff_scoping_flags_refuse_what_does_not_exist(flag, value, says, tmp_path, capsys):
    """A typo in a staff tool's --parts or --checks stops with what exists: it never grades nothing and
    calls that a pass."""
    from grader.run import main
    with pytest.raises(SystemExit) as stopped:
        main(["--source", str(tmp_path), "--submission", str(tmp_path), "--results", str(tmp_path / "r.json"),
              flag, value])
    assert stopped.value.code == 2 and says in capsys.readouterr().err
    assert not (tmp_path / "r.json").exists()


def test_a_self_test_case_skips_only_the_parts_graded_before_its_files():
    """selftest/runner.py's ``scoped``: the parts before the first one that reads an edited file run only the
    solutions' code, before any of the case's: skipped; anything else (a part expected to score 0 or to say
    something, a case from the stubs or with an exact score, a mutant's own scope) is graded as declared."""
    from autograder.selftest.cases import CASES
    from autograder.selftest.kinds import Case
    from autograder.selftest.runner import scoped
    from grader.parts import PART_ORDER
    reducer = {"minddp/reducer.py": [("a", "b")]}
    assert scoped(Case("x", "", edits=reducer)).parts == ("3", "4", "5", "6", "A", "B")
    assert scoped(Case("x", "", edits={"minddp/ddp.py": [], **reducer})).parts[0] == "3"
    for whole in (Case("x", "", edits=reducer, says={"2": "text"}), Case("x", "", edits=reducer, zero=("1",)),
                  Case("x", "", edits=reducer, start="stubs"), Case("x", "", edits=reducer, score=(0, 0)),
                  Case("x", "", edits={"minddp/process_group.py": []}), Case("x", "", edits=reducer, parts=PART_ORDER)):
        assert scoped(whole) == whole
    solutions = next(c for c in CASES if c.name == "solutions")
    assert scoped(solutions).parts is None


def launch_reports(met=None, **changes) -> list[dict]:
    """Check 1.4's reports of 2 ranks that did everything right (``changes``: what one did not)."""
    from checks.part1 import LAUNCH_BACKEND, LAUNCH_TIMEOUT_S
    return [{"rank": r, "world_size": 2, "local_rank": r, "node_rank": 0, "sum": 7.0, "dist_rank": r,
             "backend": LAUNCH_BACKEND, "timeout_s": float(LAUNCH_TIMEOUT_S), "left": True,
             "destroyed_twice": "did nothing",
             **({} if met is None else {"rendezvous": met}), **changes} for r in range(2)]


def test_check_1_4_believes_the_rendezvous_store_not_the_reports():
    """On Gradescope the grader adds what its store saw ("rendezvous": the ranks that joined a process group
    there) to each rank's report: a report that is right in every other way fails without it."""
    from checks.check import Failure, Outcome, Run
    from checks.part1 import compare_launch
    run, values = Run("launch", {"nproc": 2}), [3, 4]
    compare_launch(Outcome(run, launch_reports([0, 1]), None, {}, {"values": values}))  # a real group: passes
    compare_launch(Outcome(run, launch_reports(None), None, {}, {"values": values}))  # make test (torchrun's store)
    with pytest.raises(Failure, match="only ranks \\[\\] of 2 joined a process group"):
        compare_launch(Outcome(run, launch_reports([]), None, {}, {"values": values}))


def test_check_1_4_holds_destroy_process_group_to_its_contract():
    """The probe leaves the job, then calls destroy_process_group() again with no group: it must do nothing; the
    timeout it asked init_process_group for is the group's."""
    from checks.check import Failure, Outcome, Run
    from checks.part1 import compare_launch
    run, values = Run("launch", {"nproc": 2}), [3, 4]
    with pytest.raises(Failure, match="destroy_process_group\\(\\) must leave the job"):
        compare_launch(Outcome(run, launch_reports([0, 1], left=False), None, {}, {"values": values}))
    with pytest.raises(Failure, match="joined a group whose collectives time out after 1800 s"):
        compare_launch(Outcome(run, launch_reports([0, 1], timeout_s=1800.0), None, {}, {"values": values}))
    raised = "raised AssertionError: Process group cannot be None"
    with pytest.raises(Failure, match=f"with no process group initialised, {raised}; with no group it must do nothing"):
        compare_launch(Outcome(run, launch_reports([0, 1], destroyed_twice=raised), None, {}, {"values": values}))


# -- releases: a submission from an older release is named as such (grader/version.py) -------------------------

def test_a_stale_release_names_the_parts_changed_since():
    from grader import version
    grader = version.Release("aaaaaaaaaaaa", {"1": "111111", "3": "333333", "A": "aaaaaa"}, "ssssss".replace("s", "5"))
    same = version.Release("aaaaaaaaaaaa", dict(grader.parts), grader.shared)
    older = version.Release("bbbbbbbbbbbb", {**grader.parts, "3": "999999"}, grader.shared)
    labels = {"1": "Part 1", "3": "Part 3", "A": "Bonus A", "shared": "the provided code"}
    assert version.note(grader, same, labels) == "" and version.record(grader, same)["changed"] == []
    assert "Changed since: Part 3." in version.note(grader, older, labels)
    assert version.record(grader, older) == {"grader": "aaaaaaaaaaaa", "submission": "bbbbbbbbbbbb", "changed": ["3"],
                                             "grader_release": None, "submission_release": None}
    assert "does not say which release" in version.note(grader, version.Release(None), labels)


def test_a_release_json_from_the_upload_is_read_as_data_only():
    """Student data: only hex digests are taken from it; text, nesting and junk are ignored, never echoed."""
    from grader import version
    from grader.stage import Upload
    forged = b'{"version": "abc123\\nTotal 999", "parts": {"3": "<script>", "1": "deadbeef"}, "shared": 7}'
    read = version.theirs(Upload({"sub/release.json": forged}))
    assert read == version.Release(None, {"1": "deadbeef"}, None)
    for junk in (b"\xff\xfe", b"[1, 2]", b"{", b""):
        assert version.theirs(Upload({"release.json": junk})).version is None
    assert version.theirs(Upload({})).version is None


def test_random_configurations_draw_caps_around_each_models_largest_gradient():
    """hidden.LARGEST_MIB is the models' own largest gradient (so the caps drawn around it split real models)."""
    from grader import hidden
    from minddp import models
    for name, mib in hidden.LARGEST_MIB.items():
        largest = max(p.numel() * p.element_size() for p in models.build(name).parameters()) / 2**20
        assert abs(largest - mib) <= 0.01 * largest, (name, largest, mib)


FEATURE_KEYS = {"set_to_none", "hook", "backend", "subgroups", "seed_per_rank", "accumulate", "no_grad_forward",
                "eval_mode"}


def test_every_secret_turns_every_feature_on_somewhere():
    """Whatever secret an image draws, checks 3.3 and 4.1 exercise every feature, a comm hook in both (a hook
    and process groups never meet in one configuration: hidden.APART draws them apart). A secret that left
    one out made the grading weaker, and the test below fail by luck."""
    from grader import hidden
    for n in range(300):
        reducer = hidden.random_runs("3.3", "reducer", 4, secret=f"any-{n}")
        ddp = hidden.random_runs("4.1", "minddp", 4, secret=f"any-{n}")
        used = {key for run in reducer + ddp for key in run.kwargs}
        assert FEATURE_KEYS <= used, (n, FEATURE_KEYS - used)
        assert any("hook" in run.kwargs for run in reducer) and any("hook" in run.kwargs for run in ddp), n
        assert not any("hook" in run.kwargs and "subgroups" in run.kwargs for run in ddp), n
        unused = hidden.random_unused_runs("A.2", 4, secret=f"any-{n}")
        assert all(run.kwargs["lr"] <= hidden.MAX_LR.get(run.kwargs["model"], 0.2) for run in reducer + ddp + unused), n


def test_a_training_hint_reads_non_finite_sums():
    """Sums of |grad| with inf or NaN (a training that left fp16's range) give no ratio: the hint uses the
    finite ones, and never raises (it once turned a NaN into "your code returned something this check
    cannot read")."""
    from checks.compare import scaling_hint
    nan, inf = float("nan"), float("inf")
    assert "2 times torch's" in scaling_hint({"s": inf, "t": nan, "a": 1.0}, {"s": inf, "t": nan, "a": 2.0}, 2)
    assert scaling_hint({"s": inf}, {"s": inf}, 2) == ""


def test_random_configurations_exercise_every_feature_and_name_it():
    """Across the hidden random configurations, every feature is on somewhere; each label names what is on."""
    from grader import hidden
    runs = [run for number in ("3.3", "4.1") for run in HIDDEN[number] if run.label.startswith("random configuration")]
    assert len(runs) == 8
    used = {key for run in runs for key in run.kwargs}
    assert FEATURE_KEYS <= used
    for run in runs:
        assert hidden.MODEL_WORDS[run.kwargs["model"]] in run.label
        for key, words in (("set_to_none", "set to None"), ("eval_mode", "ddp.eval()"), ("subgroups", "process groups"),
                           ("accumulate", "micro-batches"), ("no_grad_forward", "torch.no_grad()")):
            assert (key in run.kwargs) == (words in run.label), (key, run.label)


def _training(allreduces: int, grads: list) -> list:
    """A one-rank training record: each step's last backward launched ``allreduces`` all-reduces of 4 floats."""
    step = lambda value: {"forward": [[]], "buffers": [], "grads": [value], "params": [value],  # noqa: E731
                          "backward": [[{"op": "all_reduce", "sizes": [[4]], "dtypes": ["float32"]}] * allreduces],
                          "grad_abs_sums": {"w": abs(value)}, "local_abs_sums": {"w": 2.0}, "grad_sums": {"w": value}}
    return [{"steps": [step(value) for value in grads]}]


@pytest.mark.parametrize("claim, allreduces, mine, true", [
    ("Your backward launched no all-reduce, where torch DDP's launched 2 on the same process group.", 0, [1.0, 5.0],
     True),
    ("Your backward launched no all-reduce, where torch DDP's launched 2 on the same process group.", 2, [1.0, 5.0],
     False),
    ("Your backward launched no all-reduce, where torch DDP's launched 3 on the same process group.", 0, [1.0, 5.0],
     False),
    ("Step 1 matched torch DDP's bit for bit: look at what your code carries.", 2, [1.0, 5.0], True),
    ("Step 1 matched torch DDP's bit for bit: look at what your code carries.", 2, [7.0, 5.0], False),
    ("Step 1 matched torch DDP's bit for bit; in step 2 each of your gradients is the sum of torch's averaged "
     "gradients of steps 1 to 2 (per-parameter sums agree).", 2, [1.0, 3.0], True),
    ("Step 1 matched torch DDP's bit for bit; in step 2 each of your gradients is the sum of torch's averaged "
     "gradients of steps 1 to 2 (per-parameter sums agree).", 2, [1.0, 5.0], False),
    ("When loss.backward() returned, .grad still held this rank's local gradients: copy them back.", 2,
     [1.0, 2.0], True),
    ("When loss.backward() returned, .grad still held this rank's local gradients: copy them back.", 2,
     [1.0, 5.0], False),
])
def test_a_message_keeps_only_the_claims_its_record_shows(claim, allreduces, mine, true):
    """claims.py: a claim the record does not show is withdrawn, with its sentence; a shown one stays as written."""
    theirs = _training(2, [1.0, 2.0])  # torch's: two all-reduces, gradient sums 1 then 2
    text = f"rank 0, step 2: gradients when backward returned differ from torch DDP's (handout §3). {claim} Next."
    said = audited(text, Outcome(None, _training(allreduces, mine), theirs, {}))
    if true:
        assert said == text
    else:
        assert WITHDRAWN in said and claim not in said and said.startswith(text.split(" (handout")[0])


def test_a_raised_error_says_where_training_was_and_what_an_internal_assert_is():
    """pool._error_report adds the scenario's word on where it was; feedback.raised explains torch's assertions."""
    from checks.feedback import raised
    from checks.pool import RankFailure, _error_report
    try:
        raise RuntimeError("grad.numel() == bucket.numel() INTERNAL ASSERT FAILED at reducer.cpp:1")
    except RuntimeError as error:
        error.raised_during = "step 2's backward"
        report = _error_report(error)
    text = raised(RankFailure(0, "raised", report["error"], report["message"], report["where"]))
    assert text.startswith("Your code raised RuntimeError: grad.numel()")
    assert "[raised in step 2's backward]" in text and "torch's own internal checks" in text
    assert "test_grader_units.py" in text  # the frames: where to look


def test_the_smoke_zips_hold_each_file_once(tmp_path):
    """dist/solutions.zip and dist/stubs.zip, as `make submit` writes submission.zip: each file once (stubs.zip
    had release.json twice: Python's zipfile warns, and which copy a reader takes is its own choice)."""
    from autograder.assemble import smoke_zips
    for path in smoke_zips(str(tmp_path)):
        with zipfile.ZipFile(path) as zf:
            names = zf.namelist()
        assert "release.json" in names and len(names) == len(set(names)), (path, names)


def test_a_release_name_from_the_upload_is_read_only_in_its_form():
    """release.json in the upload is student data: its release's name is echoed only as YEAR.N (grader/version.py)."""
    from grader import version
    ours = version.parse(b'{"release": "2026.2", "version": "bbbbbbbbbbbb", "parts": {"3": "cccccccccccc"}}')
    for name, read in (("2026.1", "2026.1"), ("2026.1; rm -rf", None), ("<b>x</b>", None), (7, None)):
        theirs = version.parse(json.dumps({"release": name, "version": "aaaaaaaaaaaa", "parts": {}}).encode())
        assert theirs.name == read, name
    said = version.note(ours, version.parse(b'{"release": "2026.1", "version": "aaaaaaaaaaaa", "parts": {}}'), {})
    assert said.startswith("Release: your files come from release 2026.1 (aaaaaaaaaaaa), older or other than the one "
                           "this grader grades (2026.2 (bbbbbbbbbbbb))"), said


def test_a_claim_of_no_all_reduce_needs_torchs_record_to_show_some():
    """A record that holds no all-reduce for torch either (a process group's, before they were recorded) backs
    no claim that yours launched none: the 3.10 message that said so of a right Reducer is withdrawn."""
    text = ("rank 0, step 2: gradients when backward returned differ from torch DDP's (handout §3). Your backward "
            "launched no all-reduce, where torch DDP's launched 0 on the same process group. Next.")
    assert WITHDRAWN in audited(text, Outcome(None, _training(0, [1.0, 5.0]), _training(0, [1.0, 2.0]), {}))


BUCKETS, NAMES = [[0], [1], [2]], ["p0", "p1", "p2"]


@pytest.mark.parametrize("events, at_end, says", [
    ([["p1", 0], ["p0", 0], ["p2", 2]], 3, ""),  # bucket 1 fills first, goes right after bucket 0
    ([["p1", 0], ["p0", 0], ["p2", 1]], 3, "bucket 1 was launched late, although it had filled before its turn"),
    ([["p0", 0], ["p1", 1], ["p2", 2]], 2, "only 2 all-reduce(s) had been launched when every hook"),
    ([["p1", 0], ["p2", 1], ["p0", 1]], 3, "out of index order"),  # bucket 1 went before bucket 0 was full
    ([["p0", 0], ["p1", 1], ["p2", 2]], 3, ""),  # in order, each at its own hook
    ([["p0", 1], ["p1", 1], ["p2", 2]], 3, ""),  # a tensor hook launched bucket 0 before the probe saw p0
])
def test_launch_times_are_read_from_the_order_of_events(events, at_end, says):
    """(C2) Each bucket launched once it and the buckets below it are full, never before, never later. (A launch
    seen at the very event that makes it allowed is not early: a tensor hook registered before the probe's may
    have launched it.)"""
    from checks.part3 import launch_problem
    problem = launch_problem(events, at_end, BUCKETS, NAMES)
    assert (says in problem) if says else problem == ""


def test_a_bucket_launched_before_it_is_full_is_told_apart_from_one_out_of_order():
    from checks.part3 import launch_problem
    problem = launch_problem([["p0", 0], ["p1", 1], ["p2", 1]], 1, [[0, 1, 2]], NAMES)
    assert "before all its gradients were ready" in problem and "one hook call per parameter" in problem


def test_gradbuckets_are_held_to_torchs_rules():
    """is_last() on the highest index only, whichever fills last; each slot torch's layout of the raw gradient."""
    from checks.part3 import bucket_problem
    record = {"dtypes": {"a": "float32", "t": "float32"}, "numels": {"a": 2, "t": 6}}
    seen = lambda **over: {"is_last": False, "dtype": "float32", "elements": 6, "state": True,  # noqa: E731
                           "slots": ["grad"], **over}
    assert bucket_problem([0, ["t"], seen()], 2, record) == ""
    assert "is_last() True in bucket 0 of 2" in bucket_problem([0, ["t"], seen(is_last=True)], 2, record)
    assert "is_last() False in bucket 1 of 2" in bucket_problem([1, ["t"], seen()], 2, record)
    assert "row-major" in bucket_problem([0, ["t"], seen(slots=["grad, row-major"])], 2, record)
    assert "raw gradient" in bucket_problem([0, ["t"], seen(slots=["other"])], 2, record)
    assert "state" in bucket_problem([0, ["t"], seen(state=False)], 2, record)


@pytest.mark.parametrize("kwargs, text, says", [
    ({"model": "frozen"}, "Your code raised RuntimeError: cannot register a hook on a tensor that doesn't require "
     "gradient", "requires_grad=False"),
    ({"model": "mlp"}, "Your code raised RuntimeError: cannot register a hook on a tensor that doesn't require "
     "gradient", ""),
    ({"subgroups": [[0], [1, 2]]}, "Your code raised ValueError: Global rank 0 is not part of group", "GLOBAL rank"),
    ({}, "Your code raised ValueError: Global rank 0 is not part of group", ""),
    ({"model": "frozen"}, "rank 0: torch's DDP raises: Expected to have finished reduction", ""),  # not an error
])
def test_a_hint_comes_only_with_an_error_whose_cause_the_input_shows(kwargs, text, says):
    from checks.causes import error_hint
    hint = error_hint(kwargs, text)
    assert (says in hint) if says else hint == ""


def test_micro_batches_that_did_not_accumulate_are_counted():
    """The gradients are the group's average of the last micro-batches alone: how many is said."""
    from checks.check import Run
    from checks.compare import micro_batches_kept
    micro = lambda *sums: [{"w": s} for s in sums]  # noqa: E731
    got = [{"steps": [{"micro_local_sums": micro(1.0, 2.0, 4.0), "grad_sums": {"w": (2.0 + 4.0 + 2.0 + 8.0) / 2}}]},
           {"steps": [{"micro_local_sums": micro(0.5, 2.0, 8.0), "grad_sums": {"w": 8.0}}]}]
    ref = [{"steps": [{"grad_sums": {"w": (7.0 + 10.5) / 2}}]}] * 2
    o = Outcome(Run("train", {}, world_size=2), got, ref, {})
    assert micro_batches_kept(o, 0, 0) == 2
    ref_same = [{"steps": [{"grad_sums": {"w": 8.0}}]}] * 2  # torch's gradients are the same: no cause there
    assert micro_batches_kept(Outcome(Run("train", {}, world_size=2), got, ref_same, {}), 0, 0) == 0
