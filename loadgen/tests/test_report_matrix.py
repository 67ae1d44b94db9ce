"""The matrix of servers × scenario runs (issue 76, report/overview.py) read back from the pages it is written in: every
cell's ratio and range of places is the record's in its scenario's section (its ÷ best and # columns, the ratio the
section's own req/s over its best), ≥ exactly where the figure is a lower bound, ⚑ where a flag explains it, a record
kept out shows why; cells tied with the leader read as tied; the rows go by their mean; summary.md and the terminal
show the same cells. On the recorded bench in the repository (fixtures/bench_20261126), a fresh bench of 6 Dec where it
is beside the checkout (shared/runs), and the fixture with a server kept out (fixtures/results_v2)."""

from __future__ import annotations

import io
import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from harness.export import html, markdown
from harness.judging import flags, ranking
from harness.report import model, overview, terminal
from harness.results import flag_kinds
from harness.results import records as results

FIXTURES = Path(__file__).parent / "fixtures"
BENCH = FIXTURES / "bench_20261126" / "results.json"
KEPT_OUT = FIXTURES / "results_v2" / "results.json"
FRESH = Path(__file__).resolve().parents[3] / "shared" / "runs" / "20261206-032410-bench" / "results.json"
RUNS = [BENCH, KEPT_OUT] + (
    [FRESH] if FRESH.is_file() else [pytest.param(FRESH, marks=pytest.mark.skip(reason="shared/runs is not here"))]
)


class Tables(HTMLParser):
    """Every table of a page: its class, the heading (h2/h3 id) and folded summary it stands under, its rows of cells
    (text, class, the first link's href and title)."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.tables: list[dict[str, Any]] = []
        self.where, self.summary = "", ""
        self.table: dict[str, Any] | None = None
        self.row: list[dict[str, Any]] | None = None
        self.cell: dict[str, Any] | None = None
        self.in_summary = self.badge = False
        self.feed(text)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag in ("h2", "h3") and a.get("id"):
            self.where, self.summary = str(a["id"]), ""
        elif tag == "summary":
            self.in_summary, self.summary = True, ""
        elif tag == "table":
            self.table = {"class": a.get("class") or "", "where": self.where, "summary": self.summary, "rows": []}
            self.tables.append(self.table)
        elif tag == "tr" and self.table is not None:
            self.row = []
            self.table["rows"].append(self.row)
        elif tag in ("td", "th") and self.row is not None:
            self.cell = {"text": "", "class": a.get("class") or "", "href": None, "title": None, "badges": []}
            self.row.append(self.cell)
        elif tag == "span" and self.cell is not None and a.get("class") == "badge":
            self.badge = True
            self.cell["badges"].append("")
        elif tag == "a" and self.cell is not None and self.cell["href"] is None:
            self.cell["href"], self.cell["title"] = a.get("href"), a.get("title")

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th"):
            self.cell = None
        elif tag == "span":
            self.badge = False
        elif tag == "table":
            self.table = self.row = None
        elif tag == "summary":
            self.in_summary = False

    def handle_data(self, data: str) -> None:
        if self.cell is not None:
            self.cell["text"] += data
            if self.badge:
                self.cell["badges"][-1] += data
        elif self.in_summary:
            self.summary += data


def built(path: Path) -> model.Model:
    run = results.load(path)
    flags.evaluate(run)
    return model.build(run)


@pytest.fixture(scope="module", params=RUNS, ids=lambda p: p.parent.name)
def run(request: pytest.FixtureRequest) -> tuple[model.Model, overview.Overview, list[dict[str, Any]]]:
    m = built(request.param)
    return m, overview.build(m), Tables(html.render(m, {})).tables


def section_rows(tables: list[dict[str, Any]], column: overview.Column) -> dict[str, dict[str, str]]:
    """The rows of a column's measurement tables in its scenario's section (ranked and kept out): {server: {header:
    text}}, found under the heading the column's header links to (and, in a scenario of many runs, its fold)."""
    out = {}
    for table in tables:
        if table["where"] != column.anchor or table["class"] == "matrix":
            continue
        if table["summary"] and not table["summary"].startswith(f"{column.scenario} · {column.run}:"):
            continue
        header = [c["text"] for c in table["rows"][0]]
        if "÷ best" not in header:
            continue  # a chart's table, a mix's endpoints
        for row in table["rows"][1:]:
            if len(row) == len(header):
                out[row[1]["text"]] = {h: c["text"] for h, c in zip(header, row)}
                out[row[1]["text"]]["flags"] = ", ".join(row[header.index("flags")]["badges"])
    return out


def matrix_cells(tables: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], dict[str, list[dict[str, Any]]]]:
    """The matrix's header cells and, per server, its cells (the server's name cell and mean left out)."""
    table = next(t for t in tables if t["class"] == "matrix")
    rows = {}
    for row in table["rows"][1:]:
        name = row[0]["text"].split("A/A:")[0].removesuffix(" (ceiling)").strip()
        rows[name] = row[2:]
    return table["rows"][0], rows


def figure(text: str) -> float:
    return float(text.removeprefix("≥ ").replace(",", ""))


def rounding(text: str) -> float:
    """Half the last shown digit of a figure: how far the figure shown may be from the one measured."""
    decimals = len(text.split(".")[1]) if "." in text else 0
    return 0.5 * 10**-decimals


def test_every_cell_is_the_records_ratio_and_places_in_its_scenarios_section(run):
    m, view, tables = run
    header, rows = matrix_cells(tables)
    checked = 0
    for i, column in enumerate(view.columns):
        assert header[2 + i]["href"] == f"#{column.anchor}"  # the header links to the section it is checked against
        section = section_rows(tables, column)
        ranked = [r for r in section.values() if r["#"] not in ("ceiling", "⚑")]
        top = max((r["req/s"] for r in ranked), key=figure)
        best = figure(top)
        for server, cells in rows.items():
            cell = cells[i]
            assert cell["href"] == f"#{column.anchor}"
            if server not in section:
                assert cell["text"] == "·" and "not measured" in cell["title"]
                continue
            record = section[server]
            if record["#"] == "⚑":
                kept = [n for n in record["flags"].split(", ") if n in flag_kinds.EXCLUDING]
                assert cell["text"] == f"out: {', '.join(kept)}"
                continue
            explained = [n for n in record["flags"].split(", ") if n and n not in flag_kinds.LOWER_BOUND]
            place = f" · {record['#']}" if "–" in record["#"] else ""
            assert cell["text"] == record["÷ best"] + place + (" ⚑" if explained else ""), (server, column.title)
            assert cell["text"].startswith("≥") == record["req/s"].startswith("≥")
            shown = figure(record["req/s"])
            slack = 0.005 + shown / best * (rounding(record["req/s"]) / shown + rounding(top) / best)
            assert figure(record["÷ best"]) == pytest.approx(shown / best, abs=slack), (server, column.title)
            checked += 1
    assert checked >= len(view.columns) * 2


def test_a_lower_bound_shows_its_sign_and_a_record_kept_out_its_reason():
    fresh = built(FRESH) if FRESH.is_file() else built(BENCH)
    view = overview.build(fresh)
    bounded = [
        (row.server, col.title, cell)
        for row in view.rows
        for col, cell in zip(view.columns, row.cells)
        if cell.lower_bound
    ]
    assert bounded and all(cell.text.startswith("≥ ") for _, _, cell in bounded)
    assert all(ranking.is_lower_bound(cell.record) for _, _, cell in bounded if cell.record)
    rust = next(row for row in view.rows if row.server == "rust")
    # rust's low-compute req/s is a lower bound in both runs; on 6 Dec's it is the column's best
    assert (
        rust.cells[0].text.startswith("≥ 1.00" if FRESH.is_file() else "≥ ")
        and view.columns[0].title == "low-compute c1000"
    )

    kept = overview.build(built(KEPT_OUT))
    py500 = next(row for row in kept.rows if row.server == "py500")
    hello = next(i for i, c in enumerate(kept.columns) if c.title == "hello c100")
    cell = py500.cells[hello]
    assert cell.text == "out: contract-failed, errors" and cell.ratio is None
    assert "1,136 of 1,136 requests failed" in cell.why and "15 of 28 contract checks failed" in cell.why
    assert py500.mean is None and py500.mean_text(kept.complete) == "-" and kept.rows[-1] is py500
    page = html.render(built(KEPT_OUT), {})
    matrix = page.split('<table class="matrix">')[1].split("</table>")[0]
    assert re.search(r'<td class="out"><a href="#hello-c100" title="[^"]*1,136 of 1,136 requests failed', matrix)


def test_cells_tied_with_the_leader_read_as_tied_and_their_places_overlap_its():
    m = built(BENCH)
    view = overview.build(m)
    column = next(i for i, c in enumerate(view.columns) if c.title == "high-compute c10")
    tied = {row.server for row in view.rows if row.cells[column].tied}
    assert tied == {"rust", "spray", "play", "socko", "pekko", "finagle", "akka"}
    for i, col in enumerate(view.columns):
        leader = max((s for s in col.group.ranked if s.rank == 1), key=lambda s: s.record.rps or 0.0)
        for row in view.rows:
            cell = row.cells[i]
            if cell.tied:  # its best place is no lower than the leader's worst
                assert int(cell.place.split("–")[0]) <= leader.worst, (row.server, col.title)
    page = html.render(m, {})
    matrix = page.split('<table class="matrix">')[1].split("</table>")[0]
    assert matrix.count('<td class="top"') == sum(c.tied for row in view.rows for c in row.cells)


def test_rows_go_by_their_mean_with_places_that_never_contradict_it(run):
    _, view, _ = run
    means = [row.mean for row in view.rows if row.mean is not None]
    assert means == sorted(means, reverse=True)
    spans = [[int(p) for p in row.place.split("–")] for row in view.rows if row.mean is not None]
    for above, below in zip(spans, spans[1:]):
        assert above[0] <= below[0] and above[-1] <= below[-1]
    assert all(not row.twin or row.twin not in {r.server for r in view.rows} for row in view.rows)
    assert all(row.ceiling for row in view.ceilings) and not any(row.ceiling for row in view.rows)


def test_summary_md_and_the_terminal_show_the_same_cells(run):
    m, view, tables = run
    md = markdown.render(m)
    lines = md.split("## Every server, scenario by scenario")[1].split("\n## ")[0].strip().splitlines()
    head = lines[0]
    for column in view.columns:  # each header links to its run's heading
        anchor = markdown.heading_anchor(f"{column.scenario} · {column.run}")
        assert f"(#{anchor})" in head and f"\n### {column.scenario} · {column.run}\n" in md
    _, html_rows = matrix_cells(tables)
    for line, row in zip(lines[2:], view.rows + view.ceilings):
        cells = [c.strip().strip("*_") for c in line.strip("|").split(" | ")]
        assert cells[2 : 2 + len(view.columns)] == [c["text"] for c in html_rows[row.server]][: len(view.columns)]
    out = io.StringIO()
    Console(file=out, width=250, color_system=None).print(terminal.matrix_table(view))
    printed = out.getvalue()
    for row in view.rows + view.ceilings:
        line = next(t for t in printed.splitlines() if f" {row.server} " in t)
        shown = [c.text for c in row.cells if c.text]
        assert all(text in line for text in shown), (row.server, line)


def test_an_open_model_scenario_is_said_to_be_read_by_capacity_not_left_out_silently():
    view = overview.build(built(BENCH))
    assert view.stepped == [] and view.stepped_note == ""
    stepped = overview.Overview(view.columns, view.rows, view.ceilings, view.aa, view.probed, ["latency"])
    note = "Not in the matrix: latency, open-model steps read by capacity (in its section)."
    assert stepped.stepped_note == note and note in markdown.overview_lines(stepped)
