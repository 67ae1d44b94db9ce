"""report.html: one self-contained page (inline CSS, charts embedded as data: URIs, no script, no external fetch), so
it works opened from disk, offline, or mailed as one file."""

from __future__ import annotations

import base64
from html import escape
from pathlib import Path

import harness.report.run_conditions as cond
from harness.basics.formats import fmt_ms, fmt_rate
from harness.report import calibration_page, compliance, mix_tables
from harness.report.cells import (
    INTERVAL_NOTE,
    bytes_text,
    cpu,
    flag_names,
    image_text,
    latency,
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
    ScenarioView,
    aa_text,
    capacity_rows,
    glance,
    method_note,
    step_rows,
)
from harness.report.tables import BY_COST_NOTE, COLUMNS, KEPT_OUT_TITLE, KEYS, Row, matrix, measurement_rows
from harness.results import flag_kinds
from harness.results.records import Record

FLAG_COLORS = {kind.name: kind.colour for kind in flag_kinds.ALL}

CSS = """
:root { --fg:#1f2328; --muted:#656d76; --line:#d0d7de; --soft:#f6f8fa; --bad:#fff4f4; --ceil:#f1f3f5; --accent:#0969da; }
* { box-sizing: border-box; }
body { font: 14px/1.45 -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; color: var(--fg); margin: 0; background: #fff; }
main { max-width: 1280px; margin: 0 auto; padding: 24px 32px 64px; }
h1 { font-size: 26px; margin: 0 0 4px; }
h2 { font-size: 20px; margin: 40px 0 8px; padding-top: 12px; border-top: 2px solid var(--line); }
h3 { font-size: 16px; margin: 26px 0 6px; }
h4 { font-size: 13px; margin: 14px 0 6px; color: #a30000; text-transform: uppercase; letter-spacing: .04em; }
p.sub, .muted { color: var(--muted); }
.cards { display: flex; gap: 12px; flex-wrap: wrap; margin: 16px 0; }
.card { border: 1px solid var(--line); border-radius: 8px; padding: 10px 14px; min-width: 130px; background: var(--soft); }
.card b { display: block; font-size: 22px; }
.card.bad { background: var(--bad); border-color: #f3c4c4; }
nav { margin: 10px 0 0; font-size: 13px; }
nav a { margin-right: 14px; color: var(--accent); text-decoration: none; }
table { border-collapse: collapse; margin: 8px 0 4px; font-size: 13px; font-variant-numeric: tabular-nums; }
th, td { padding: 5px 9px; border-bottom: 1px solid var(--line); text-align: right; vertical-align: top; white-space: nowrap; }
th { background: var(--soft); font-weight: 600; position: sticky; top: 0; }
td.l, th.l { text-align: left; }
td.wrap { white-space: normal; max-width: 520px; }
tr.ceiling td { background: var(--ceil); font-style: italic; }
tr.flagged td { background: var(--bad); }
tr.reason td { background: var(--bad); color: #7a1f1f; font-size: 12px; text-align: left; white-space: normal; border-top: 0; }
td.rank { font-weight: 700; color: var(--muted); }
td.rps { font-weight: 700; }
.sw { display: inline-block; width: 10px; height: 10px; border-radius: 2px; margin-right: 6px; vertical-align: -1px; }
.badge { display: inline-block; color: #fff; border-radius: 10px; padding: 0 8px; font-size: 11px; margin: 0 3px 2px 0; font-style: normal; white-space: nowrap; }
.ok { color: #1a7f37; }
.bad { color: #b91c1c; font-weight: 600; }
.cpu { display: inline-block; width: 46px; height: 7px; background: #e5e7eb; border-radius: 3px; margin-left: 5px; vertical-align: 1px; overflow: hidden; }
.cpu i { display: block; height: 100%; background: #6b7280; }
.cpu i.hot { background: #c2410c; }
.charts { display: flex; flex-wrap: wrap; gap: 14px; align-items: flex-start; margin: 6px 0; }
.charts img { max-width: 100%; border: 1px solid var(--line); border-radius: 6px; }
.load { color: var(--muted); font-size: 12px; margin: 0 0 6px; }
details { margin: 6px 0; }
summary { cursor: pointer; color: var(--accent); }
dl.cond { display: grid; grid-template-columns: max-content 1fr; gap: 3px 18px; font-size: 13px; }
dl.cond dt { color: var(--muted); }
dl.cond dd { margin: 0; font-family: ui-monospace, SFMono-Regular, Menlo, monospace; font-size: 12px; word-break: break-word; }
ul.legend li { margin: 3px 0; }
.scroll { overflow-x: auto; }
"""


def _img(path: Path | None, alt: str) -> str:
    if not path or not path.exists():
        return ""
    data = base64.b64encode(path.read_bytes()).decode("ascii")
    return f'<img alt="{escape(alt)}" src="data:image/png;base64,{data}">'


def badge(name: str) -> str:
    return f'<span class="badge" style="background:{FLAG_COLORS.get(name, "#555")}">{escape(name)}</span>'


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


def _head() -> str:
    return "<tr>" + "".join(f'<th class="{"l" if k in LEFT else ""}">{escape(h)}</th>' for h, k in COLUMNS) + "</tr>"


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
    spectrum = _img(charts.get(f"{scenario.name}-spectrum"), f"{scenario.name} latency by percentile")
    if scenario.is_stepped:
        out.append(
            f'<div class="charts">{_img(charts.get(f"{scenario.name}-latency-steps"), f"{scenario.name} latency")}'
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
    cost_chart = _img(charts.get(f"{scenario.name}-cost"), f"{scenario.name} CPU per request")
    if scenario.is_matrix:
        imgs = [_img(charts.get(f"{scenario.name}-{k}"), f"{scenario.name} {k}") for k in ("rps-matrix", "p99-matrix")]
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
        imgs = [_img(charts.get(f"{group.key}-{k}"), f"{group.scenario} {group.run} {k}") for k in ("rps", "latency")]
        out.append(f'<div class="charts">{"".join(imgs)}</div>')
        out.append(group_tables(model, group))
    if cost_chart or spectrum:
        out.append(f'<div class="charts">{cost_chart}{spectrum}</div>')
    out.append(mix_tables.html(model.run, scenario.name))
    return "\n".join(out)


def _glance(model: Model) -> str:
    """Per scenario and run: the best ranked server, or the servers that may be first, each with its range of places
    ("rust (1–2) = socko (1–5)"), with their figures (model.glance: the same rows as the Markdown's)."""
    rows = []
    by_name = {s.name: s for s in model.scenarios}
    for row in glance(model):
        scenario = by_name[row.scenario]
        group = next(g for g in scenario.groups if g.run == row.run)
        anchor = scenario.name if scenario.is_matrix or len(scenario.groups) == 1 else group.key
        eq = ' <span class="muted">=</span> '
        name = (
            eq.join(
                f'<span class="sw" style="background:{model.colors.get(r.server, "#999")}"></span>'
                f"{escape(row.name_of(i))}"
                for i, r in enumerate(row.best)
            )
            if row.best
            else '<span class="muted">none ranked</span>'
        )
        p99 = " = ".join(fmt_ms(latency(r, "p99")) for r in row.best) or "-"
        ceiling = row.ceiling.rps if row.ceiling else None
        flagged = "".join(badge(n) for n in sorted({n for r in group.flagged for n in flag_names(r)}))
        rows.append(
            f'<tr><td class=l><a href="#{anchor}">{escape(row.scenario)}</a></td><td class=l>{escape(row.run)}</td>'
            f"<td class=l>{name}</td><td class=rps>{escape(row.rates or '-')}</td><td>{escape(row.costs or '-')}</td>"
            f"<td>{p99}</td><td>{fmt_rate(ceiling) if ceiling else '-'}</td><td>{row.of_ceiling}</td>"
            f"<td>{row.ranked}</td><td class=l>{row.kept_out or ''} {flagged}</td>"
            f'<td class="l muted">{escape(row.note)}</td></tr>'
        )
    head = (
        "<tr><th class=l>scenario</th><th class=l>run</th><th class=l>best (places)</th><th>req/s</th>"
        "<th>µs/req</th><th>p99 ms</th><th>ceiling</th><th>of ceiling</th><th>ranked</th><th class=l>kept out</th>"
        "<th class=l>note</th></tr>"
    )
    return f'<div class="scroll"><table>{head}{"".join(rows)}</table></div>'


def _servers(model: Model) -> str:
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


def render(model: Model, charts: dict[str, Path]) -> str:
    records = model.records
    ranked = sum(1 for r in records if r.ranked)
    c = model.conditions
    counts: dict[str, int] = {}
    for r in records:
        for n in flag_names(r):
            counts[n] = counts.get(n, 0) + 1
    cards = [
        f'<div class="card"><b>{len(records)}</b>measurements</div>',
        f'<div class="card"><b>{ranked}</b>ranked</div>',
        f'<div class="card{" bad" if ranked < len(records) else ""}"><b>{len(records) - ranked}</b>kept out (failures, errors, contract)</div>',
    ]
    cards += [
        f'<div class="card bad"><b>{n}</b>{badge(name)}</div>'
        for name, n in sorted(counts.items(), key=lambda kv: -kv[1])
    ]
    nav = "".join(f'<a href="#{escape(s.name)}">{escape(s.name)}</a>' for s in model.scenarios)
    nav += '<a href="#compliance">compliance</a>' if model.run.compliance else ""
    nav += '<a href="#servers">servers</a><a href="#conditions">conditions</a><a href="#flags">flags</a>'
    subtitle = (
        f"{escape(str(c.get('profile', '?')))} profile · {escape(str(c.get('runtime', '?')))} runtime · "
        f"{escape(str(c.get('repeat', '?')))} attempts per measurement · CPUs "
        f"{escape(cond.cpus_text(c.get('cpus')))} · started {escape(str(c.get('started_at', '?')))} · "
        f"commit {escape(str(c.get('git_commit', '?')))}"
    )
    body = [
        f"<h1>HTTP framework benchmark · {escape(model.run_id)}</h1>",
        f'<p class="sub">{subtitle}</p>',
        f"<nav>{nav}</nav>",
        f'<div class="cards">{"".join(cards)}</div>',
        *([f'<p class="sub">{escape(note)}</p>'] if (note := cond.machine_note(c)) else []),
        '<p class="muted">req/s is the median of the attempts, whiskers and bands its confidence interval, CV the '
        "attempts' spread (coefficient of variation). Latency percentiles are those of the median attempt. CPU is the "
        "share of the CPUs each side was pinned to; µs/req the server's CPU time per request. ≥ marks a lower bound "
        "(the load generator or the upstream was the limit). Flags explain a figure; only failures, errors and a failed "
        "contract keep it out of the ranking. The dashed line is nginx serving the same bytes from a static file: the "
        "ceiling.</p>",
        f'<p class="muted">{escape(INTERVAL_NOTE)}</p>',
        f'<p class="muted">{escape(method_note(model))}</p>',
        *([f'<p class="sub">{escape(aa)}</p>'] if (aa := aa_text(model)) else []),
        *(
            [
                '<p class="sub"><a href="versus.html">make versus: head ÷ base, its rounds and the two builds\' '
                "footprints</a></p>"
            ]
            if c.get("versus")
            else []
        ),
        "<h2>At a glance</h2>",
        _glance(model),
        calibration_page.html(model.run),
        compliance.html(model.run),
    ]
    missing = cond.not_measured(model.run)
    if missing:
        body.append(
            '<p class="bad">Not measured:</p><ul>' + "".join(f"<li>{escape(m)}</li>" for m in missing) + "</ul>"
        )
    body += [scenario_section(model, s, charts) for s in model.scenarios]
    body += ['<h2 id="servers">Servers</h2>', _servers(model)]
    body += [
        '<h2 id="conditions">Conditions</h2><dl class="cond">'
        + "".join(f"<dt>{escape(k)}</dt><dd>{escape(v)}</dd>" for k, v in cond.items(model.run))
        + "</dl>"
    ]
    body += [
        '<h2 id="flags">Flags</h2><ul class="legend">'
        + "".join(f"<li>{badge(n)} {escape(t)}</li>" for n, t in flag_kinds.legend())
        + "</ul>"
    ]
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta name="viewport" content="width=device-width, initial-scale=1"><title>benchmark {escape(model.run_id)}</title>'
        f"<style>{CSS}</style></head><body><main>\n" + "\n".join(body) + "\n</main></body></html>\n"
    )


def write(model: Model, charts: dict[str, Path], path: Path) -> Path:
    path.write_text(render(model, charts))
    return path
