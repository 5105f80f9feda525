"""The contract-coverage table: every item of the handout's contract, the checks that hold a submission to
it, and the mutants that break it alone (COVERAGE.md, generated).

    python -m autograder.selftest.coverage          # print the table
    python -m autograder.selftest.coverage --write  # rewrite COVERAGE.md (make coverage)

The items come from the handout (``handout/contract.py``: the numbered lists E, R, C, W, A, B and the functions
whose ``\\api`` text is their contract); each mutant names the one item it breaks (``VIOLATES``). What the
tests hold it to (``autograder/tests/test_coverage.py``): every item has a mutant, every mutant names a real
item and is caught by a check that item cites, and COVERAGE.md is current. That each mutant really is caught,
with a message naming it, is ``make mutants`` (CI grades every one). A second table lists the edges the
handout states in words (``edges.py``), each with the input of a check that calls it: the handout must still
say each, and some public or hidden input must call it.
"""

from __future__ import annotations

import os
import sys

from autograder.selftest.edges import EDGES, Edge
from autograder.selftest.mutation import submissions
from handout import contract
from tools import student_side

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))

TABLE = os.path.join(HERE, "COVERAGE.md")


def items() -> list[contract.Item]:
    return contract.items() + contract.question_items()


def mutants_by_item() -> dict[str, list]:
    found: dict[str, list] = {}
    for sub in submissions():
        if sub.kind == "mutants":
            found.setdefault(sub.violates, []).append(sub)
    return found


def handout_words() -> str:
    """The handout's text as ``contract`` reads it, its whitespace folded: where an edge's words must occur."""
    return " ".join(" ".join(contract._plain(open(path, encoding="utf-8").read()).split())
                    for path in contract.tex_files())


def runs_of(number: str) -> list[tuple[str, object]]:
    """("public" or "hidden", run) of every input of check ``number``."""
    student_side()
    from checks.registry import public_checks
    from grader.hidden import HIDDEN
    public = [run for check in public_checks() if check.number == number for run in check.runs]
    return [("public", run) for run in public] + [("hidden", run) for run in HIDDEN.get(number, ())]


def caller(edge: Edge) -> tuple[str, object] | None:
    """The first input of the edge's check that calls it (public ones first)."""
    return next(((kind, run) for kind, run in runs_of(edge.check) if edge.calls(run)), None) if edge.check else None


def edge_problems() -> list[str]:
    words = handout_words()
    found = [f"edge ({edge.item}) {edge.says!r}: the handout no longer says it (edges.py)"
             for edge in EDGES if edge.says not in words]
    found += [f"edge ({edge.item}) {edge.says!r}: no input of check {edge.check} calls it"
              for edge in EDGES if edge.check and caller(edge) is None]
    found += [f"edge ({edge.item}) {edge.says!r}: no check, and no reason why" for edge in EDGES
              if not edge.check and not edge.why]
    return found


def edges_table() -> list[str]:
    lines = ["", "## Stated edges", "",
             "Every edge the handout states in words (Parts 1-4, the bonus and Part 5's functions; `edges.py`), "
             "and the input of a check that calls it (the first one, public inputs first).", "",
             "| item | the handout says | check | called by |", "|---|---|---|---|"]
    for edge in EDGES:
        found = caller(edge)
        called = f"{found[0]}: {found[1].label}" if found else f"none: {edge.why}"
        lines.append(f"| {edge.item} | {edge.says.replace('|', '/')} | {edge.check or '-'} | "
                     f"{called.replace('|', '/')} |")
    return lines


def problems() -> list[str]:
    """What keeps the table from being complete; empty when every item has a mutant caught where it should be
    and every stated edge is called by an input."""
    known = {item.label: item for item in items()}
    by_item = mutants_by_item()
    found = [f"mutant {sub.name}: VIOLATES {label!r} is no item of the handout (see COVERAGE.md)"
             for label, subs in by_item.items() if label not in known for sub in subs]
    found += [f"({item.label}) {item.title} ({item.where}): no mutant breaks it (add one: VIOLATES = "
              f"{item.label!r})" for item in contract.items() if item.label not in by_item]
    for label, subs in by_item.items():
        cited = set(known[label].checks) if label in known else set()
        found += [f"mutant {sub.name} breaks ({label}), whose checks are {sorted(cited)}, but CAUGHT_BY names only "
                  f"{sorted(sub.caught_by)}" for sub in subs if cited and not cited & set(sub.caught_by)]
    return found + edge_problems()


def table() -> str:
    by_item = mutants_by_item()
    lines = ["# Contract coverage (generated by `make coverage`: do not edit)", "",
             "Every item of the handout's contract, the checks that compare it (the handout's `[checks ...]`), and "
             "the self-test's mutants that break it alone, each with the checks that must catch it, naming the "
             "mistake (`autograder/selftest/mutants/`; `make mutants` grades them, CI every one). Items without "
             "numbers are functions whose `\\api` text is their contract; Q are Part 6's written questions.", "",
             "| item | what | checks | mutants (caught by) |", "|---|---|---|---|"]
    for item in items():
        mutants = "<br>".join(f"`{sub.name}` ({', '.join(sub.caught_by)})" for sub in by_item.get(item.label, []))
        lines.append(f"| {item.label} | {item.title.replace('|', '/')} | {', '.join(item.checks)} | "
                     f"{mutants or '**none**'} |")
    counted = [item for item in contract.items()]
    covered = sum(1 for item in counted if item.label in by_item)
    lines += ["", f"{covered} of {len(counted)} contract items have a mutant; "
              f"{sum(len(v) for v in by_item.values())} mutants in all."]
    lines += edges_table()
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    text = table()
    if "--write" in argv:
        with open(TABLE, "w", encoding="utf-8") as f:
            f.write(text)
    else:
        print(text)
    for problem in problems():
        print(f"coverage: {problem}", file=sys.stderr)
    return 1 if problems() else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
