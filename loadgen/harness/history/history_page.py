"""The history page: results/history/index.html (self-contained: the charts inlined as PNG) and index.md beside it, a
chart per scenario with its change points marked and annotated, the table of changes newest first (cause, commits,
what else changed), the paired `make versus` answers, and the notes (too few runs, series split by conditions)."""

from __future__ import annotations

import base64
import os
import tempfile
from html import escape
from pathlib import Path

from harness.history.adjustment import day_steps
from harness.history.changes import Discovery, SeriesChange
from harness.history.timeline import MACHINE, PairedPoint, Series

CHANGE_HEADER = [
    "at (first run after)",
    "server",
    "scenario",
    "run",
    "metric",
    "before",
    "after",
    "change",
    "confidence",
    "cause",
    "commits in the server's folder / what else changed",
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


def change_rows(changes: list[SeriesChange]) -> list[list[str]]:
    if not changes:
        return [["none found"] + [""] * (len(CHANGE_HEADER) - 1)]
    return [
        [
            c.at,
            c.server,
            c.scenario,
            c.run,
            c.metric,
            f"{c.before:,.4g}",
            f"{c.after:,.4g}",
            f"{c.change_percent:+.1f} %",
            f"{c.confidence:.1%}",
            c.cause,
            "; ".join(c.commits or c.conditions_changed) or "-",
        ]
        for c in changes
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
    drawn = {name: history_charts.scenario_chart(name, group, changes, order) for name, group in sorted(groups.items())}
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


def write(
    runs: list[str],
    found: tuple[list[Series], list[SeriesChange], list[PairedPoint]],
    notes: list[str],
    folder: Path,
    discovery: Discovery,
) -> list[Path]:
    """index.html and index.md in `folder` for the runs read, their (series, changes, paired answers) and how the
    changes were kept; returns their paths."""
    series, changes, paired = found
    folder.mkdir(parents=True, exist_ok=True)
    intro = (
        f"{len(runs)} runs ({', '.join(runs)}); {len(changes)} changes found by E-divisive means with a "
        "permutation test (Matteson & James 2014; 5 %, 199 permutations, more where a series passes) on the log "
        f"of each figure, {discovery.sentence()}; cause `machine`: most servers (or the machine's own probe) "
        "changed at that run, `server`: that server alone, after a commit that changed its code (not only its notes), "
        "`unexplained`: that server alone, with no such commit."
    )
    drawn = charts(series, changes, paired)
    html = [
        f"<!doctype html><meta charset='utf-8'><title>History</title><style>{STYLE}</style><h1>History</h1>",
        f"<p>{escape(intro)}</p>",
        "<ul>" + "".join(f"<li>{escape(n)}</li>" for n in notes) + "</ul>",
        "<h2>Changes, newest first</h2>",
        _table(CHANGE_HEADER, change_rows(changes)),
    ]
    if paired:
        html += ["<h2>make versus: paired answers</h2>", _table(PAIRED_HEADER, paired_rows(paired))]
    steps = step_rows(series)
    if steps:
        html += [f"<h2>Run to run, beside the machine</h2><p>{escape(STEPS_NOTE)}</p>", _table(STEP_HEADER, steps)]
    for name, png in drawn.items():
        html.append(
            f"<h2>{escape(name)}</h2><img alt='{escape(name)}' "
            f"src='data:image/png;base64,{base64.b64encode(png).decode()}'>"
        )
    md = [
        "# History",
        "",
        intro,
        "",
        *(f"- {n}" for n in notes),
        "",
        "## Changes, newest first",
        "",
        _markdown_table(CHANGE_HEADER, change_rows(changes)),
        "",
    ]
    if paired:
        md += ["## make versus: paired answers", "", _markdown_table(PAIRED_HEADER, paired_rows(paired)), ""]
    if steps:
        md += ["## Run to run, beside the machine", "", STEPS_NOTE, "", _markdown_table(STEP_HEADER, steps), ""]
    md += ["Charts per scenario: index.html."]
    write_atomically(folder / "index.html", "\n".join(html))
    write_atomically(folder / "index.md", "\n".join(md) + "\n")
    return [folder / "index.html", folder / "index.md"]


def write_atomically(path: Path, text: str) -> None:
    """`text` into `path` through a temporary file beside it, renamed over it: a reader (or a second make history)
    sees the old file or the new one, never half of one."""
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(text)
        os.chmod(temporary, 0o644)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
