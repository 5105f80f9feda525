"""The handout's contract, item by item: what a submission must do, in the handout's own numbering.

Read from the LaTeX sources, so the handout is the one truth; the handout's tests (every item names checks
that exist) and the self-test's coverage table (every item has a mutant that breaks it alone, and a check
catches it: ``autograder/selftest/coverage.py``) both read it here.

Two kinds of item:

* numbered ones, in a ``contract`` environment: ``(E1)``-``(E6)`` (Part 1's validation order), ``(R1)``-``(R6)``
  (bucketing), ``(C1)``-``(C8)`` (Reducer), ``(W1)``-``(W7)`` (wrapper), ``(A1)``-``(A4)``, ``(B1)``-``(B5)``
  (bonus); each ends with ``\\checks{...}``, the checks that compare it;
* a function whose ``\\api`` text is its contract (the formulas of Part 5, Part 1's layout, init and destroy):
  labelled by the function's name. A function specified by a numbered list instead is covered by that list
  (``SPECIFIED_BY``).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

HANDOUT = os.path.dirname(os.path.abspath(__file__))
CONTRACT_RE = re.compile(r"\\begin\{contract\}\{(\w+)\}(.*?)\\end\{contract\}", re.S)
CHECKS_RE = re.compile(r"\\checks\{([^{}]*)\}")
TITLE_RE = re.compile(r"\\textbf\{((?:[^{}]|\{[^{}]*\})*)\}")
API_RE = re.compile(r"\\api\{minddp\.\w+\}\{(\w+)\(")
API_PARTS = ("part1.tex", "part2.tex", "part5.tex")  # the parts whose functions are specified one by one
SPECIFIED_BY = {"read_torchrun_env": "E", "compute_bucket_assignment": "R"}  # by a numbered list instead


@dataclass(frozen=True)
class Item:
    label: str  # "C3", "E4", a function's name ("simulate_step"), or a written question ("Q9")
    title: str  # the item's bold words, or its first sentence
    where: str  # "handout/part3.tex:83"
    checks: tuple  # the check numbers its \checks names (numbered items only)


def tex_files() -> list[str]:
    return sorted(os.path.join(HANDOUT, name) for name in os.listdir(HANDOUT) if name.endswith(".tex")
                  and name != "style.tex")


MATH = {r"\ge": "≥", r"\le": "≤", r"\ne": "≠", r"\cdot": "·", r"\alpha": "α", r"\beta": "β"}


def _plain(tex: str) -> str:
    """A line of LaTeX as text: macros' arguments kept, the macros themselves and braces dropped."""
    for macro, symbol in MATH.items():
        tex = re.sub(re.escape(macro) + r"(?![a-zA-Z])", symbol, tex)
    text = re.sub(r"\\(?:code|emph|textbf)\{((?:[^{}]|\{[^{}]*\})*)\}", r"\1", tex)
    text = re.sub(r"\\[a-zA-Z]+\*?", "", text).replace("{", "").replace("}", "").replace("~", " ")
    return " ".join(text.replace("$", "").split())


def _first_sentence(tex: str) -> str:
    title = TITLE_RE.search(tex)
    text = _plain(title.group(1) if title else tex).split(". ")[0].rstrip(".;: ")
    return text if len(text) <= 90 else text[:text.rindex(" ", 0, 88)] + " ..."


def numbered_items() -> list[Item]:
    found = []
    for path in tex_files():
        with open(path, encoding="utf-8") as f:
            text = f.read()
        for match in CONTRACT_RE.finditer(text):
            prefix, body = match.group(1), match.group(2)
            for index, item in enumerate(body.split("\\item")[1:], start=1):
                line = text.count("\n", 0, match.start(2) + body.index(item)) + 1
                cited = tuple(n.strip() for m in CHECKS_RE.findall(item) for n in m.split(",") if n.strip())
                found.append(Item(f"{prefix}{index}", _first_sentence(CHECKS_RE.sub("", item)),
                                  f"handout/{os.path.basename(path)}:{line}", cited))
    return found


def function_items() -> list[Item]:
    found = []
    for name in API_PARTS:
        with open(os.path.join(HANDOUT, name), encoding="utf-8") as f:
            text = f.read()
        for match in API_RE.finditer(text):
            function = match.group(1)
            if function in SPECIFIED_BY:
                continue
            rest = text[text.index("\n", match.end()) + 1:]
            found.append(Item(function, _first_sentence(rest.split("\n\n")[0]),
                              f"handout/{name}:{text.count(chr(10), 0, match.start()) + 1}", ()))
    return found


QUESTION_RE = re.compile(r"\\subsection\*\{(Q\d+)\. (.*?)\\hfill")


def question_items() -> list[Item]:
    """Part 6's written questions: each answer is its own item (a wrong answer is the mistake)."""
    path = os.path.join(HANDOUT, "questions.tex")
    with open(path, encoding="utf-8") as f:
        text = f.read()
    return [Item(m.group(1), _plain(m.group(2)), f"handout/questions.tex:{text.count(chr(10), 0, m.start()) + 1}", ())
            for m in QUESTION_RE.finditer(text)]


def items() -> list[Item]:
    """Every contract item of the handout (numbered ones, then functions), in the handout's order."""
    return numbered_items() + function_items()
