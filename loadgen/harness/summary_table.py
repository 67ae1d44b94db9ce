"""The console table at the end of a run: flagged records first, each with its reasons, then the clean ones ranked per
scenario and run by the report's ranking (harness.report.model.rank: ordered only where the req/s intervals do not
overlap, ties shown as "=2"), nginx, the ceiling, on top of its group."""
from __future__ import annotations

from rich.table import Table

from harness import flags as flag_rules
from harness import stats
from harness.report.model import errors_text, rank, rank_label
from harness.stats import fmt_ms, fmt_rate


def _cv(record: dict) -> str:
    s = stats.summary_of(record).get("rps")
    if not s:
        return "-"
    return "n=1" if s.get("cv") is None else f"{s['cv']:.1%}"


def _interval(record: dict) -> str:
    ci = (stats.summary_of(record).get("rps") or {}).get("ci")
    if not ci or ci["low"] == ci["high"]:
        return "-"
    return f"{fmt_rate(ci['low'])}–{fmt_rate(ci['high'])} {stats.fmt_level(ci['level']).replace(' ', '')}"


def _cpu(record: dict, role: str) -> str:
    value = flag_rules.utilization(record, role)
    return "-" if value is None else f"{value * 100:.0f}%"


def _rss(record: dict) -> str:
    value = ((record.get("samples") or {}).get("server") or {}).get("peak_rss_mb")
    return "-" if value is None else f"{value:,.0f}"


def ordered(records: list[dict]) -> tuple[list[dict], list[dict]]:
    """(flagged, clean): flagged by scenario and run; clean by scenario, run, then nginx first and the others by rank
    (`harness.report.model.rank`, which sets their "_rank" and "_rank_label"), req/s descending within a rank."""
    scenario_order: dict[str, int] = {}
    run_order: dict[tuple[str, str], int] = {}
    for r in records:
        scenario_order.setdefault(r["scenario"], len(scenario_order))
        run_order.setdefault((r["scenario"], r.get("run", "")), len(run_order))

    def place(r):
        return scenario_order[r["scenario"]], run_order[(r["scenario"], r.get("run", ""))]

    flagged = sorted((r for r in records if r.get("flags")), key=lambda r: (place(r), -(r.get("rps") or 0)))
    groups: dict[tuple[int, int], list[dict]] = {}
    for r in records:
        if not r.get("flags"):
            groups.setdefault(place(r), []).append(r)
    clean = []
    for key in sorted(groups):
        group = groups[key]
        clean += [r for r in group if r["server"] == flag_rules.CEILING_SERVER]
        clean += rank([r for r in group if r["server"] != flag_rules.CEILING_SERVER])
    return flagged, clean


def flags_table(records: list[dict], title: str = "") -> Table:
    """Records must have been through flags.evaluate (they carry "flags")."""
    flagged, clean = ordered(records)
    table = Table(title=title or None, title_justify="left")
    for column, justify in (("", "left"), ("server", "left"), ("scenario", "left"), ("run", "left"), ("req/s", "right"),
                            ("interval", "right"), ("CV", "right"), ("p50 ms", "right"), ("p99 ms", "right"), ("errors", "right"),
                            ("srv CPU", "right"), ("lg CPU", "right"), ("RSS MB", "right"), ("flags", "left")):
        table.add_column(column, justify=justify, overflow="fold")

    def add(r: dict, mark: str, style: str | None, note: str) -> None:
        lat = r.get("latency_ms") or {}
        rps = fmt_rate(r.get("rps")) if r.get("rps") is not None else "failed"
        table.add_row(mark, r["server"], r["scenario"], r.get("run", ""), rps, _interval(r), _cv(r), fmt_ms(lat.get("p50")),
                      fmt_ms(lat.get("p99")), errors_text(r), _cpu(r, "server"), _cpu(r, "loadgen"), _rss(r), note,
                      style=style)

    for r in flagged:
        reasons = "; ".join(f"{f['flag']}: {f['reason']}" for f in r["flags"])
        add(r, "⚑", "red" if any(f["flag"] in ("errors", "failed", "contract-failed") for f in r["flags"]) else "yellow",
            reasons)
    if flagged and clean:
        table.add_section()
    for r in clean:
        if r["server"] == flag_rules.CEILING_SERVER:
            add(r, "ceil", "dim", "clean (nginx: the ceiling)")
            continue
        label = rank_label(r)
        add(r, label, None, "clean, tied" if label.startswith("=") else "clean")
    return table
