"""The history page: results/history/index.html (self-contained: the charts inlined as PNG) and index.md beside it, a
chart per scenario with its change points marked and annotated, the table of changes newest first (cause, commits,
what else changed), the paired `make versus` answers, and the notes (too few runs, series split by conditions)."""

from __future__ import annotations

import base64
import functools
from html import escape
from pathlib import Path

from harness.basics.parallel import in_processes
from harness.history.adjustment import day_steps
from harness.history.changes import Discovery, Seen, SeriesChange, events, spread
from harness.history.run_cache import write_atomically
from harness.history.timeline import MACHINE, PairedPoint, Series

Section = tuple[str, str, list[str], list[list[str]]]
CHANGE_HEADER = [
    "at (first run after)",
    "server",
    "scenario",
    "run",
    "tool, load",
    "metric",
    "before",
    "after",
    "own change (95 % interval)",
    "q",
    "cause",
    "the machine's part at that run",
    "commits that changed its inputs / what else changed",
]
EVENT_HEADER = ["at (first run after)", "cause", "groups moved", "their sizes", "what changed (harness)"]
SEEN_HEADER = [
    "server",
    "scenario",
    "run",
    "metric",
    "tool, load",
    "runs",
    "smallest change found at 80 % power (mid-series)",
    "(in the last 3 runs)",
    "between runs, beyond the intervals",
]
PAIRED_HEADER = [
    "run",
    "server",
    "scenario",
    "run label",
    "metric",
    "head ÷ base",
    "interval",
    "verdict",
    "base → head",
]


def own_sentence(c: SeriesChange) -> str:
    """One server's own change in a line: where, how much with its interval, q, the cause and its evidence."""
    return (
        f"{c.at} {c.server} {c.scenario} {c.run} {c.metric}: its own {c.size()}, q {c.q_value:.2g}, {c.cause}"
        + (f"; {c.machine_part}" if c.machine_part else "")
        + (f"; commits: {'; '.join(c.commits)}" if c.commits else "")
    )


def change_rows(changes: list[SeriesChange]) -> list[list[str]]:
    own = [c for c in changes if c.kind == "own"]
    if not own:
        return [["none found"] + [""] * (len(CHANGE_HEADER) - 1)]
    return [
        [
            c.at,
            c.server,
            c.scenario,
            c.run,
            ", ".join(filter(None, (c.tool, c.load))),
            c.metric,
            f"{c.before:,.4g}",
            f"{c.after:,.4g}",
            c.size(),
            f"{c.q_value:.2g}",
            c.cause,
            c.machine_part or "-",
            "; ".join(c.commits or c.conditions_changed) or "-",
        ]
        for c in own
    ]


def event_rows(changes: list[SeriesChange]) -> list[list[str]]:
    return [
        [at, cause, str(len(members)), spread(members), "; ".join(members[0].commits or members[0].conditions_changed)]
        for at, cause, members in events(changes)
    ]


def seen_rows(seen: list[Seen]) -> list[list[str]]:
    return [
        [
            s.server,
            *s.group[:3],
            ", ".join(filter(None, s.group[4:6])),
            str(s.runs),
            f"±{s.detectable:.1f} %",
            f"±{s.detectable_end:.1f} %",
            f"{s.between:.1f} %",
        ]
        for s in seen
    ]


def paired_rows(paired: list[PairedPoint]) -> list[list[str]]:
    return [
        [
            p.run.run_id,
            p.server,
            p.scenario,
            p.label,
            p.metric,
            f"{p.ratio:.3f}",
            f"{p.low:.3f}–{p.high:.3f}",
            p.verdict,
            f"{p.base} → {p.head}",
        ]
        for p in paired
    ]


STEP_HEADER = ["from", "to", "server", "req/s ratio (median of its series)", "machine (pure-CPU stand-in)", "÷ machine"]


def step_rows(series: list[Series]) -> list[list[str]]:
    return [
        [s.before, s.after, s.server, f"{s.ratio:.2f}×", f"{s.machine:.2f}×", f"{s.beyond_machine:.2f}×"]
        for s in day_steps(series)
    ]


def _order(series: list[Series], paired: list[PairedPoint]) -> dict[str, int]:
    """Run id -> position on the time axis, oldest first."""
    runs = {p.run.run_id: p.run.started_at for s in series for p in s.points}
    runs.update({p.run.run_id: p.run.started_at for p in paired})
    return {run: i for i, run in enumerate(sorted(runs, key=lambda r: (str(runs[r] or ""), r)))}


def charts(series: list[Series], changes: list[SeriesChange], paired: list[PairedPoint]) -> dict[str, bytes]:
    """Scenario (and `machine speed`, `make versus`) -> PNG."""
    from harness.history import history_charts  # matplotlib, loaded only when the page is drawn

    order = _order(series, paired)
    groups: dict[str, list[Series]] = {}
    for s in series:
        groups.setdefault("machine speed" if s.server == MACHINE else s.scenario, []).append(s)
    names = sorted(groups)
    pieces = [functools.partial(history_charts.scenario_chart, name, groups[name], changes, order) for name in names]
    drawn = dict(zip(names, in_processes(pieces)))  # a chart of 200 runs takes most of a second
    if paired:
        drawn["make versus"] = history_charts.paired_chart(paired, order)
    return drawn


def _table(header: list[str], rows: list[list[str]]) -> str:
    head = "".join(f"<th>{escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{escape(cell)}</td>" for cell in row) + "</tr>" for row in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def _markdown_table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in rows]
    return "\n".join(lines)


STEPS_NOTE = (
    "Each server's req/s from one run to the next (the median ratio over its scenario runs but the pure-CPU "
    "one), the machine's part (the other servers' pure-CPU high-compute ratio) and what is left: a short "
    "history's reading, no test (harness.history.adjustment)."
)
STYLE = (
    "body{font-family:system-ui,sans-serif;margin:2em;max-width:1200px}table{border-collapse:collapse;"
    "font-size:13px}td,th{border:1px solid #ddd;padding:3px 6px;text-align:left}img{max-width:100%}"
)


INTRO = (
    "Two questions, two series: per scenario run, tool, load and metric, the machine's common series (what every "
    "server's figure did at that run: a two-way median fit) and each server's own (its figure relative to the other "
    "servers' at the same run). A change is located where the weighted means before and after differ most (each run "
    "weighed by its interval plus the variance between runs), confirmed against series drawn with no change (the "
    "location's choice included), with at least 3 runs on each side and at least 5 % (p99 10 % or a unit), a 1-2-run "
    "dip an episode; kept at a false-discovery rate of 5 % over the page (q). Cause: `server`, a commit changed its "
    "inputs (folder, shared modules, lock files; not notes, docs, tests or comments) or its version changed; "
    "`harness`, the harness or environment changed; `machine`, the common series moved; `unexplained`, nothing "
    "recorded changed."
)


def sections(found: tuple[list[Series], list[SeriesChange], list[PairedPoint]], seen: list[Seen]) -> list[Section]:
    """The page's tables: (title, note, header, rows), those with rows."""
    series, changes, paired = found
    out = [
        ("Servers' own changes, newest first", "", CHANGE_HEADER, change_rows(changes)),
        ("The machine's changes (each an event over every group it moved)", "", EVENT_HEADER, event_rows(changes)),
        ("make versus: paired answers", "", PAIRED_HEADER, paired_rows(paired)),
        ("Run to run, beside the machine", STEPS_NOTE, STEP_HEADER, step_rows(series)),
        ("What the page could not see", SEEN_NOTE, SEEN_HEADER, seen_rows(seen)),
    ]
    return [section for section in out if section[3]]


SEEN_NOTE = (
    "Per series tested, the smallest change it would find 80 % of the time with the runs and noise it has (at its "
    "own 5 % level; the page's false-discovery control asks a little more): a change mid-series, and one in its last "
    "3 runs. The machine's common series are the rows named machine."
)


def write(
    runs: list[str],
    found: tuple[list[Series], list[SeriesChange], list[PairedPoint]],
    notes: list[str],
    folder: Path,
    kept: tuple[Discovery, list[Seen]],
) -> list[Path]:
    """index.html and index.md in `folder` for the runs read, their (series, changes, paired answers), how the
    changes were kept and what each series could see; returns their paths."""
    discovery, seen = kept
    folder.mkdir(parents=True, exist_ok=True)
    intro = f"{len(runs)} runs ({', '.join(runs)}); {discovery.sentence()}. {INTRO}"
    drawn = charts(*found)
    html = [
        f"<!doctype html><meta charset='utf-8'><title>History</title><style>{STYLE}</style><h1>History</h1>",
        f"<p>{escape(intro)}</p>",
        "<ul>" + "".join(f"<li>{escape(n)}</li>" for n in notes) + "</ul>",
    ]
    md = ["# History", "", intro, "", *(f"- {n}" for n in notes), ""]
    for title, note, header, rows in sections(found, seen):
        html += [f"<h2>{escape(title)}</h2>", f"<p>{escape(note)}</p>" if note else "", _table(header, rows)]
        md += [f"## {title}", "", *([note, ""] if note else []), _markdown_table(header, rows), ""]
    for name, png in drawn.items():
        html.append(
            f"<h2>{escape(name)}</h2><img alt='{escape(name)}' "
            f"src='data:image/png;base64,{base64.b64encode(png).decode()}'>"
        )
    md += ["Charts per scenario: index.html."]
    write_atomically(folder / "index.html", "\n".join(html))
    write_atomically(folder / "index.md", "\n".join(md) + "\n")
    return [folder / "index.html", folder / "index.md"]
