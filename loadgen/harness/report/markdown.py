"""summary.md: the report's tables in Markdown (GitHub flavour): per scenario and run, the ranked records (flags
beside them), then those kept out (failures, errors, a failed contract), every flag's reason; the servers; the run's
conditions."""
from __future__ import annotations

from pathlib import Path

from harness import flags
import harness.report.conditions as cond
from harness.report.model import (CAPACITY_HEADER, PROTOCOL_CHANGE_HEADER, STEP_HEADER, Group, Model, aa_text,
                                  bytes_text, capacity_rows, has_protocol_change, protocol_change,
                                  capacity_text, cost_interval_text, cost_text, cpu_text, cv_text, errors_text,
                                  flag_names, glance, latency, loc_text, method_note, rps_interval, rps_text, rss_text,
                                  startup_text, step_rows)
from harness.results import Record
from harness.stats import INTERVAL_NOTE, fmt_ms

HEADER = ["#", "server", "req/s", "interval (level)", "CV", "µs/req", "µs/req interval", "p50 ms", "p99 ms", "errors",
          "server CPU", "loadgen CPU", "server RSS", "flags"]
RIGHT = {"#", "req/s", "CV", "µs/req", "µs/req interval", "p50 ms", "p99 ms", "server CPU", "loadgen CPU", "server RSS",
         "errors", "start-up", "artifact", "checks", "interval (level)", "of ceiling", "ranked", "kept out"}


def _cell(text) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _table(header: list[str], rows: list[list]) -> list[str]:
    align = ["---:" if h in RIGHT else "---" for h in header]
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join(align) + " |"]
    lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]
    return lines


def _row(r: Record, rank: str) -> list:
    return [rank, r.server, rps_text(r) if r.rps is not None else "failed", rps_interval(r),
            cv_text(r), cost_text(r), cost_interval_text(r), fmt_ms(latency(r, "p50")), fmt_ms(latency(r, "p99")), errors_text(r), cpu_text(r, "server"),
            cpu_text(r, "loadgen"), rss_text(r), ", ".join(flag_names(r)) or "-"]


def group_lines(group: Group) -> list[str]:
    rows = []
    if group.ceiling:
        rows.append(_row(group.ceiling, "ceiling"))
    rows += [_row(s.record, s.label) for s in group.ranked]
    lines = _table(HEADER, rows) if rows else ["_no record to rank_"]
    if group.by_cost:
        lines += ["", "_≥: the load generator was the limit; where such intervals overlap, server CPU per request "
                      "(µs/req) orders the servers_"]
    if group.flagged:
        lines += ["", "**kept out of the ranking (failures, errors, a failed contract)**", ""]
        lines += _table(HEADER, [_row(r, "⚑") for r in group.flagged])
    flagged = [r for r in ([group.ceiling] if group.ceiling else []) + [s.record for s in group.ranked] + group.flagged
               if r.flags]
    if flagged:
        lines.append("")
        for r in flagged:
            for f in r.flags:
                lines.append(f"- {r.server}: **{f.name}**: {f.reason}")
    return lines


def glance_lines(model: Model) -> list[str]:
    """Per scenario and run: the best ranked server, or the servers tied for first ("rust = finagle"), with req/s
    ("≥" where the load generator was the limit) and CPU per request."""
    rows = []
    for scenario in model.scenarios:
        if scenario.is_stepped:  # ranked by capacity at the latency target, not per step
            caps = model.capacities(scenario.name)
            top = caps[0] if caps and caps[0][1]["rps"] else None
            rows.append([scenario.name, f"capacity at p99 ≤ {model.slo_p99_ms:g} ms", top[0] if top else "_none_",
                         capacity_text(top[1]) if top else "-", "-", "-", sum(1 for _, c in caps if c["rps"]),
                         sum(1 for _, c in caps if not c["rps"]), ""])
    for row in glance(model):
        rows.append([row.scenario, row.run, row.names or "_none ranked_", row.rates or "-", row.costs or "-",
                     row.of_ceiling, row.ranked, row.kept_out, row.note])
    return _table(["scenario", "run", "best (= tie)", "req/s", "µs/req", "of ceiling", "ranked", "kept out", "note"],
                  rows)


def render(model: Model) -> str:
    c = model.conditions
    records = model.records
    ranked = sum(1 for r in records if r.ranked)
    lines = [f"# Benchmark run {model.run_id}", "",
             f"{c.get('profile', '?')} profile, {c.get('runtime', '?')} runtime, {c.get('repeat', '?')} attempts per "
             f"measurement; {len(records)} records, {ranked} ranked, {len(records) - ranked} kept out (failures, errors, "
             "a failed contract). req/s is the median of the attempts (≥: a lower bound, the load generator or the "
             "upstream was the limit); CV is their spread (coefficient of variation); µs/req is the server's CPU time "
             "per request (median of the attempts, with its interval); p50/p99 are those of the median attempt; CPU is "
             "the share of the CPUs each side was pinned to.", "", INTERVAL_NOTE, "", method_note(model), ""]
    aa = aa_text(model)
    if aa:
        lines += [aa, ""]
    machine = cond.machine_note(c)
    if machine:
        lines += [machine, ""]
    lines += ["## At a glance", ""] + glance_lines(model) + [""]
    missing = cond.not_measured(model.run)
    if missing:
        lines += ["**Not measured:**", ""] + [f"- {m}" for m in missing] + [""]
    for scenario in model.scenarios:
        lines += [f"## {scenario.name}", ""]
        if scenario.description:
            lines += [scenario.description, ""]
        if scenario.is_stepped:
            lines += [f"**Capacity at p99 ≤ {model.slo_p99_ms:g} ms** (SLO_P99_MS): the highest offered rate held with "
                      "no errors, ≥ 99 % achieved and p99 (from each request's planned start) within the target.", ""]
            lines += _table(CAPACITY_HEADER, capacity_rows(model, scenario)) + [""]
            lines += _table(STEP_HEADER, step_rows(model, scenario)) + [""]
            continue
        if scenario.is_matrix:
            lines += ["req/s (median) per load; ⚑ flagged", ""]
            change = has_protocol_change(scenario)  # h1 baseline and h2c runs: the change per server
            header = ["server"] + [g.run for g in scenario.groups] + ([PROTOCOL_CHANGE_HEADER] if change else [])
            rows = []
            for server in scenario.servers:
                row = [server]
                for g in scenario.groups:
                    r = next((r for r in g.records if r.server == server), None)
                    row.append("" if r is None else rps_text(r) + ("" if r.ranked else " ⚑"))
                rows.append(row + ([protocol_change(scenario, server)] if change else []))
            lines += _table(header, rows) + [""]
        for group in scenario.groups:
            lines += [f"### {scenario.name} · {group.run}", "", f"_{group.load}_", ""] + group_lines(group) + [""]
    lines += ["## Servers", ""] + _table(
        ["server", "stack", "version", "CPUs", "start-up", "artifact", "lines of code", "contract"],
        [[name, s.get("stack", ""), s.get("version", ""), ",".join(map(str, s.get("cpus") or [])) or "-",
          startup_text(s.get("startup_s")), bytes_text(s.get("artifact_bytes")), loc_text(s.get("loc")),
          cond.contract_text(model.run, name)] for name, s in model.run.servers.items()]) + [""]
    lines += ["## Conditions", ""] + [f"- **{k}**: {v}" for k, v in cond.items(model.run)] + [""]
    lines += ["## Flags", ""] + [f"- **{name}**: {text}" for name, text in flags.legend()] + [""]
    return "\n".join(lines)


def write(model: Model, path: Path) -> Path:
    path.write_text(render(model))
    return path

