"""Checks of handout.pdf and its sources (staff only; `make test` runs them).

* The API the handout documents (every ``\\api{module}{signature}`` and ``\\apiname{module}{name}``) exists in
  the generated student release (assignment/) with exactly that signature, and every function a student
  must write is documented by an ``\\api``.
* Every check (checks/part*.py) is in the handout: each part's box inputs its generated table; every test of
  provided code is named (``\\testname{file}{test}``), and every name there is a real test.
* No number can drift: handout/generated/ equals what the reference code computes now, and the written
  answers in solutions/answers.py equal what the reference code computes from the questions' data.
* The committed handout.pdf was built from the current sources (SHA-256 recorded by `make handout`).
* The LaTeX source compiles, without undefined references, when latexmk is installed (skipped, with
  the reason shown, only when latexmk is absent).
"""

from __future__ import annotations

import ast
import math
import os
import re
import shutil
import subprocess

import pytest

from handout import build, contract
from tools import student_side
from tools.student.course import find_stubs, load_student_files

HANDOUT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REPO = os.path.dirname(HANDOUT)
ASSIGNMENT = os.path.join(REPO, "assignment")
student_side()

MACRO_RE = re.compile(r"\\(api|apiname|testname)\{([^{}]*)\}\{([^{}]*)\}")
MAX_PDF_BYTES = 1_500_000


def tex_files() -> list[str]:
    return sorted(os.path.join(HANDOUT, name) for name in os.listdir(HANDOUT) if name.endswith(".tex")
                  and name != "style.tex")


def macros(kind: str) -> list[tuple[str, str, str]]:
    """(file:line, first argument, second argument) of every use of \\kind{...}{...}."""
    found = []
    for path in tex_files():
        with open(path, encoding="utf-8") as f:
            text = f.read()
        for match in MACRO_RE.finditer(text):
            if match.group(1) == kind:
                line = text.count("\n", 0, match.start()) + 1
                found.append((f"handout/{os.path.basename(path)}:{line}", match.group(2), match.group(3)))
    return found


def module_path(module: str) -> str:
    return os.path.join(ASSIGNMENT, *module.split(".")) + ".py"


def definitions(module: str) -> dict[str, ast.AST]:
    """Qualified name -> function or class node of a module of the release."""
    with open(module_path(module), encoding="utf-8") as f:
        tree = ast.parse(f.read())
    found: dict[str, ast.AST] = {}

    def walk(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                found[prefix + child.name] = child
                walk(child, prefix + child.name + ".")

    walk(tree, "")
    return found


def signature(qualname: str, node: ast.FunctionDef) -> str:
    text = f"{qualname}({ast.unparse(node.args)})"
    return text + (f" -> {ast.unparse(node.returns)}" if node.returns is not None else "")


def squash(text: str) -> str:
    return re.sub(r"\s+", "", text)


# -- the API ------------------------------------------------------------------------------------------------

def test_the_handout_documents_an_api():
    assert len(macros("api")) >= 30 and macros("testname"), "no \\api or \\testname found: is the regex stale?"


@pytest.mark.parametrize("where, module, documented", macros("api"), ids=lambda v: str(v)[:60])
def test_api_signature_matches_the_stub(where, module, documented):
    assert os.path.isfile(module_path(module)), f"{where}: module {module} is not in assignment/"
    qualname = documented.split("(", 1)[0].strip()
    node = definitions(module).get(qualname)
    assert isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)), \
        f"{where}: {module}.{qualname} is not a function of the release (assignment/)"
    actual = signature(qualname, node)
    assert squash(documented) == squash(actual), \
        f"{where}: the handout documents\n  {documented}\nbut the stub is\n  {actual}"


@pytest.mark.parametrize("where, module, name", macros("apiname"), ids=lambda v: str(v)[:60])
def test_api_name_exists(where, module, name):
    assert name in definitions(module), f"{where}: {module}.{name} does not exist in assignment/"


def test_every_function_students_write_is_documented():
    documented = {(module, sig.split("(", 1)[0].strip()) for _, module, sig in macros("api")}
    missing = []
    for entry in load_student_files(os.path.join(ASSIGNMENT, "student_files.json")):
        module = entry.path[:-3].replace("/", ".")
        with open(os.path.join(ASSIGNMENT, entry.path), encoding="utf-8") as f:
            stubs = find_stubs(f.read(), entry.path)
        missing += [f"{module}.{s.qualname}" for s in stubs if (module, s.qualname) not in documented]
    assert not missing, f"functions with a stub but no \\api in the handout: {missing}"


# -- the public tests ----------------------------------------------------------------------------------------

def provided_tests() -> set[tuple[str, str]]:
    with open(os.path.join(ASSIGNMENT, "tests", "test_provided.py"), encoding="utf-8") as f:
        tree = ast.parse(f.read())
    return {("test_provided", node.name) for node in tree.body
            if isinstance(node, ast.FunctionDef) and node.name.startswith("test_")}


def test_every_check_is_in_the_handout():
    """Each part's box shows the generated table of its checks (checks/part*.py, as Gradescope runs them)."""
    from handout import figures
    text = "".join(open(path, encoding="utf-8").read() for path in tex_files())
    missing = [part for part in figures.CHECK_PARTS if f"\\input{{generated/checks-{part}.tex}}" not in text]
    assert not missing, f"parts whose checks table the handout never shows: {missing}"


def test_every_test_of_provided_code_is_named_in_the_handout():
    named = {(file, test) for _, file, test in macros("testname")}
    tests = provided_tests()
    assert not tests - named, f"tests of provided code the handout never names (\\testname): {sorted(tests - named)}"
    assert not named - tests, f"\\testname of tests that do not exist: {sorted(named - tests)}"


# -- section numbers ------------------------------------------------------------------------------------------------

SECTION_RE = re.compile(r"\\(section|subsection)(?:\[([^\]]*)\])?\{([^{}]*)|\\appendix\b|\\input\{([\w/-]+)\}")


def handout_sections() -> dict[str, str]:
    """Every number LaTeX gives a (sub)section, as the PDF shows it ("4", "4.5", "C.1"), with its title: the
    document's \\input order, counting from 0 (``\\setcounter{section}{-1}``), letters after ``\\appendix``."""
    numbers: dict[str, str] = {}
    section, subsection, appendix = -1, 0, False

    def walk(name: str) -> None:
        nonlocal section, subsection, appendix
        with open(os.path.join(HANDOUT, name + ".tex"), encoding="utf-8") as f:
            text = f.read()
        for match in SECTION_RE.finditer(text):
            if match.group(4) is not None:
                if not match.group(4).startswith("generated/") and match.group(4) != "style":
                    walk(match.group(4))
            elif match.group(0).startswith("\\appendix"):
                appendix, section = True, 0
            else:
                if match.group(1) == "section":
                    section, subsection = section + 1, 0
                else:
                    subsection += 1
                head = chr(ord("A") + section - 1) if appendix else str(section)
                numbers[head if match.group(1) == "section" else f"{head}.{subsection}"] = match.group(2) or match.group(3)
    walk("handout")
    return numbers


def release_citations(pattern: str) -> list[tuple[str, str]]:
    """(file, match) for every match of ``pattern`` in the release's Python and Markdown files."""
    found = []
    for root, _, names in os.walk(ASSIGNMENT):
        for name in names:
            if name.endswith((".py", ".md")):
                path = os.path.join(root, name)
                with open(path, encoding="utf-8") as f:
                    found += [(f"assignment/{os.path.relpath(path, ASSIGNMENT)}", m) for m in re.findall(pattern, f.read())]
    return found


def test_every_handout_section_the_release_cites_exists():
    """Stubs, hints, messages and the README cite "handout §4.4": that section must exist, with that number."""
    assert {"0", "3", "4.5", "B"} <= set(handout_sections()), "the section counter is stale"
    cited = release_citations(r"[Hh]andout §([0-9A-Z]+(?:\.\d+)?)")
    assert cited, "no 'handout §' reference found: is the pattern stale?"
    missing = sorted({f"{where}: §{number}" for where, number in cited
                      if number not in handout_sections() and number != "N"})  # ("§N": a template's placeholder)
    assert not missing, "sections the release cites that the handout does not have:\n" + "\n".join(missing)


def test_the_release_cites_the_handout_only():
    """One numbering scheme in the code students read: handout sections (they have the handout; a lecture
    section number next to a handout one is a guess which document is meant)."""
    lecture = [f"{where}: {m}" for where, m in release_citations(r"[Ll]ecture(?:'s)? §[\w.]+")]
    assert not lecture, "cite the handout's section instead:\n" + "\n".join(lecture)


def test_the_bonus_stubs_cite_their_bonus_section():
    sections = handout_sections()
    wrong = []
    for entry in load_student_files(os.path.join(ASSIGNMENT, "student_files.json")):
        with open(os.path.join(ASSIGNMENT, entry.path), encoding="utf-8") as f:
            for bonus, number in re.findall(r"Bonus ([AB]) \(handout §([\w.]+)\)", f.read()):
                if not sections.get(number, "").startswith(f"Bonus {bonus}"):
                    wrong.append(f"{entry.path}: Bonus {bonus} cites §{number} ({sections.get(number)!r})")
    assert not wrong, "\n".join(wrong)


# -- contracts, not recipes ---------------------------------------------------------------------------------------

CONTRACT_PARTS = ("3", "4", "A", "B")  # the parts graded against torch's DDP (Bonus B's model aside), specified by contracts
MIN_LEAK_CHARS = 20  # a solution line this long (spaces aside) is a statement, not an API name


def test_every_contract_item_names_the_checks_that_compare_it_with_torch():
    """Every numbered item names the checks that hold a submission to it; what the handout states of torch's DDP
    is what torch does: those items name checks that run torch's DDP beside the code (and `make validate`
    runs them on the reference solution)."""
    from checks.registry import public_checks
    checks = {c.number: c for c in public_checks()}
    items = contract.numbered_items()
    assert {item.label[0] for item in items} >= {"E", "R", "C", "W", "A", "B"}, "a part's contract is missing"
    problems = []
    for item in items:
        label, where, cited = item.label, item.where, item.checks
        if not cited:
            problems.append(f"{where}: ({label}) names no check (\\checks{{...}})")
        for number in cited:
            check = checks.get(number)
            if check is None:
                problems.append(f"{where}: ({label}) names check {number}, which does not exist")
            elif check.part in CONTRACT_PARTS and not any(isinstance(run.ref, dict) and run.ref.get("impl") == "torch" for run in check.runs) \
                    and not all(run.fn == "timeline_cases" for run in check.runs):  # (B4, B5: the timeline model's, as Part 5)
                problems.append(f"{where}: ({label}) names check {number}, which does not run torch's DDP")
    assert not problems, "\n".join(problems)


def test_every_check_against_torch_is_stated_by_a_contract_item():
    from checks.registry import public_checks
    cited = {number for item in contract.numbered_items() for number in item.checks}
    missing = [c.number for c in public_checks() if c.part in CONTRACT_PARTS and c.number not in cited]
    assert not missing, f"checks that no contract item of the handout names (\\checks): {missing}"


def main_text() -> str:
    """The whole handout (the hints are not in it: `make hint`), TeX escapes undone, all whitespace removed."""
    text = ""
    for path in tex_files():
        with open(path, encoding="utf-8") as f:
            text += f.read()
    return re.sub(r"\s+", "", text.replace("\\_", "_").replace("\\{", "{").replace("\\}", "}"))


def solution_lines() -> list[tuple[str, str]]:
    """(file:line, code) of every statement line of every solution region, comments dropped."""
    from tools.markers import find_regions
    lines = []
    for entry in load_student_files(os.path.join(REPO, "solutions", "student_files.json")):
        with open(os.path.join(REPO, "solutions", entry.path), encoding="utf-8") as f:
            source = f.read()
        numbered = source.splitlines()
        for placed in find_regions(source, entry.path):
            for number in range(placed.region.begin, placed.region.end - 1):
                code = numbered[number].split("  #")[0].strip()
                if code and not code.startswith("#"):
                    lines.append((f"solutions/{entry.path}:{number + 1}", code))
    return lines


def leaked_lines(text: str) -> list[str]:
    """The solution lines that ``text`` (as ``main_text`` gives it) contains."""
    return [f"{where}: {code}" for where, code in solution_lines()
            if len(re.sub(r"\s+", "", code)) >= MIN_LEAK_CHARS and re.sub(r"\s+", "", code) in text]


def test_the_main_text_holds_no_line_of_the_reference_solution():
    """The parts are contracts: a student cannot pass by copying the handout's sentences into code (the
    step-by-step recipes live in the hints, solutions/hints/, opened one level at a time by `make hint`)."""
    assert len(solution_lines()) > 150, "too few solution lines found: is the region reader stale?"
    leaked = leaked_lines(main_text())
    assert not leaked, "the handout's main text holds lines of the reference solution:\n" + "\n".join(leaked)


def test_a_recipe_in_the_main_text_would_be_found():
    where, code = next((w, c) for w, c in solution_lines() if "prepare_for_backward(" in c and "reducer" in c)
    assert leaked_lines(main_text() + re.sub(r"\s+", "", code)) == [f"{where}: {code}"]


def experiment_findings() -> list[str]:
    """What the reference's experiments find on the lecture's models, as the handout would print it (ms with one
    and two decimals, ratios and efficiencies with three): Part 6 asks students for these (Q6, Q11)."""
    from minddp import timeline as tl
    resnet, bert = tl.resnet50_model(), tl.bert_large_model()
    seconds = [p["step_s"] for m in (resnet, bert) for p in tl.bucket_cap_sweep(m)["points"]]
    seconds += [row["step_s"] for row in tl.registration_order_effect(bert).values()]
    seconds += [row[key] for row in tl.first_bucket_effect(resnet).values() for key in ("step_s", "first_comm_start_s")]
    seconds += [tl.best_bucket_plan(m)[1] for m in (resnet, bert)]
    ratios = [row[key] for m in (resnet, bert) for row in tl.weak_scaling(m)[1:] for key in ("slowdown", "efficiency")]
    ratios += [tl.skip_sync_speedup(m)["speedup"] for m in (resnet, bert)]
    lecture = {f"{number:g}" for _, _, number in tl.lecture_comparison()}  # the lecture's own numbers may be quoted
    found = {f"{s * 1e3:.2f}" for s in seconds} | {f"{s * 1e3:.1f}" for s in seconds} | {f"{r:.3f}" for r in ratios}
    return sorted(text for text in found - lecture if float(text) not in (0.0, 1.0))


def test_the_handout_prints_no_finding_of_the_experiments():
    """Part 5's experiments are the students' to run and Part 6 asks what they found: the handout (its sources,
    generated ones included) must not print what the reference finds."""
    findings = experiment_findings()
    assert len(findings) > 40, findings
    sources = "".join(open(path, encoding="utf-8").read() for path in contract.tex_files() + sorted(
        os.path.join(HANDOUT, "generated", n) for n in os.listdir(os.path.join(HANDOUT, "generated"))
        if n.endswith((".tex", ".txt"))))
    printed = [text for text in findings if re.search(rf"(?<![\d.]){re.escape(text)}(?![\d])", sources)]
    assert not printed, f"the handout prints what the reference's experiments find: {printed}"


# -- numbers ----------------------------------------------------------------------------------------------------

def test_generated_numbers_and_figure_data_match_the_reference_code():
    from handout import figures
    stale = figures.stale_files()
    assert not stale, (f"handout/generated/{{{','.join(stale)}}} differ from what the reference code computes "
                       "now: run `make handout` (and commit handout/ and handout.pdf)")


def close(a, b) -> bool:
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(close(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float) or isinstance(b, float):
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)
    return a == b


def test_answers_equal_what_the_reference_code_computes():
    import answers

    from handout import questions
    reference = questions.reference_answers()
    functions = sorted(name for name in dir(answers) if re.match(r"q\d+_", name))
    assert functions == sorted(reference), "solutions/answers.py and handout/questions.py list different questions"
    wrong = {name: (getattr(answers, name)(), value) for name, value in reference.items()
             if not close(getattr(answers, name)(), value)}
    assert not wrong, f"solutions/answers.py differs from the reference computation (answer, reference): {wrong}"


def test_the_model_of_q10_is_the_timeline_models():
    """Q10's check recomputes ResNet-50's no-overlap steps in closed form from these numbers: they must be
    minddp.timeline's (the answers test compares the results; this names the number that drifted)."""
    from checks import part6
    from minddp import timeline
    resnet = timeline.resnet50_model()
    limits = [part6.PREDICTION_CAP_MB * timeline.MB]
    assert part6.PREDICTION_WORLD_SIZE == timeline.LECTURE_WORLD_SIZE
    assert math.isclose(part6.RESNET50_BACKWARD_MS, resnet.backward_time * 1e3, rel_tol=1e-12)
    assert part6.RESNET50_GRAD_BYTES == timeline.model_bytes(resnet.shapes)
    assert part6.RESNET50_TENSORS == len(resnet.shapes)
    assert part6.RESNET50_BUCKETS == resnet.step(part6.PREDICTION_WORLD_SIZE, limits).num_buckets


# -- the PDF ------------------------------------------------------------------------------------------------------

def test_question_points_are_what_the_autograder_gives():
    """Each written question's heading says its points; its checks (named "Qn: ...") must weight it the same."""
    with open(os.path.join(HANDOUT, "questions.tex"), encoding="utf-8") as f:
        headings = re.findall(r"\\subsection\*\{Q(\d+)\..*?\(([\d.]+) points?\)\}", f.read())
    from checks.part6 import CHECKS
    points: dict[str, float] = {}
    for check in CHECKS:
        question = re.match(r"Q(\d+):", check.name)
        assert question, f"check {check.number} ({check.name}) does not name its question (\"Qn: ...\")"
        points[f"q{question[1]}"] = points.get(f"q{question[1]}", 0.0) + check.weight
    assert {f"q{n}": float(p) for n, p in headings} == points
    assert sum(points.values()) == 10


def test_committed_pdf_was_built_from_these_sources():
    assert os.path.isfile(build.PDF), "handout.pdf is missing: run `make handout`"
    assert os.path.isfile(build.HASHES), "handout/generated/pdf-sources.sha256 is missing: run `make handout`"
    with open(build.HASHES, encoding="utf-8") as f:
        recorded = {line.split("  ", 1)[1]: line.split("  ", 1)[0] for line in f.read().splitlines()
                    if line and not line.startswith("#")}
    current = {line.split("  ", 1)[1]: line.split("  ", 1)[0] for line in build.digest_lines()}
    changed = sorted(p for p in current.keys() | recorded.keys() if current.get(p) != recorded.get(p))
    assert not changed, ("handout.pdf is out of date with its sources; changed since the last `make handout`: "
                         f"{', '.join(changed)}. Run `make handout` and commit the result.")


def test_pdf_is_small():
    assert os.path.getsize(build.PDF) < MAX_PDF_BYTES


def test_latex_source_compiles(tmp_path):
    if shutil.which("latexmk") is None:
        pytest.skip("latexmk is not installed, so the LaTeX source was not compiled (`make handout` installs it)")
    copy = tmp_path / "handout"
    shutil.copytree(HANDOUT, copy, ignore=shutil.ignore_patterns("build", "tests", "__pycache__"))
    done = subprocess.run(["latexmk", "-pdf", "-interaction=nonstopmode", "-halt-on-error", "handout.tex"],
                          cwd=copy, capture_output=True, text=True, errors="replace", timeout=300)
    log = (copy / "handout.log").read_text(encoding="latin-1") if (copy / "handout.log").exists() else ""
    errors = [line for line in log.splitlines() if line.startswith("!")]
    assert done.returncode == 0, f"latexmk failed: {errors or done.stdout[-2000:]}"
    undefined = [line for line in log.splitlines() if re.search(r"(Reference|Citation|Control sequence).*undefined", line)]
    assert not undefined, f"undefined references: {undefined}"


# -- points: one truth, the checks' weights ------------------------------------------------------------------

def test_no_points_are_typed_in_the_handout():
    """Every part's points, the total and the bonus come from generated/points.tex (the checks' weights)."""
    typed = []
    for path in tex_files():
        with open(path, encoding="utf-8") as f:
            for number, line in enumerate(f, start=1):
                if re.search(r"\\points\{\+?\d", line) or re.search(r"^(?:\d\s*\\(?:enspace|quad)|Total|Bonus)[^\n]*& \+?\d+\s*(?:\\\\|&)", line):
                    typed.append(f"{os.path.basename(path)}:{number}: {line.strip()}")
    assert not typed, "points typed by hand (use the \\Points... macros of generated/points.tex):\n" + "\n".join(typed)


def test_the_points_follow_the_weights(monkeypatch):
    """A TA changes a check's weight: the handout's part points and totals change with it."""
    import dataclasses

    from checks import registry
    from handout import figures
    real = registry.public_checks()
    before = figures.points_tex()
    monkeypatch.setattr(registry, "public_checks", lambda: [
        dataclasses.replace(c, weight=c.weight + 2) if c.number == "3.1" else c for c in real])
    after = figures.points_tex()
    assert before != after
    three = sum(c.weight for c in real if c.part == "3")
    assert f"\\newcommand{{\\PointsThree}}{{{three + 2:g}}}" in after
    assert f"\\newcommand{{\\PointsAll}}{{{registry.full_marks():g}}}" in after
