"""report.html: one self-contained page (inline CSS, charts embedded as data: URIs, no script, no external fetch), so
it works opened from disk, offline, mailed or copied alone as one file. Its first screen is the answer: the matrix of
every server × scenario run (overview.py, drawn by overview_html.py), then the at-a-glance rows, one line per server
that may be first, both fitting the page's width; the method folded below them, each paragraph under an anchor the
figure it explains links to (first_screen.py); the sections after (html_sections.py)."""

from __future__ import annotations

from html import escape
from pathlib import Path

import harness.report.run_conditions as cond
from harness.export import overview_html
from harness.export.html_sections import scenario_section, servers
from harness.export.html_style import CSS, badge, swatch
from harness.report import calibration_page, compliance, overview, resolution_text
from harness.report.cells import capacity_text, flag_names
from harness.report.first_screen import Glance, aa_conditions, glance, method
from harness.report.model import Model
from harness.results import flag_kinds

# (header, the method paragraph or section that explains it, class) of the at-a-glance table; compliance only where
# the run probed its servers
GLANCE_COLUMNS = [
    ("scenario", "", "l"),
    ("run", "", "l"),
    ("best (places)", "method-ranking", "l"),
    ("req/s", "method-rps", ""),
    ("µs/req", "method-cpu", ""),
    ("p99 ms", "method-latency", ""),
    ("of ceiling", "method-ceiling", ""),
    ("compliance", "compliance", "l"),
    ("ranked", "method-ranking", ""),
    ("kept out", "method-flags", "l"),
    ("note", "", "l"),
]


def _glance_head(with_compliance: bool) -> str:
    cells = []
    for header, anchor, css in GLANCE_COLUMNS:
        if header == "compliance" and not with_compliance:
            continue
        text = f'<a href="#{anchor}">{escape(header)}</a>' if anchor else escape(header)
        cells.append(f'<th class="{css}">{text}</th>')
    return "<tr>" + "".join(cells) + "</tr>"


def _glance_rows(model: Model, row: Glance, with_compliance: bool) -> str:
    """A group's lines: one per server that may be first (its figures in its own cells, so seven tied servers make
    seven short lines, not one wide one); the group's own cells span them."""
    span = max(1, len(row.leaders))
    spanned = f' rowspan="{span}"' if span > 1 else ""
    flagged = "".join(badge(n) for n in sorted({n for r in row.group.flagged for n in flag_names(r)}))
    notes = "; ".join(f'<a href="#{anchor}">{escape(text)}</a>' for text, anchor in row.notes)
    first = (
        f'<td class="l"{spanned}><a href="#{escape(overview.section_anchor(model, row.group))}">{escape(row.scenario)}</a></td>'
        f'<td class="l"{spanned}>{escape(row.run)}</td>'
    )
    last = (
        f'<td{spanned}>{row.ranked}</td><td class="l wrap"{spanned}>{row.kept_out or ""} {flagged}</td>'
        f'<td class="note muted"{spanned}>{notes}</td>'
    )
    if not row.leaders:
        blank = "<td>-</td>" * (5 if with_compliance else 4)
        return f'<tr class="first">{first}<td class="l muted">none ranked</td>{blank}{last}</tr>'
    lines = []
    for i, leader in enumerate(row.leaders):
        comp = f'<td class="comp l">{escape(leader.compliance)}</td>' if with_compliance else ""
        cells = (
            f'<td class="l">{swatch(model, leader.record.server)}{escape(leader.name)}</td>'
            f'<td class="rps">{escape(leader.rate)}</td><td>{escape(leader.cost)}</td><td>{escape(leader.p99)}</td>'
            f"<td>{escape(leader.of_ceiling)}</td>{comp}"
        )
        lines.append(f'<tr class="first">{first}{cells}{last}</tr>' if i == 0 else f'<tr class="more">{cells}</tr>')
    return "".join(lines)


def _capacity_rows(model: Model, with_compliance: bool) -> str:
    """An open-model scenario's line: the server that held the highest rate within the latency target."""
    out = []
    for scenario in (s for s in model.scenarios if s.is_stepped):
        caps = model.capacities(scenario.name)
        top = caps[0] if caps and caps[0][1]["rps"] else None
        comp = (
            f'<td class="comp l">{escape(model.compliance_of(top[0]) if top else "-")}</td>' if with_compliance else ""
        )
        out.append(
            f'<tr class="first"><td class="l"><a href="#{escape(scenario.name)}">{escape(scenario.name)}</a></td>'
            f'<td class="l">capacity at p99 ≤ {model.slo_p99_ms:g} ms</td>'
            f'<td class="l">{escape(top[0]) if top else "none"}</td><td class="rps">'
            f"{escape(capacity_text(top[1])) if top else '-'}</td><td>-</td><td>-</td><td>-</td>{comp}"
            f"<td>{sum(1 for _, c in caps if c['rps'])}</td><td class=l>{sum(1 for _, c in caps if not c['rps'])}</td>"
            "<td></td></tr>"
        )
    return "".join(out)


def glance_section(model: Model) -> str:
    """The first screen's table: per scenario and run, the servers that may be first, with their figures."""
    probed = bool(model.run.compliance)
    glances = glance(model)
    rows = "".join(_glance_rows(model, row, probed) for row in glances) + _capacity_rows(model, probed)
    line = resolution_text.resolution_line(model)
    duels = resolution_text.duel_suggestions(model, glances)
    return (
        '<section id="at-a-glance"><h2 id="glance">At a glance</h2>'
        f'<table class="glance">{_glance_head(probed)}{rows}</table>'
        + (f'<p class="resolution" id="resolution">{escape(line)}</p>' if line else "")
        + (
            '<p class="muted">Tied first places, settled head to head:</p><ul class="duels">'
            + "".join(f"<li>{escape(d)}</li>" for d in duels)
            + "</ul>"
            if duels
            else ""
        )
        + '<p class="muted">Each line is a server that may be first: its range of places where the intervals cannot '
        'order it against the others. Every header links to what it means (<a href="#method">how these figures are '
        "measured and ranked</a>).</p></section>"
    )


def method_section(model: Model) -> str:
    """The method, folded: each paragraph under the anchor its figure links to (a link opens the fold)."""
    paragraphs = "".join(
        f'<p id="{anchor}"><b>{escape(title)}.</b> {escape(text)}</p>' for anchor, title, text in method(model)
    )
    return (
        '<details class="method" id="method"><summary>How these figures are measured and ranked</summary>'
        f"{paragraphs}</details>"
    )


def _cards(model: Model) -> str:
    records = model.records
    ranked = sum(1 for r in records if r.ranked)
    counts: dict[str, int] = {}
    for r in records:
        for n in flag_names(r):
            counts[n] = counts.get(n, 0) + 1
    bad = " bad" if ranked < len(records) else ""
    cards = [
        f'<div class="card"><b>{len(records)}</b>measurements</div>',
        f'<div class="card"><b>{ranked}</b>ranked</div>',
        f'<div class="card{bad}"><b>{len(records) - ranked}</b>kept out (failures, errors, contract)</div>',
    ]
    cards += [
        f'<div class="card bad"><b>{n}</b>{badge(name)}</div>'
        for name, n in sorted(counts.items(), key=lambda kv: -kv[1])
    ]
    return f'<div class="cards">{"".join(cards)}</div>'


def _header(model: Model) -> list[str]:
    """The title, one line of what was run, and where to go."""
    c = model.conditions
    nav = "".join(f'<a href="#{escape(s.name)}">{escape(s.name)}</a>' for s in model.scenarios)
    nav += '<a href="#compliance">compliance</a>' if model.run.compliance else ""
    nav += '<a href="#servers">servers</a><a href="#conditions">conditions</a><a href="#flags">flags</a>'
    subtitle = (
        f"{escape(str(c.get('profile', '?')))} profile · {escape(str(c.get('runtime', '?')))} runtime · "
        f"{escape(str(c.get('repeat', '?')))} attempts per measurement · CPUs "
        f"{escape(cond.cpus_text(c.get('cpus')))} · started {escape(str(c.get('started_at', '?')))} · "
        f"commit {escape(str(c.get('git_commit') or '?'))}"
    )
    versus = (
        [
            '<p class="sub"><a href="versus.html">make versus: head ÷ base, its rounds and the two builds\' footprints</a> '
            "(versus.html, beside this page in the run's folder: the one file this page does not hold)</p>"
        ]
        if c.get("versus")
        else []
    )
    return [
        f"<h1>HTTP framework benchmark · {escape(model.run_id)}</h1>",
        f'<p class="sub">{subtitle}</p>',
        overview_html.section(model, overview.build(model)),
        glance_section(model),
        method_section(model),
        *versus,
        f"<nav>{nav}</nav>",
        _cards(model),
    ]


def _appendix(model: Model) -> list[str]:
    """Servers, conditions and the flags' legend, after the scenarios."""
    pairs = cond.items(model.run) + aa_conditions(model)
    conditions = "".join(f"<dt>{escape(k)}</dt><dd>{escape(v)}</dd>" for k, v in pairs)
    legend = "".join(f"<li>{badge(n)} {escape(t)}</li>" for n, t in flag_kinds.legend())
    return [
        '<h2 id="servers">Servers</h2>',
        servers(model),
        f'<h2 id="conditions">Conditions</h2><dl class="cond">{conditions}</dl>',
        f'<h2 id="flags">Flags</h2><ul class="legend">{legend}</ul>',
    ]


def render(model: Model, charts: dict[str, Path]) -> str:
    body = _header(model) + [calibration_page.html(model.run), compliance.html(model.run)]
    missing = cond.not_measured(model.run)
    if missing:
        body.append(
            '<p class="bad">Not measured:</p><ul>' + "".join(f"<li>{escape(m)}</li>" for m in missing) + "</ul>"
        )
    body += [scenario_section(model, s, charts) for s in model.scenarios]
    body += _appendix(model)
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta name="viewport" content="width=device-width, initial-scale=1"><title>benchmark {escape(model.run_id)}</title>'
        f"<style>{CSS}{overview_html.CSS}</style></head><body><main>\n" + "\n".join(body) + "\n</main></body></html>\n"
    )


def write(model: Model, charts: dict[str, Path], path: Path) -> Path:
    path.write_text(render(model, charts))
    return path
