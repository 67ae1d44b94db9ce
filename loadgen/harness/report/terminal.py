"""The console table at the end of a run, one more export of the report model: records kept out of the ranking
(harness.results.flag_kinds.kept_out) first, each with its reasons, then per scenario and run nginx, the ceiling, and
the ranked records in the model's ranking (harness.judging.ranking; each rank the range of places its interval allows, "1–5",
lower bounds as "≥", flags beside)."""

from __future__ import annotations

from rich import box
from rich.console import JustifyMethod
from rich.markup import escape
from rich.table import Table

from harness.basics.formats import fmt_level, fmt_ms, fmt_rate
from harness.report.cells import cost_text, cpu, errors_text, latency, peak_rss, rps_text, summary
from harness.report.model import Model, rps_of
from harness.report.overview import Cell, Overview
from harness.results import flag_kinds
from harness.results.records import Record

SEVERE = tuple(k.name for k in flag_kinds.ALL if k.severe)  # a record flagged so is shown red, otherwise yellow
COLUMNS: tuple[tuple[str, JustifyMethod], ...] = (
    ("", "left"),
    ("server", "left"),
    ("scenario", "left"),
    ("run", "left"),
    ("req/s", "right"),
    ("interval", "right"),
    ("CV", "right"),
    ("µs/req", "right"),
    ("p50 ms", "right"),
    ("p99 ms", "right"),
    ("errors", "right"),
    ("srv CPU", "right"),
    ("lg CPU", "right"),
    ("RSS MB", "right"),
    ("flags", "left"),
)


def _cv(r: Record) -> str:
    s = summary(r).rps
    if not s:
        return "-"
    return "n=1" if s.get("cv") is None else f"{s['cv']:.1%}"


def _interval(r: Record) -> str:
    ci = (summary(r).rps or {}).get("ci")
    if not ci or ci["low"] == ci["high"]:
        return "-"
    return f"{fmt_rate(ci['low'])}–{fmt_rate(ci['high'])} {fmt_level(ci['level']).replace(' ', '')}"


def _percent(value: float | None) -> str:
    return "-" if value is None else f"{value * 100:.0f}%"


def _rss(r: Record) -> str:
    value = peak_rss(r)
    return "-" if value is None else f"{value:,.0f}"


def rows(model: Model) -> tuple[list[tuple[str, Record]], list[tuple[str, str, Record]]]:
    """(flagged, clean) as (group label, record) and (mark, group label, record): flagged by scenario and run, req/s
    descending; clean by scenario and run, nginx first, then the others by rank."""
    flagged, clean = [], []
    for scenario in model.scenarios:
        for group in scenario.groups:
            ceiling = [group.ceiling] if group.ceiling else []
            flagged += [
                (group.run, r)
                for r in sorted([r for r in ceiling if not r.ranked] + group.flagged, key=rps_of, reverse=True)
            ]
            clean += [("ceil", group.run, r) for r in ceiling if r.ranked]
            clean += [(s.label, group.run, s.record) for s in group.ranked]
    return flagged, clean


def table(model: Model, title: str = "") -> Table:
    """`model` of a run whose flags are evaluated."""
    flagged, clean = rows(model)
    out = Table(title=title or None, title_justify="left")
    for column, justify in COLUMNS:
        out.add_column(column, justify=justify, overflow="fold")

    def add(r: Record, mark: str, run: str, style: str | None, note: str) -> None:
        rps = rps_text(r) if r.rps is not None else "failed"
        out.add_row(
            mark,
            r.server,
            r.scenario,
            run,
            rps,
            _interval(r),
            _cv(r),
            cost_text(r),
            fmt_ms(latency(r, "p50")),
            fmt_ms(latency(r, "p99")),
            errors_text(r),
            _percent(cpu(r, "server")),
            _percent(cpu(r, "loadgen")),
            _rss(r),
            note,
            style=style,
        )

    for run, r in flagged:
        reasons = "; ".join(f"{f.name}: {f.reason}" for f in r.flags)
        add(r, "⚑", run, "red" if any(f.name in SEVERE for f in r.flags) else "yellow", reasons)
    if flagged and clean:
        out.add_section()
    for mark, run, r in clean:
        explained = "; ".join(f"{f.name}: {f.reason}" for f in r.flags)
        if mark == "ceil":
            add(r, mark, run, "dim", f"{explained or 'clean'} ({r.server}: the ceiling)")
        else:
            add(
                r,
                mark,
                run,
                "yellow" if r.flags else None,
                explained or ("clean, place a range" if "–" in mark else "clean"),
            )
    return out


def _matrix_cell(cell: Cell) -> str:
    """A cell in rich's markup: bold where tied for first, red where kept out, ⚑ where flagged."""
    if cell.record is None:
        return "[dim]·[/dim]"
    if cell.kept_out:
        return f"[red]{escape(cell.text)}[/red]"
    text = escape(cell.text) + (" [yellow]⚑[/yellow]" if cell.flags else "")
    return f"[bold]{text}[/bold]" if cell.tied else text


def matrix_table(overview: Overview, width: int = 200) -> Table:
    """The matrix of servers × scenario runs (overview.py), the last thing a run or `make report` prints: each cell
    the server's req/s over its column's best, bold where tied for first; the ceiling last, dim."""
    out = Table(
        title="Every server, scenario by scenario: req/s ÷ the column's best · places where shared",
        title_justify="left",
        caption="bold: tied for first · ≥ a lower bound · ⚑ flagged · out: kept out (report.html: why)",
        caption_justify="left",
        box=box.SIMPLE_HEAD,
        pad_edge=False,
    )
    rows = overview.rows + overview.ceilings
    longest = [max([len(r.cells[i].text) + 2 for r in rows] + [4]) for i in range(len(overview.columns))]
    mean = max(len(r.mean_text(overview.complete)) for r in rows)
    # each cell whole on one line where the console has the room (leaving 12 for the compliance text, which folds),
    # else every column folds: a narrow console wraps the cells, it never drops a column
    whole = 8 + mean + sum(longest) + 3 * (len(longest) + 2) + 12 * overview.probed <= width
    out.add_column("server", overflow="fold", min_width=8 if whole else None)
    out.add_column("all", justify="right", min_width=mean if whole else None)
    for column, longest_cell in zip(overview.columns, longest):
        out.add_column(
            f"{column.scenario}\n{column.run}",
            justify="right",
            overflow="fold",
            min_width=longest_cell if whole else None,
        )
    if overview.probed:
        out.add_column("compliance", overflow="fold", ratio=1, min_width=12)
    for row in rows:
        name = row.server + (f" (+{row.twin})" if row.twin else "") + (" (ceiling)" if row.ceiling else "")
        cells = [escape(name), escape(row.mean_text(overview.complete))] + [_matrix_cell(c) for c in row.cells]
        out.add_row(
            *cells, *([escape(row.compliance)] if overview.probed else []), style="dim" if row.ceiling else None
        )
    return out
