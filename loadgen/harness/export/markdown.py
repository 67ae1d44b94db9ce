"""summary.md: the report's tables in Markdown (GitHub flavour): the matrix of every server × scenario run first
(overview.py), the at-a-glance rows, then per scenario and run the ranked records (flags beside them), those kept out
(harness.results.flag_kinds.kept_out), every flag's reason; the servers; the run's conditions."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import harness.report.run_conditions as cond
from harness.report import calibration_page, compliance, mix_tables, resolution_text
from harness.report.cells import (
    bytes_text,
    capacity_text,
    image_text,
    loc_text,
    memory_text,
    rps_text,
    startup_text,
)
from harness.report.first_screen import Glance, aa_conditions, glance, method
from harness.report.model import Group, Model, ScenarioView
from harness.report.overview import LEGEND, Cell, Overview, twins_note
from harness.report.overview import build as build_overview
from harness.report.tables import (
    BY_COST_NOTE,
    CAPACITY_HEADER,
    HEADER,
    KEPT_OUT_TITLE,
    KEYS,
    STEP_HEADER,
    capacity_rows,
    flag_reasons,
    matrix,
    measurement_rows,
    step_rows,
)
from harness.results import flag_kinds

# (header, the method paragraph or section it links to) of the at-a-glance table
GLANCE_HEADER = [
    ("scenario", ""),
    ("run", ""),
    ("best (places)", "method-ranking"),
    ("req/s", "method-rps"),
    ("µs/req", "method-cpu"),
    ("p99 ms", "method-latency"),
    ("of ceiling", "method-ceiling"),
    ("compliance", "http-compliance"),
    ("ranked", "method-ranking"),
    ("kept out", "method-flags"),
    ("note", ""),
]

RIGHT = {
    "#",
    "req/s",
    "CV",
    "÷ best",
    "p99 CV",
    "µs/req",
    "µs/req interval",
    "p50 ms",
    "p99 ms",
    "server CPU",
    "loadgen CPU",
    "server RSS",
    "errors",
    "start-up",
    "artifact",
    "checks",
    "interval (level)",
    "of ceiling",
    "ranked",
    "kept out",
}


def _cell(text: object) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _table(header: list[str], rows: list[list[Any]]) -> list[str]:
    align = ["---:" if h.strip("[").split("]")[0] in RIGHT else "---" for h in header]
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join(align) + " |"]
    lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]
    return lines


def group_lines(group: Group) -> list[str]:
    shown, kept_out = measurement_rows(group)
    lines = _table(HEADER, [[row.cells[k] for k in KEYS] for row in shown]) if shown else ["_no record to rank_"]
    if group.by_cost:
        lines += ["", f"_{BY_COST_NOTE}_"]
    if group.rule_note:
        lines += ["", f"_{group.rule_note}_"]
    if kept_out:
        lines += ["", f"**{KEPT_OUT_TITLE}**", ""]
        lines += _table(HEADER, [[row.cells[k] for k in KEYS] for row in kept_out])
    reasons = flag_reasons(group)
    if reasons:
        lines += [""] + [f"- {server}: **{flag}**: {reason}" for server, flag, reason in reasons]
    return lines


def _glance_row(row: Glance, with_compliance: bool) -> list[list[Any]]:
    """A group's lines: one per server that may be first (seven tied servers make seven short lines, not one wide
    one); the group's own cells on its first line only."""
    if not row.leaders:
        return [
            [row.scenario, row.run, "_none ranked_", "-", "-", "-", "-"]
            + ["-"] * with_compliance
            + [row.ranked, row.kept_out, row.note]
        ]
    out = []
    for i, leader in enumerate(row.leaders):
        first = i == 0
        out.append(
            [
                row.scenario if first else "",
                row.run if first else "",
                leader.name,
                leader.rate,
                leader.cost,
                leader.p99,
                leader.of_ceiling,
            ]
            + [leader.compliance] * with_compliance
            + ([row.ranked, row.kept_out, row.note] if first else ["", "", ""])
        )
    return out


def _capacity_row(model: Model, scenario: ScenarioView, with_compliance: bool) -> list[Any]:
    """An open-model scenario's line: ranked by capacity at the latency target, not per step."""
    caps = model.capacities(scenario.name)
    top = caps[0] if caps and caps[0][1]["rps"] else None
    return (
        [scenario.name, f"capacity at p99 ≤ {model.slo_p99_ms:g} ms", top[0] if top else "_none_"]
        + [capacity_text(top[1]) if top else "-", "-", "-", "-"]
        + [model.compliance_of(top[0]) if top else "-"] * with_compliance
        + [sum(1 for _, c in caps if c["rps"]), sum(1 for _, c in caps if not c["rps"]), ""]
    )


def glance_lines(model: Model) -> list[str]:
    """Per scenario and run: the best ranked server, or the servers that may be first, one line each with its range
    of places ("socko (1–5)"), req/s ("≥" where the load generator was the limit), CPU per request, p99, its share of
    the ceiling and its compliance score (where the run probed its servers); each header links to its method."""
    probed = bool(model.run.compliance)
    rows = [_capacity_row(model, s, probed) for s in model.scenarios if s.is_stepped]
    rows += [line for row in glance(model) for line in _glance_row(row, probed)]
    header = [f"[{h}](#{a})" if a else h for h, a in GLANCE_HEADER if probed or h != "compliance"]
    line = resolution_text.resolution_line(model)
    duels = resolution_text.duel_suggestions(model, glance(model))
    after = ([f"\n{line}"] if line else []) + (
        ["\nTied first places, settled head to head:", *[f"- {d}" for d in duels]] if duels else []
    )
    return _table(header, rows) + after


def heading_anchor(heading: str) -> str:
    """A heading's anchor as GitHub makes it: lower case, punctuation dropped, each space a hyphen."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _matrix_cell(cell: Cell) -> str:
    if cell.record is None:
        return "·"
    if cell.kept_out:
        return f"_{cell.text}_"
    text = cell.text + (" ⚑" if cell.flags else "")
    return f"**{text}**" if cell.tied else text


def overview_lines(overview: Overview) -> list[str]:
    """The matrix of servers × scenario runs (overview.py): each header links to its run's heading below."""
    if not overview.columns:
        return []
    header = ["server", "[all](#method-matrix)"] + [
        f"[{c.scenario} {c.run}](#{heading_anchor(f'{c.scenario} · {c.run}')})" for c in overview.columns
    ]
    header += ["[compliance](#http-compliance)"] * overview.probed
    rows = []
    for row in overview.rows + overview.ceilings:
        name = f"_{row.server} (ceiling)_" if row.ceiling else row.server + (f" (+ {row.twin})" if row.twin else "")
        cells = [name, row.mean_text(overview.complete)]
        cells += [_matrix_cell(c) for c in row.cells] + [row.compliance] * overview.probed
        rows.append(cells)
    lines = _table(header, rows) + ["", LEGEND]
    notes = [note for note in (overview.stepped_note, twins_note(overview)) if note]
    return lines + [line for note in notes for line in ("", note)]


def method_lines(model: Model) -> list[str]:
    """The method after the answer: each paragraph under the anchor its figure's header links to."""
    lines = ["## How these figures are measured and ranked", ""]
    for anchor, title, text in method(model):
        lines += [f'<a id="{anchor}"></a>**{title}.** {text}', ""]
    return lines


def _scenario_lines(model: Model, scenario: ScenarioView) -> list[str]:
    lines = [f"## {scenario.name}", ""]
    if scenario.description:
        lines += [scenario.description, ""]
    if scenario.is_stepped:
        lines += [
            f"**Capacity at p99 ≤ {model.slo_p99_ms:g} ms** (SLO_P99_MS): the highest offered rate held with "
            "no errors, ≥ 99 % achieved and p99 (from each request's planned start) within the target.",
            "",
        ]
        lines += _table(CAPACITY_HEADER, capacity_rows(model, scenario)) + [""]
        return lines + _table(STEP_HEADER, step_rows(model, scenario)) + [""]
    if scenario.is_matrix:
        lines += ["req/s (median) per load; ⚑ flagged", ""]
        header, matrix_rows = matrix(scenario)
        rows = [
            [row.server]
            + ["" if r is None else rps_text(r) + ("" if r.ranked else " ⚑") for r in row.records]
            + ([row.change] if row.change is not None else [])
            for row in matrix_rows
        ]
        lines += _table(header, rows) + [""]
    for group in scenario.groups:
        lines += [f"### {scenario.name} · {group.run}", "", f"_{group.load}_", ""] + group_lines(group) + [""]
    return lines + mix_tables.markdown(model.run, scenario.name)


SERVERS_HEADER = [
    "server",
    "stack",
    "version",
    "CPUs",
    "start-up",
    "idle memory (after start / after run)",
    "artifact",
    "image",
    "lines of code",
    "contract",
]


def _servers_lines(model: Model) -> list[str]:
    rows = [
        [
            name,
            s.get("stack", ""),
            s.get("version", ""),
            ",".join(map(str, s.get("cpus") or [])) or "-",
            startup_text(s.get("startup_s")),
            memory_text(s),
            bytes_text(s.get("artifact_bytes")),
            image_text(s),
            loc_text(s.get("loc")),
            cond.contract_text(model.run, name),
        ]
        for name, s in model.run.servers.items()
    ]
    return ["## Servers", ""] + _table(SERVERS_HEADER, rows) + [""]


def render(model: Model) -> str:
    c = model.conditions
    records = model.records
    ranked = sum(1 for r in records if r.ranked)
    lines = [
        f"# Benchmark run {model.run_id}",
        "",
        f"{c.get('profile', '?')} profile, {c.get('runtime', '?')} runtime, {c.get('repeat', '?')} attempts per "
        f"measurement; {len(records)} records, {ranked} ranked, {len(records) - ranked} kept out.",
        "",
        "## Every server, scenario by scenario",
        "",
        *overview_lines(build_overview(model)),
        "",
        "## At a glance",
        "",
        *glance_lines(model),
        "",
    ]
    lines += method_lines(model)
    if c.get("versus"):
        lines += ["The comparison of the two builds (`make versus`): [versus.md](versus.md).", ""]
    lines += calibration_page.markdown(model.run)
    lines += compliance.markdown(model.run)
    missing = cond.not_measured(model.run)
    if missing:
        lines += ["**Not measured:**", ""] + [f"- {m}" for m in missing] + [""]
    for scenario in model.scenarios:
        lines += _scenario_lines(model, scenario)
    lines += _servers_lines(model)
    conditions = cond.items(model.run) + aa_conditions(model)
    lines += ["## Conditions", ""] + [f"- **{k}**: {v}" for k, v in conditions] + [""]
    lines += ["## Flags", ""] + [f"- **{name}**: {text}" for name, text in flag_kinds.legend()] + [""]
    return "\n".join(lines)


def write(model: Model, path: Path) -> Path:
    path.write_text(render(model))
    return path
