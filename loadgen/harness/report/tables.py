"""The report's tables as rows of text, built once for every markup exporter (markdown.py, html.py), in the manner of
hyperfine's markup exporters: a measurement's table (its ceiling, its ranked records, those kept out), a scenario's
req/s matrix (with h2c ÷ HTTP/1.1 where it has both) and an open-model scenario's capacity and steps. An exporter renders the cells and may dress some of them (html.py: colour swatches, CPU bars, flag
badges) by their column key."""

from __future__ import annotations

from dataclasses import dataclass

from harness.basics.formats import fmt_ms, fmt_rate
from harness.report.cells import (
    attempts_text,
    capacity_text,
    cost_interval_text,
    cost_text,
    cpu_text,
    cv_text,
    errors_text,
    flag_names,
    latency,
    rps_interval,
    rps_text,
    rss_text,
)
from harness.report.model import Group, Model, ScenarioView
from harness.report.overview import best_of, ratio_text
from harness.results import flag_kinds
from harness.results.records import Record

# (header, key) of a measurement's table, in order
COLUMNS = [
    ("#", "rank"),
    ("server", "server"),
    ("req/s", "rps"),
    ("interval (level)", "interval"),
    ("CV", "cv"),
    ("÷ best", "of_best"),
    ("µs/req", "cost"),
    ("µs/req interval", "cost_interval"),
    ("p50 ms", "p50"),
    ("p99 ms", "p99"),
    ("p99 CV", "p99_cv"),
    ("errors", "errors"),
    ("server CPU", "server_cpu"),
    ("loadgen CPU", "loadgen_cpu"),
    ("server RSS", "rss"),
    ("attempts (req/s)", "attempts"),
    ("compliance", "compliance"),
    ("flags", "flags"),
]
HEADER = [h for h, _ in COLUMNS]
KEYS = [k for _, k in COLUMNS]
BY_COST_NOTE = (
    "≥: the load generator was the limit; where such intervals overlap, the server CPU per request "
    "(µs/req) orders the servers"
)
KEPT_OUT_TITLE = f"kept out of the ranking: {flag_kinds.kept_out()}"


@dataclass
class Row:
    record: Record
    rank: str  # "1", "1–5" (a range of places), "ceiling", "⚑"
    kind: str  # "ceiling", "ranked" or "flagged"
    compliance: str = "-"  # the server's probe score (report/compliance.py), "-" where the run did not probe it
    best: float | None = None  # the group's best figure (overview.best_of): the matrix's ratio is over it

    @property
    def cells(self) -> dict[str, str]:
        r = self.record
        return {
            "rank": self.rank,
            "server": r.server,
            "rps": rps_text(r) if r.rps is not None else "failed",
            "interval": rps_interval(r),
            "cv": cv_text(r),
            "of_best": ratio_text(r, self.best),
            "cost": cost_text(r),
            "cost_interval": cost_interval_text(r),
            "p50": fmt_ms(latency(r, "p50")),
            "p99": fmt_ms(latency(r, "p99")),
            "p99_cv": cv_text(r, "p99"),
            "errors": errors_text(r),
            "server_cpu": cpu_text(r, "server"),
            "loadgen_cpu": cpu_text(r, "loadgen"),
            "rss": rss_text(r),
            "attempts": attempts_text(r),
            "compliance": self.compliance,
            "flags": ", ".join(flag_names(r)) or "-",
        }


def measurement_rows(group: Group) -> tuple[list[Row], list[Row]]:
    """(the table's rows: the ceiling first, then the ranked records in rank order; the rows kept out)."""
    scores, best = group.compliance, best_of(group)
    ceiling = group.ceiling
    shown = [Row(ceiling, "ceiling", "ceiling", scores.get(ceiling.server, "-"), best)] if ceiling else []
    shown += [Row(s.record, s.label, "ranked", scores.get(s.record.server, "-"), best) for s in group.ranked]
    return shown, [Row(r, "⚑", "flagged", scores.get(r.server, "-")) for r in group.flagged]


def flag_reasons(group: Group) -> list[tuple[str, str, str]]:
    """(server, flag, reason) of every flagged record of the group, in the table's order."""
    shown, kept_out = measurement_rows(group)
    return [(row.record.server, f.name, f.reason) for row in shown + kept_out for f in row.record.flags]


@dataclass
class MatrixRow:
    server: str
    records: list[Record | None]  # one per run of the scenario (None: not measured there)
    change: str | None  # the best h2c ÷ h1 where the scenario has both (else None)


def matrix(scenario: ScenarioView) -> tuple[list[str], list[MatrixRow]]:
    """A scenario of several runs as req/s per server and run: (header, rows)."""
    change = has_protocol_change(scenario)
    header = ["server"] + [g.run for g in scenario.groups] + ([PROTOCOL_CHANGE_HEADER] if change else [])
    rows = [
        MatrixRow(
            server,
            [next((r for r in g.records if r.server == server), None) for g in scenario.groups],
            protocol_change(scenario, server) if change else None,
        )
        for server in scenario.servers
    ]
    return header, rows


PROTOCOL_CHANGE_HEADER = "h2c best ÷ h1"


def protocol_change(scenario: ScenarioView, server: str) -> str:
    """In a scenario with an HTTP/1.1 baseline run and h2c runs (h2-hello): the server's best h2c median over its
    HTTP/1.1 one, with the run it came from ('×1.85 (c16-m100)'); '' where either is missing."""
    mine = [r for g in scenario.groups for r in g.records if r.server == server and r.rps]
    h1 = [r for r in mine if r.load.get("protocol") == "h1"]
    h2 = [r for r in mine if r.load.get("protocol") == "h2c"]
    if not h1 or not h2:
        return ""
    best = max(h2, key=lambda r: r.rps or 0.0)  # each has a rate (`mine`)
    return f"×{(best.rps or 0.0) / (h1[0].rps or 1.0):.2f} ({best.run})"


def has_protocol_change(scenario: ScenarioView) -> bool:
    return any(protocol_change(scenario, s) for s in scenario.servers)


def capacity_rows(model: Model, scenario: ScenarioView) -> list[list[str]]:
    """The capacity table of a stepped scenario: server, capacity, the step that set it, its p99, notes."""
    return [
        [
            server,
            capacity_text(c),
            c["step"] or "-",
            "-" if c["p99_ms"] is None else f"{c['p99_ms']:.2f}",
            c.get("why", "") if c["rps"] else "",
        ]
        for server, c in model.capacities(scenario.name)
    ]


CAPACITY_HEADER = ["server", "capacity", "step", "p99 ms", "note"]


def step_rows(model: Model, scenario: ScenarioView) -> list[list[str]]:
    """Per server and step: offered → achieved req/s, p99 (corrected), errors, held or why not."""
    rows = []
    for server, c in model.capacities(scenario.name):
        for s in c["steps"]:
            rows.append(
                [
                    server,
                    s["step"],
                    fmt_rate(s["offered_rps"]),
                    fmt_rate(s["achieved_rps"]) if s["achieved_rps"] else "-",
                    "-" if s["p99_ms"] is None else f"{s['p99_ms']:.2f}",
                    f"{s['errors']:,}",
                    "held" if s["held"] else s["why_not"],
                ]
            )
    return rows


STEP_HEADER = ["server", "step", "offered req/s", "achieved req/s", "p99 ms", "errors", "within target"]
