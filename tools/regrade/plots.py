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


def failed_everything(data: dict | None) -> bool:
    """A grading in which every check failed (the stubs, an empty or unreadable upload): counted apart, since
    it says nothing about any one check."""
    tests = [t for t in (data or {}).get("tests") or [] if re.fullmatch(r"[1-9A-Z]\.\d+h?", check_key(t))]
    return not tests or all(t.get("status") != "passed" for t in tests)


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
MOST_FAILED = 10  # the checks named in failures.png's lower panel


def plot_failures(path: str, results: dict[str, dict | None], label: str) -> str:
    """One screen (1200 x 800): above, a bar per check, grouped and coloured by part, the share of submissions
    failing its public inputs (solid) and, on top, those that pass them but fail its hidden ones (hatched);
    below, the most failed checks by name. Submissions that failed every check are counted apart (title)."""
    plt = pyplot()
    from matplotlib.patches import Patch
    from matplotlib.ticker import PercentFormatter
    everything = [sid for sid, data in results.items() if failed_everything(data)]
    rest = {sid: data for sid, data in results.items() if sid not in everything}
    rows = check_failures(rest)
    parts = list(dict.fromkeys(number.split(".")[0] for number, *_ in rows))
    colour = {part: PART_COLOURS[i % len(PART_COLOURS)] for i, part in enumerate(parts)}
    fig = plt.figure(figsize=(12, 8))
    top = fig.add_axes((0.06, 0.46, 0.92, 0.42))  # placed by hand: the lower panel's long names need a margin of
    bottom = fig.add_axes((0.42, 0.05, 0.50, 0.30))  # their own, which the upper panel must not share
    x, position = [], 0.0
    for i, (number, *_) in enumerate(rows):  # a gap between parts
        position += 0.8 if i and number.split(".")[0] != rows[i - 1][0].split(".")[0] else 0.0
        x.append(position)
        position += 1.0
    public = [p / g if g else 0 for _, _, p, _, g in rows]
    hidden = [h / g if g else 0 for _, _, _, h, g in rows]
    colours = [colour[number.split(".")[0]] for number, *_ in rows]
    top.bar(x, public, color=colours, width=0.8)
    top.bar(x, hidden, bottom=public, color="white", edgecolor=colours, hatch="////", linewidth=0.8, width=0.8)
    top.set_xticks(x, [number for number, *_ in rows], rotation=90, fontsize=8)
    for tick, c in zip(top.get_xticklabels(), colours, strict=True):
        tick.set_color(c)
    top.set_xlim(-0.8, position)
    top.set_ylim(0, 1.05)
    top.yaxis.set_major_formatter(PercentFormatter(1.0))
    top.set_ylabel("submissions failing")
    names = {p: f"Part {p}" if p.isdigit() else f"Bonus {p}" for p in parts}
    top.legend(handles=[Patch(color=colour[p], label=names[p]) for p in parts]
               + [Patch(facecolor="white", edgecolor="grey", hatch="////", label="passes public, fails hidden")],
               loc="upper left", fontsize=8, ncol=5)
    worst = sorted([r for r in rows if r[2] + r[3]], key=lambda r: -(r[2] + r[3]) / max(r[4], 1))[:MOST_FAILED]
    y = list(range(len(worst)))
    bottom.barh(y, [(p + h) / g for _, _, p, h, g in worst], color=[colour[r[0].split(".")[0]] for r in worst])
    bottom.set_yticks(y, [f"{number}  {name[:62]}" for number, name, *_ in worst], fontsize=8)
    for i, (_, _, p, h, g) in enumerate(worst):
        bottom.text((p + h) / g + 0.01, i, f"{p + h}/{g}" + (f" ({h} hidden only)" if h else ""), va="center",
                    fontsize=8)
    bottom.set_ylim(max(len(worst), 1) - 0.5, -0.5)
    bottom.set_xlim(0, 1.25)
    bottom.xaxis.set_major_formatter(PercentFormatter(1.0))
    bottom.set_title(f"The {len(worst)} most failed checks" if worst else "No check failed", fontsize=10)
    failing = sum(1 for _, _, p, h, _ in rows if p + h)
    apart = (f" (and {len(everything)} that failed every check, counted apart: the stubs, or an upload the grader "
             "could not read)" if everything else "")
    top.set_title(f"Failures per check, {label}\n{len(rest)} submission(s){apart}: {failing} of {len(rows)} checks "
                  "failed by at least one", fontsize=10)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def plot_old_vs_new(path: str, old: dict[str, dict | None], new: dict[str, dict | None], old_label: str,
                    new_label: str) -> str:
    """Each submission's change of score (new - old) against its old score: the scale is the changes', so a
    change of 2 points stands out; every changed submission is labelled with its id and change."""
    plt = pyplot()
    both = [sid for sid in new if sid in old and old[sid] is not None and new[sid] is not None]
    moved = {c.id for c in changes(old, new)}
    fig, ax = plt.subplots(figsize=(11, 6))
    deltas = {s: total(new[s]) - total(old[s]) for s in both}
    reach = max([1.0] + [abs(d) for d in deltas.values()]) * 1.25
    ax.axhline(0, color="#999999", linewidth=1, zorder=1)
    for group, color, name in ((False, "#4878a8", "same score"), (True, "#c0504d", "changed")):
        points = [(total(old[s]), deltas[s]) for s in both if (s in moved) == group]
        if points:
            ax.scatter(*zip(*points, strict=True), color=color, label=f"{name} ({len(points)})", zorder=2,
                       alpha=0.8, s=40 if group else 20)
    for s in sorted(moved & set(both), key=lambda s: -abs(deltas[s]))[:25]:
        ax.annotate(f"{s}: {deltas[s]:+g}", (total(old[s]), deltas[s]), textcoords="offset points", xytext=(5, 5),
                    fontsize=8, color="#c0504d")
    top = max([full_marks()] + [total(old[s]) for s in both])
    ax.set(xlim=(-2, top + 2), ylim=(-reach, reach), xlabel="old score",
           ylabel="new score - old score (points)",
           title=f"Change of score per submission, {len(moved)} of {len(both)} changed\nold: {old_label}\n"
                 f"new: {new_label}")
    ax.legend(loc="upper left", fontsize=8)
    ax.title.set_fontsize(10)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path
