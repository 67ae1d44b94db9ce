"""The report page's first section (issue 76): the matrix of servers × scenario runs (overview.py) as one table that
fits 1400 px for eleven servers and nine runs (more runs scroll inside their box, never the page), each header and cell a link to the section that shows its figure, each
cell shaded by its ratio; the ceiling's row apart, the compliance score a column of its own."""

from __future__ import annotations

from html import escape

from harness.export.html_style import swatch
from harness.report.model import Model
from harness.report.overview import LEGEND, Cell, Column, Overview, ServerRow, shade, twins_note

# the cells' shade: the page's accent colour, its strength by the ratio
SHADE = "rgba(9, 105, 218, {alpha:.2f})"

CSS = """
section.matrix h2 { border-top: 0; margin-top: 18px; padding-top: 0; }
table.matrix { table-layout: auto; width: 100%; margin: 6px 0; font-size: 12.5px; }
table.matrix th, table.matrix td { padding: 4px 6px; border-bottom: 1px solid #eef1f4; }
table.matrix th { position: static; vertical-align: bottom; font-weight: 600; }
table.matrix th span { display: block; font-weight: 400; color: var(--muted); }
table.matrix th a, table.matrix td a { color: inherit; text-decoration: none; display: block; }
table.matrix td.srv { white-space: normal; overflow-wrap: anywhere; min-width: 90px; max-width: 150px; text-align: left; }
table.matrix td.srv small { display: block; color: var(--muted); font-size: 11px; }
table.matrix td.mean { font-weight: 700; border-right: 2px solid var(--line); }
table.matrix td.top { font-weight: 700; box-shadow: inset 3px 0 0 #0969da; }
table.matrix td.out { background: var(--bad); color: #7a1f1f; font-size: 11px; white-space: normal; text-align: left; }
table.matrix td.none { color: var(--muted); }
table.matrix span.flag { color: #9a6700; font-weight: 400; }
table.matrix td.comp { white-space: normal; text-align: left; font-size: 11.5px; min-width: 120px; max-width: 190px;
  border-left: 2px solid var(--line); }
table.matrix tbody.ceiling td { font-style: italic; color: var(--muted); border-top: 2px solid var(--line); }
section.matrix p { font-size: 12.5px; margin: 4px 0; max-width: 1150px; }
"""


def _head(overview: Overview) -> str:
    cells = ['<th class="l">server</th>', '<th><a href="#method-matrix">all<span>geo. mean</span></a></th>']
    for column in overview.columns:
        cells.append(
            f'<th><a href="#{escape(column.anchor)}" title="{escape(column.title)}: its section">'
            f"{escape(column.scenario)}<span>{escape(column.run)}</span></a></th>"
        )
    if overview.probed:
        cells.append('<th class="l"><a href="#compliance">compliance</a></th>')
    return "<thead><tr>" + "".join(cells) + "</tr></thead>"


def cell_html(column: Column, cell: Cell) -> str:
    """A cell: its text linked to its column's section, its flags' reasons on hover, shaded by its ratio."""
    title = escape(f"{column.title}: {cell.why}")
    link = f'href="#{escape(column.anchor)}" title="{title}"'
    if cell.record is None:
        return f'<td class="none"><a {link}>·</a></td>'
    if cell.kept_out:
        return f'<td class="out"><a {link}>{escape(cell.text)}</a></td>'
    mark = ' <span class="flag">⚑</span>' if cell.flags else ""
    css = ' class="top"' if cell.tied else ""
    style = f' style="background:{SHADE.format(alpha=0.05 + 0.4 * shade(cell.ratio))}"'
    return f"<td{css}{style}><a {link}>{escape(cell.text)}{mark}</a></td>"


def _row(model: Model, overview: Overview, row: ServerRow) -> str:
    twin = f"<small>A/A: {escape(row.twin)} folded in</small>" if row.twin else ""
    label = f"{row.server} (ceiling)" if row.ceiling else row.server
    cells = [
        f'<td class="srv">{swatch(model, row.server)}{escape(label)}{twin}</td>',
        f'<td class="mean">{escape(row.mean_text(overview.complete))}</td>',
    ]
    cells += [cell_html(column, cell) for column, cell in zip(overview.columns, row.cells)]
    if overview.probed:
        cells.append(f'<td class="comp">{escape(row.compliance)}</td>')
    return "<tr>" + "".join(cells) + "</tr>"


def section(model: Model, overview: Overview) -> str:
    """The matrix's section, first on the page; '' where the run has no closed-loop group."""
    if not overview.columns:
        return ""
    body = "".join(_row(model, overview, row) for row in overview.rows)
    ceilings = "".join(_row(model, overview, row) for row in overview.ceilings)
    notes = [f'{escape(LEGEND)} The stronger the shade, the nearer the best. <a href="#method-matrix">How.</a>']
    if overview.stepped:
        notes.append(escape(overview.stepped_note))
    if twins := twins_note(overview):
        notes.append(f'{escape(twins)} <a href="#method-aa">The A/A control.</a>')
    return (
        '<section class="matrix" id="matrix"><h2>Every server, scenario by scenario</h2>'
        f'<div class="scroll"><table class="matrix">{_head(overview)}<tbody>{body}</tbody>'
        + (f'<tbody class="ceiling">{ceilings}</tbody>' if ceilings else "")
        + "</table></div>"
        + "".join(f'<p class="muted">{n}</p>' for n in notes)
        + "</section>"
    )
