"""summary.md: the report's tables in Markdown (GitHub flavour): per scenario and run, the ranked records (flags
beside them), then those kept out (harness.results.flag_kinds.kept_out), every flag's reason; the servers; the run's
conditions."""

from __future__ import annotations

from pathlib import Path

import harness.report.run_conditions as cond
from harness.report import calibration_page, compliance, mix_tables
from harness.report.cells import (
    INTERVAL_NOTE,
    bytes_text,
    capacity_text,
    image_text,
    loc_text,
    memory_text,
    rps_text,
    startup_text,
)
from harness.report.model import (
    CAPACITY_HEADER,
    STEP_HEADER,
    Group,
    Model,
    aa_text,
    capacity_rows,
    glance,
    method_note,
    step_rows,
)
from harness.report.tables import BY_COST_NOTE, HEADER, KEPT_OUT_TITLE, KEYS, flag_reasons, matrix, measurement_rows
from harness.results import flag_kinds

RIGHT = {
    "#",
    "req/s",
    "CV",
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


def _cell(text) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _table(header: list[str], rows: list[list]) -> list[str]:
    align = ["---:" if h in RIGHT else "---" for h in header]
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


def glance_lines(model: Model) -> list[str]:
    """Per scenario and run: the best ranked server, or the servers that may be first, each with its range of places
    ("rust (1–2) = socko (1–5)"), with req/s
    ("≥" where the load generator was the limit) and CPU per request."""
    rows = []
    for scenario in model.scenarios:
        if scenario.is_stepped:  # ranked by capacity at the latency target, not per step
            caps = model.capacities(scenario.name)
            top = caps[0] if caps and caps[0][1]["rps"] else None
            rows.append(
                [
                    scenario.name,
                    f"capacity at p99 ≤ {model.slo_p99_ms:g} ms",
                    top[0] if top else "_none_",
                    capacity_text(top[1]) if top else "-",
                    "-",
                    "-",
                    sum(1 for _, c in caps if c["rps"]),
                    sum(1 for _, c in caps if not c["rps"]),
                    "",
                ]
            )
    for row in glance(model):
        rows.append(
            [
                row.scenario,
                row.run,
                row.names or "_none ranked_",
                row.rates or "-",
                row.costs or "-",
                row.of_ceiling,
                row.ranked,
                row.kept_out,
                row.note,
            ]
        )
    return _table(
        ["scenario", "run", "best (places)", "req/s", "µs/req", "of ceiling", "ranked", "kept out", "note"], rows
    )


def render(model: Model) -> str:
    c = model.conditions
    records = model.records
    ranked = sum(1 for r in records if r.ranked)
    lines = [
        f"# Benchmark run {model.run_id}",
        "",
        f"{c.get('profile', '?')} profile, {c.get('runtime', '?')} runtime, {c.get('repeat', '?')} attempts per "
        f"measurement; {len(records)} records, {ranked} ranked, {len(records) - ranked} kept out ("
        f"{flag_kinds.kept_out()}). req/s is the median of the attempts (≥: a lower bound, the load generator or the "
        "upstream was the limit); CV is their spread (coefficient of variation); µs/req is the server's CPU time "
        "per request (median of the attempts, with its interval); p50/p99 are those of the median attempt; CPU is "
        "the share of the CPUs each side was pinned to.",
        "",
        INTERVAL_NOTE,
        "",
        method_note(model),
        "",
    ]
    if c.get("versus"):
        lines += ["The comparison of the two builds (`make versus`): [versus.md](versus.md).", ""]
    aa = aa_text(model)
    if aa:
        lines += [aa, ""]
    machine = cond.machine_note(c)
    if machine:
        lines += [machine, ""]
    lines += ["## At a glance", ""] + glance_lines(model) + [""]
    lines += calibration_page.markdown(model.run)
    lines += compliance.markdown(model.run)
    missing = cond.not_measured(model.run)
    if missing:
        lines += ["**Not measured:**", ""] + [f"- {m}" for m in missing] + [""]
    for scenario in model.scenarios:
        lines += [f"## {scenario.name}", ""]
        if scenario.description:
            lines += [scenario.description, ""]
        if scenario.is_stepped:
            lines += [
                f"**Capacity at p99 ≤ {model.slo_p99_ms:g} ms** (SLO_P99_MS): the highest offered rate held with "
                "no errors, ≥ 99 % achieved and p99 (from each request's planned start) within the target.",
                "",
            ]
            lines += _table(CAPACITY_HEADER, capacity_rows(model, scenario)) + [""]
            lines += _table(STEP_HEADER, step_rows(model, scenario)) + [""]
            continue
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
        lines += mix_tables.markdown(model.run, scenario.name)
    lines += (
        ["## Servers", ""]
        + _table(
            [
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
            ],
            [
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
            ],
        )
        + [""]
    )
    lines += ["## Conditions", ""] + [f"- **{k}**: {v}" for k, v in cond.items(model.run)] + [""]
    lines += ["## Flags", ""] + [f"- **{name}**: {text}" for name, text in flag_kinds.legend()] + [""]
    return "\n".join(lines)


def write(model: Model, path: Path) -> Path:
    path.write_text(render(model))
    return path
