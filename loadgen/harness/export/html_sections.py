"""The HTML report's sections below its first screen (html.py): each scenario's charts and tables (its measurements'
rankings with the compliance column, a matrix scenario's req/s per load, an open-model scenario's capacity, a mix's
endpoints) and the servers' table."""

from __future__ import annotations

from html import escape
from pathlib import Path

import harness.report.run_conditions as cond
from harness.export.html_style import badge, img
from harness.report import mix_tables
from harness.report.cells import (
    bytes_text,
    cpu,
    flag_names,
    image_text,
    loc_text,
    memory_text,
    rps_text,
    startup_text,
)
from harness.report.model import Group, Model, ScenarioView
from harness.report.tables import (
    BY_COST_NOTE,
    CAPACITY_HEADER,
    COLUMNS,
    KEPT_OUT_TITLE,
    KEYS,
    STEP_HEADER,
    Row,
    capacity_rows,
    matrix,
    measurement_rows,
    step_rows,
)
from harness.results.records import Record


def _cpu_cell(r: Record, role: str) -> str:
    value = cpu(r, role)
    if value is None:
        return "-"
    pct = max(0.0, min(value, 1.0)) * 100
    hot = " hot" if value >= 0.9 else ""
    return f'{value * 100:.0f} %<span class="cpu"><i class="{hot.strip()}" style="width:{pct:.0f}%"></i></span>'


LEFT = {"server", "attempts", "flags"}  # columns aligned left


def _row(model: Model, row: Row) -> str:
    """A row of tables.measurement_rows, with the server's colour, CPU bars and flag badges."""
    r, text = row.record, row.cells
    swatch = f'<span class="sw" style="background:{model.colors.get(r.server, "#999")}"></span>'
    dressed = {
        "rank": f'<td class="rank">{escape(text["rank"])}</td>',
        "server": f'<td class="l">{swatch}{escape(r.server)}</td>',
        "rps": f'<td class="rps">{escape(text["rps"])}</td>',
        "server_cpu": f"<td>{_cpu_cell(r, 'server')}</td>",
        "loadgen_cpu": f"<td>{_cpu_cell(r, 'loadgen')}</td>",
        "attempts": f'<td class="l muted">{escape(text["attempts"])}</td>',
        "flags": f'<td class="l">{"".join(badge(n) for n in flag_names(r)) or "<span class=ok>clean</span>"}</td>',
    }
    cells = [dressed.get(k) or f"<td>{escape(text[k])}</td>" for k in KEYS]
    css = "" if row.kind == "ranked" else row.kind
    out = f'<tr class="{css}">' + "".join(cells) + "</tr>"
    if r.flags:
        reasons = "<br>".join(f"<b>{escape(f.name)}</b>: {escape(f.reason)}" for f in r.flags)
        out += f'<tr class="reason"><td></td><td colspan="{len(KEYS) - 1}">{reasons}</td></tr>'
    return out


# the method paragraph (html.py's fold) each column's header links to
EXPLAINED = {
    "rank": "method-ranking",
    "rps": "method-rps",
    "of_best": "method-matrix",
    "interval": "method-intervals",
    "cv": "method-rps",
    "cost": "method-cpu",
    "cost_interval": "method-intervals",
    "p50": "method-latency",
    "p99": "method-latency",
    "server_cpu": "method-cpu",
    "loadgen_cpu": "method-cpu",
    "flags": "method-flags",
}


def _head() -> str:
    cells = [
        f'<th class="{"l" if k in LEFT else ""}">'
        + (f'<a href="#{EXPLAINED[k]}">{escape(h)}</a>' if k in EXPLAINED else escape(h))
        + "</th>"
        for h, k in COLUMNS
    ]
    return "<tr>" + "".join(cells) + "</tr>"


def group_tables(model: Model, group: Group) -> str:
    shown, kept_out = measurement_rows(group)
    out = []
    if shown:
        out.append(f'<div class="scroll"><table>{_head()}{"".join(_row(model, row) for row in shown)}</table></div>')
    if not group.ranked:
        out.append('<p class="muted">No record to rank in this measurement.</p>')
    if group.by_cost:
        out.append(f'<p class="muted">{escape(BY_COST_NOTE)}.</p>')
    if group.rule_note:
        out.append(f'<p class="muted">{escape(group.rule_note)}</p>')
    if kept_out:
        out.append(f"<h4>{escape(KEPT_OUT_TITLE)} ({len(kept_out)})</h4>")
        out.append(
            f'<div class="scroll"><table>{_head()}' + "".join(_row(model, row) for row in kept_out) + "</table></div>"
        )
    return "\n".join(out)


def _matrix_table(model: Model, scenario: ScenarioView) -> str:
    header, rows = matrix(scenario)
    head = (
        "<tr>" + "".join(f"<th{' class=l' if i == 0 else ''}>{escape(h)}</th>" for i, h in enumerate(header)) + "</tr>"
    )
    lines = []
    for row in rows:
        cells = []
        for r in row.records:
            if r is None:
                cells.append("<td></td>")
                continue
            names = flag_names(r)
            title = escape("; ".join(f"{f.name}: {f.reason}" for f in r.flags) or "clean")
            mark = " ⚑" if names else ""
            style = ' style="background:var(--bad)"' if names and not model.is_ceiling(row.server) else ""
            cells.append(f'<td title="{title}"{style}>{rps_text(r)}{mark}</td>')
        if row.change is not None:
            cells.append(f"<td>{escape(row.change)}</td>")
        swatch = f'<span class="sw" style="background:{model.colors.get(row.server, "#999")}"></span>'
        css = ' class="ceiling"' if model.is_ceiling(row.server) else ""
        label = f"{row.server} (ceiling)" if model.is_ceiling(row.server) else row.server
        lines.append(f"<tr{css}><td class=l>{swatch}{escape(label)}</td>{''.join(cells)}</tr>")
    return (
        f'<div class="scroll"><table>{head}{"".join(lines)}</table></div>'
        '<p class="muted">Median req/s per load; ⚑ flagged (hover for the reasons; the tables below list them).</p>'
    )


def _simple_table(header: list[str], rows: list[list[str]]) -> str:
    head = "".join(f"<th>{escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{escape(str(c))}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def scenario_section(model: Model, scenario: ScenarioView, charts: dict[str, Path]) -> str:
    out = [f'<h2 id="{escape(scenario.name)}">{escape(scenario.name)}</h2>']
    if scenario.description:
        out.append(f'<p class="sub">{escape(scenario.description)}</p>')
    spectrum = img(charts.get(f"{scenario.name}-spectrum"), f"{scenario.name} latency by percentile")
    if scenario.is_stepped:
        out.append(
            f'<div class="charts">{img(charts.get(f"{scenario.name}-latency-steps"), f"{scenario.name} latency")}'
            f"{spectrum}</div>"
        )
        out.append(
            f"<h3>Capacity at p99 ≤ {model.slo_p99_ms:g} ms</h3><p class=muted>The highest offered rate held with no "
            "errors, ≥ 99 % achieved and p99 (from each request's planned start) within the target "
            "(SLO_P99_MS).</p>" + _simple_table(CAPACITY_HEADER, capacity_rows(model, scenario))
        )
        out.append(
            "<details><summary>every step</summary>"
            + _simple_table(STEP_HEADER, step_rows(model, scenario))
            + "</details>"
        )
        return "\n".join(out)
    cost_chart = img(charts.get(f"{scenario.name}-cost"), f"{scenario.name} CPU per request")
    if scenario.is_matrix:
        imgs = [img(charts.get(f"{scenario.name}-{k}"), f"{scenario.name} {k}") for k in ("rps-matrix", "p99-matrix")]
        out.append(f'<div class="charts">{"".join(imgs)}{cost_chart}{spectrum}</div>')
        out.append(_matrix_table(model, scenario))
        for group in scenario.groups:
            n_flagged = len(group.flagged)
            label = f"{scenario.name} · {group.run}: {len(group.ranked)} ranked" + (
                f", {n_flagged} kept out" if n_flagged else ""
            )
            out.append(
                f"<details><summary>{escape(label)}</summary><p class=load>{escape(group.load)}</p>"
                f"{group_tables(model, group)}</details>"
            )
        return "\n".join(out)
    for group in scenario.groups:
        if len(scenario.groups) > 1:
            out.append(f'<h3 id="{group.key}">{escape(scenario.name)} · {escape(group.run)}</h3>')
        out.append(f'<p class="load">{escape(group.load)}</p>')
        imgs = [img(charts.get(f"{group.key}-{k}"), f"{group.scenario} {group.run} {k}") for k in ("rps", "latency")]
        out.append(f'<div class="charts">{"".join(imgs)}</div>')
        out.append(group_tables(model, group))
    if cost_chart or spectrum:
        out.append(f'<div class="charts">{cost_chart}{spectrum}</div>')
    out.append(mix_tables.html(model.run, scenario.name))
    return "\n".join(out)


def servers(model: Model) -> str:
    head = (
        "<tr><th class=l>server</th><th class=l>stack</th><th class=l>version</th><th>CPUs</th><th>start-up</th>"
        "<th>idle memory</th><th>artifact</th><th>image</th><th>lines of code</th><th class=l>contract</th></tr>"
    )
    rows = []
    for name, s in model.run.servers.items():
        loc = s.get("loc") or {}
        langs = ", ".join(f"{k} {v:,}" for k, v in (loc.get("languages") or {}).items())
        contract = cond.contract_text(model.run, name)
        css = "ok" if contract.startswith("OK") else "bad"
        if not s.get("started", True):
            contract = f"did not start: {s.get('error', '')}"
        rows.append(
            f'<tr><td class=l><span class="sw" style="background:{model.colors.get(name, "#999")}"></span>{escape(name)}</td>'
            f'<td class="l wrap">{escape(s.get("stack", ""))}</td><td class="l wrap muted">{escape(s.get("version", "") or "")}</td>'
            f"<td>{escape(','.join(map(str, s.get('cpus') or [])) or '-')}</td><td>{startup_text(s.get('startup_s'))}</td>"
            f'<td>{memory_text(s)}</td><td>{bytes_text(s.get("artifact_bytes"))}</td><td>{image_text(s)}</td><td title="{escape(langs)}">{escape(loc_text(s.get("loc")))}</td>'
            f'<td class="l wrap {css}">{escape(contract)}</td></tr>'
        )
    return (
        f'<div class="scroll"><table>{head}{"".join(rows)}</table></div>'
        '<p class="muted">Start-up: from launch to the first correct response (servers this run started). '
        "Idle memory: resident memory of its processes after it answered (before any load) / after the run, "
        "before it was stopped (the peak under load is each record's RSS). Artifact: the manifest's "
        "<code>artifacts</code> on disk; image: its Docker image, under Docker. Lines of code: pygount over the server's own "
        "source files (generated files, lockfiles and dependencies excluded), program + build/config lines; "
        "hover for the languages.</p>"
    )
