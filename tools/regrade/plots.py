"""The plots (matplotlib, no display): scores.png, failures.png, old_vs_new.png."""

from __future__ import annotations

import re

from .batch import entry_point
from .table import changes, check_key, check_order, total


def pyplot():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def full_marks() -> float:
    """Every point this tree's checks give, bonus included (the plots' axes end there)."""
    return entry_point().expected_score("full")


def plot_scores(path: str, results: dict[str, dict | None], label: str) -> str:
    plt = pyplot()
    scores = [total(d) for d in results.values()]
    top = max([full_marks()] + scores)
    fig, ax = plt.subplots(figsize=(8, 4.5))
    ax.hist(scores, bins=22, range=(0, top), color="#4878a8", edgecolor="white")
    ax.set(xlabel="score", ylabel="submissions", title=f"Scores of {len(scores)} submission(s), {label}")
    ax.yaxis.get_major_locator().set_params(integer=True)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def check_failures(results: dict[str, dict | None]) -> list[tuple[str, str, int, int, int]]:
    """Per check (its public and hidden entries together), in the grader's order: (number, name, submissions
    failing its public inputs, submissions failing only its hidden ones, submissions graded on it)."""
    rows = []
    for number, name in check_order(results):
        if number.endswith("h") or not re.fullmatch(r"[1-9A-Z]\.\d+", number):  # a hidden twin; the integrity report
            continue
        public = hidden_only = graded = 0
        for data in results.values():
            status = {check_key(t): t.get("status") for t in (data or {}).get("tests") or []}
            if number not in status:
                continue
            graded += 1
            if status[number] != "passed":
                public += 1
            elif status.get(number + "h", "passed") != "passed":
                hidden_only += 1
        rows.append((number, re.sub(r"^(Part \d|Bonus [A-Z]): ", "", name), public, hidden_only, graded))
    return rows


PART_COLOURS = ("#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#b6992d", "#b07aa1", "#9c755f")


def plot_failures(path: str, results: dict[str, dict | None], label: str) -> str:
    """One bar per check, grouped and coloured by part: the share of submissions failing its public inputs
    (solid) and, on top, those that pass them but fail its hidden inputs (hatched)."""
    import textwrap
    plt = pyplot()
    from matplotlib.patches import Patch
    from matplotlib.ticker import PercentFormatter
    rows = check_failures(results)
    parts = list(dict.fromkeys(number.split(".")[0] for number, *_ in rows))
    colour = {part: PART_COLOURS[i % len(PART_COLOURS)] for i, part in enumerate(parts)}
    labels = ["\n".join(textwrap.wrap(f"{number}  {name}", 52, max_lines=2, placeholder=" ...")) or number
              for number, name, *_ in rows]
    fig, ax = plt.subplots(figsize=(10, 1.6 + 0.36 * len(rows)))
    y = list(range(len(rows)))
    public = [p / g if g else 0 for _, _, p, _, g in rows]
    hidden = [h / g if g else 0 for _, _, _, h, g in rows]
    colours = [colour[number.split(".")[0]] for number, *_ in rows]
    ax.barh(y, public, color=colours)
    ax.barh(y, hidden, left=public, color="white", edgecolor=colours, hatch="////", linewidth=0.8)
    for i, (_, _, p, h, g) in enumerate(rows):
        ax.text(public[i] + hidden[i] + 0.01, i, f"{p + h}/{g}" if p + h else "", va="center", fontsize=8)
    ax.set_yticks(y, labels, fontsize=8)
    for tick, c in zip(ax.get_yticklabels(), colours, strict=True):
        tick.set_color(c)
    ax.set_ylim(len(rows) - 0.5, -0.5)  # the grader's order, Part 1 on top; no empty margin
    ax.set_xlim(0, 1.1)
    ax.xaxis.set_major_formatter(PercentFormatter(1.0))
    names = {p: f"Part {p}" if p.isdigit() else f"Bonus {p}" for p in parts}
    ax.legend(handles=[Patch(color=colour[p], label=names[p]) for p in parts]
              + [Patch(facecolor="white", edgecolor="grey", hatch="////", label="passes public, fails hidden")],
              loc="lower right", fontsize=8, ncol=2)
    failing = sum(1 for _, _, p, h, _ in rows if p + h)
    ax.set(xlabel="submissions failing the check",
           title=f"Failures per check, {label}\n{len(results)} submission(s); {failing} of {len(rows)} checks "
                 "failed by at least one")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def plot_old_vs_new(path: str, old: dict[str, dict | None], new: dict[str, dict | None], old_label: str,
                    new_label: str) -> str:
    plt = pyplot()
    both = [sid for sid in new if sid in old]
    moved = {c.id for c in changes(old, new)}
    fig, ax = plt.subplots(figsize=(5.5, 5.5))
    top = max([full_marks()] + [total(new[s]) for s in both] + [total(old[s]) for s in both])
    ax.plot([0, top], [0, top], color="#999999", linewidth=1, zorder=1)
    for group, color, name in ((False, "#4878a8", "same"), (True, "#c0504d", "changed")):
        points = [(total(old[s]), total(new[s])) for s in both if (s in moved) == group]
        if points:
            ax.scatter(*zip(*points, strict=True), color=color, label=f"{name} ({len(points)})", zorder=2, alpha=0.7)
    ax.set(xlim=(-2, top + 2), ylim=(-2, top + 2), xlabel=f"old score ({old_label})",
           ylabel=f"new score ({new_label})", title="Old vs new grader, per submission")
    ax.legend(loc="upper left")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
