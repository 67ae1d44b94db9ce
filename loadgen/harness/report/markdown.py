"""summary.md: the report's tables in Markdown (GitHub flavour): per scenario and run, ranked records first, then the
flagged ones with their reasons; the servers; the run's conditions."""
from __future__ import annotations

from pathlib import Path

from harness import flags
import harness.report.conditions as cond
from harness.report.model import (CAPACITY_HEADER, RANKING_NOTE, STEP_HEADER, Group, Model, bytes_text, capacity_rows,
                                  capacity_text, cpu_text, cv_text, errors_text, flag_names, latency, loc_text,
                                  rps_interval, rps_of, rss_text, startup_text, step_rows)
from harness.results import Record
from harness.stats import INTERVAL_NOTE, fmt_ms, fmt_rate

HEADER = ["#", "server", "req/s", "interval (level)", "CV", "p50 ms", "p99 ms", "errors", "server CPU", "loadgen CPU",
          "server RSS", "flags"]


def _cell(text) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _table(header: list[str], rows: list[list]) -> list[str]:
    align = ["---:" if h in ("#", "req/s", "CV", "p50 ms", "p99 ms", "server CPU", "loadgen CPU", "server RSS", "errors",
                             "start-up", "artifact", "checks", "interval (level)", "of ceiling", "ranked", "flagged")
             else "---" for h in header]
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join(align) + " |"]
    lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]
    return lines


def _row(r: Record, rank: str) -> list:
    return [rank, r.server, fmt_rate(r.rps) if r.rps is not None else "failed", rps_interval(r),
            cv_text(r), fmt_ms(latency(r, "p50")), fmt_ms(latency(r, "p99")), errors_text(r), cpu_text(r, "server"),
            cpu_text(r, "loadgen"), rss_text(r), ", ".join(flag_names(r)) or "-"]


def group_lines(group: Group) -> list[str]:
    rows = []
    if group.ceiling:
        rows.append(_row(group.ceiling, "ceiling"))
    rows += [_row(s.record, s.label) for s in group.ranked]
    lines = _table(HEADER, rows) if rows else ["_no clean record to rank_"]
    if group.flagged:
        lines += ["", "**flagged: not ranked**", ""]
        lines += _table(HEADER, [_row(r, "⚑") for r in group.flagged])
    flagged = [r for r in ([group.ceiling] if group.ceiling else []) + group.flagged if r.flags]
    if flagged:
        lines.append("")
        for r in flagged:
            for f in r.flags:
                lines.append(f"- {r.server}: **{f.name}**: {f.reason}")
    return lines


def glance_lines(model: Model) -> list[str]:
    """Per scenario and run: the best ranked server, or the servers tied for first ("rust = finagle"), with req/s."""
    rows = []
    for scenario in model.scenarios:
        if scenario.is_stepped:  # ranked by capacity at the latency target, not per step
            caps = model.capacities(scenario.name)
            top = caps[0] if caps and caps[0][1]["rps"] else None
            rows.append([scenario.name, f"capacity at p99 ≤ {model.slo_p99_ms:g} ms", top[0] if top else "_none_",
                         capacity_text(top[1]) if top else "-", "-", sum(1 for _, c in caps if c["rps"]),
                         sum(1 for _, c in caps if not c["rps"]), ""])
            continue
        for group in scenario.groups:
            best = group.leaders()
            ceiling = group.ceiling.rps if group.ceiling else None
            top = group.flagged[0] if group.flagged and (not best or rps_of(group.flagged[0]) > rps_of(best[0])) else None
            rows.append([scenario.name, group.run,
                         " = ".join(r.server for r in best) or "_none clean_",
                         " = ".join(fmt_rate(r.rps) for r in best) or "-",
                         " = ".join(f"{r.rps / ceiling:.0%}" for r in best) if best and ceiling else "-",
                         len(group.ranked), len(group.flagged),
                         f"{top.server} {fmt_rate(top.rps)} ({', '.join(flag_names(top))})" if top and top.rps else ""])
    return _table(["scenario", "run", "best ranked (= tie)", "req/s", "of ceiling", "ranked", "flagged",
                   "faster but flagged"], rows)


def render(model: Model) -> str:
    c = model.conditions
    records = model.records
    ranked = sum(1 for r in records if r.ranked)
    lines = [f"# Benchmark run {model.run_id}", "",
             f"{c.get('profile', '?')} profile, {c.get('runtime', '?')} runtime, {c.get('repeat', '?')} attempts per "
             f"measurement; {len(records)} records, {ranked} clean, {len(records) - ranked} flagged (not ranked). "
             "req/s is the median of the attempts; CV is their spread (coefficient of variation); p50/p99 are those of the "
             "median attempt; CPU is the share of the CPUs each side was pinned to.", "", INTERVAL_NOTE, "",
             RANKING_NOTE, ""]
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
            header = ["server"] + [g.run for g in scenario.groups]
            rows = []
            for server in scenario.servers:
                row = [server]
                for g in scenario.groups:
                    r = next((r for r in g.records if r.server == server), None)
                    row.append("" if r is None else fmt_rate(r.rps) + ("" if r.ranked else " ⚑"))
                rows.append(row)
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

