"""The HTML report's look, shared by its page (html.py) and its sections (html_sections.py): the inline style sheet,
flag badges, colour swatches and embedded charts."""

from __future__ import annotations

import base64
from html import escape
from pathlib import Path

from harness.report.model import Model
from harness.results import flag_kinds

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
table.glance td { border-bottom: 0; }
table.glance tr.first td { border-top: 1px solid var(--line); }
table.glance td.wrap, table.glance td.note { white-space: normal; text-align: left; }
table.glance td.note { min-width: 150px; max-width: 240px; font-size: 12px; }
table.glance td.comp { white-space: normal; max-width: 260px; font-size: 12px; }
th a, td.note a { color: inherit; text-decoration: underline dotted; }
details.method { margin: 14px 0 0; }
details.method p { max-width: 1000px; margin: 6px 0; }
details.method b { color: var(--fg); }
"""


def img(path: Path | None, alt: str) -> str:
    """A chart embedded as a data: URI (the page is one self-contained file); '' where it was not drawn."""
    if not path or not path.exists():
        return ""
    data = base64.b64encode(path.read_bytes()).decode("ascii")
    return f'<img alt="{escape(alt)}" src="data:image/png;base64,{data}">'


def badge(name: str) -> str:
    return f'<span class="badge" style="background:{FLAG_COLORS.get(name, "#555")}">{escape(name)}</span>'


def swatch(model: Model, server: str) -> str:
    """The server's colour, as in the charts."""
    return f'<span class="sw" style="background:{model.colors.get(server, "#999")}"></span>'
