"""The report's first screen in a real browser (headless Chromium at 1400 px): the matrix of every server × scenario
run comes first, then the at-a-glance table, and neither scrolls sideways; every cell of the matrix is on the first
screen and not covered, on a recorded bench of eleven servers and nine scenario runs whose high-compute row has seven
servers tied for first (fixtures/bench_20261126), with each server's compliance score from a real probe beside its
figures, and on the same bench with a server of a long name."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from html import escape
from pathlib import Path

import pytest

from harness.conformance import suite
from harness.conformance.wire import Timing
from harness.export import html, markdown
from harness.judging import flags
from harness.report import first_screen, model, overview
from harness.results import records as results

pytestmark = pytest.mark.integration  # real servers, load tools or the harness's command line on loopback

sys.path.insert(0, str(Path(__file__).parent / "responders"))
import strict_http11  # noqa: E402

BENCH = Path(__file__).parent / "fixtures" / "bench_20261126" / "results.json"
FRESH = Path(__file__).resolve().parents[3] / "shared" / "runs" / "20261206-032410-bench" / "results.json"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
FAULTS = frozenset({"cl-wins-over-te", "lenient-chunk-size", "host-optional", "plus-content-length"})

# run in the page after it is laid out: how wide the section SECTION is against the window, every element of it whose
# right edge passes the window's, and every cell of its tables that is not wholly in the first screen or is covered
# where it is (the page itself carries no script: this is added to a copy)
MEASURE = """<script>
const section = document.getElementById("SECTION");
const width = document.documentElement.clientWidth;
const height = window.innerHeight;
const over = [...section.querySelectorAll("*")]
  .filter((e) => e.getBoundingClientRect().right > width + 0.5)
  .map((e) => e.tagName + ": " + e.textContent.slice(0, 40));
const cells = [...section.querySelectorAll("table th, table td")];
const hidden = cells.filter((c) => {
  const r = c.getBoundingClientRect();
  if (r.width < 1 || r.height < 1 || r.left < -0.5 || r.right > width + 0.5 || r.bottom > height + 0.5) return true;
  const hit = document.elementFromPoint((r.left + r.right) / 2, (r.top + r.bottom) / 2);
  return !(hit && c.contains(hit));
}).map((c) => c.textContent.slice(0, 40));
const first = section.getBoundingClientRect();
document.body.setAttribute("data-measured", JSON.stringify({
  viewport: window.innerWidth, client: width, page_scroll: document.documentElement.scrollWidth,
  section_scroll: section.scrollWidth, section_client: section.clientWidth, section_top: first.top + window.scrollY,
  over: over, cells: cells.length, hidden: hidden,
}));
</script>"""
LONG_NAME = "socko-on-akka-2-4-netty-with-a-server-name-far-longer-than-any-column"


def probed(faults: frozenset[str]) -> dict:
    """A real probe of the reference responder (tests/responders/strict_http11.py) with `faults`: its entry."""
    server = strict_http11.serve(faults)
    try:
        cases = suite.run("127.0.0.1", server.server_address[1], timing=Timing(answer_s=1.0, settle_s=0.3))
    finally:
        server.shutdown()
        server.server_close()
    return suite.compliance(cases)


@pytest.fixture(scope="module")
def probes():
    """The reference's probe results: (faulty, right)."""
    return probed(FAULTS), probed(frozenset())


def rendered(path: Path, probes: tuple[dict, dict]) -> tuple[model.Model, str]:
    """The bench at `path`, its servers given the reference's probe results in turn (faulty and right), as
    report.html renders it (charts left out: they come after the first screen)."""
    run = results.load(path)
    faulty, right = probes
    run.compliance = {name: (faulty if i % 2 == 0 else right) for i, name in enumerate(run.servers)}
    flags.evaluate(run)
    m = model.build(run)
    return m, html.render(m, {})


@pytest.fixture(scope="module")
def page(probes):
    return rendered(BENCH, probes)


@pytest.fixture(scope="module")
def fresh(probes):
    """The fresh bench of 6 Dec (eight scenario runs) where the recorded runs are beside the checkout."""
    if not FRESH.is_file():
        pytest.skip("the recorded runs (shared/runs) are not beside this checkout")
    return rendered(FRESH, probes)


@pytest.fixture(scope="module")
def long_named(probes, tmp_path_factory):
    """The same bench with socko renamed to a name far wider than any column."""
    data = json.loads(BENCH.read_text())
    for r in data["records"]:
        r["server"] = LONG_NAME if r["server"] == "socko" else r["server"]
    for key in ("servers", "verification"):
        data[key][LONG_NAME] = data[key].pop("socko")
    path = tmp_path_factory.mktemp("long") / "results.json"
    path.write_text(json.dumps(data))
    return rendered(path, probes)


def measured(text: str, folder: Path, width: int, section: str = "at-a-glance") -> dict:
    """The page opened in headless Chromium with a window `width` px wide: MEASURE's findings on `section`."""
    path = folder / f"report-{width}-{section}.html"
    path.write_text(text.replace("</body>", MEASURE.replace("SECTION", section) + "</body>"))
    proc = subprocess.run(
        [
            CHROMIUM,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            f"--user-data-dir={folder / 'profile'}",
            f"--window-size={width},900",
            "--dump-dom",
            path.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    found = re.search(r'data-measured="([^"]*)"', proc.stdout)
    assert found, proc.stderr[-2000:]
    return json.loads(found.group(1).replace("&quot;", '"').replace("&amp;", "&"))


def test_the_first_screen_is_the_table_with_seven_tied_servers_and_their_compliance(page):
    m, text = page
    rows = {(row.scenario, row.run): row for row in first_screen.glance(m)}
    tied = rows["high-compute", "c10"]
    assert [leader.name for leader in tied.leaders] == [
        "rust (1–7)",
        "spray (1–7)",
        "play (1–7)",
        "socko (1–7)",
        "pekko (1–7)",
        "finagle (1–7)",
        "akka (1–7)",
    ]
    assert {leader.compliance for leader in tied.leaders} == {
        "no MUST fail · 100 % passed",
        "11 MUST fail (transfer-encoding) · 92 % passed",
    }
    body = text.split("<main>")[1]
    # the title, one line of what was run, then the answer: the matrix, the at-a-glance rows under it; the method
    # after them, folded
    assert (
        body.index('<section class="matrix" id="matrix">')
        < body.index('<section id="at-a-glance">')
        < body.index('<details class="method" id="method">')
    )
    before = body.split('<section class="matrix" id="matrix">')[0]
    assert before.count("<p") == 1 and "interval" not in before
    glance = body.split('<section id="at-a-glance">')[1].split("</section>")[0]
    assert (
        glance.count("11 MUST fail (transfer-encoding) · 92 % passed") >= 4
        and '<a href="#compliance">compliance</a>' in glance
    )


def test_every_figure_of_the_first_screen_links_to_the_paragraph_that_explains_it(page):
    _, text = page
    glance = text.split('<section id="at-a-glance">')[1].split("</section>")[0]
    method = text.split('<details class="method" id="method">')[1].split("</details>")[0]
    links = set(re.findall(r'href="#(method-[\w-]+)"', glance))
    assert links == {
        "method-ranking",
        "method-rps",
        "method-cpu",
        "method-latency",
        "method-ceiling",
        "method-flags",
    } | {"method-aa"}
    assert links <= set(re.findall(r'<p id="(method-[\w-]+)">', method))
    # the rankings' headers below link to the same paragraphs, and none to a paragraph that is not there
    head = text.split('<h2 id="hello">')[1].split("</tr>")[0]
    assert '<a href="#method-intervals">interval (level)</a>' in head and '<a href="#method-cpu">µs/req</a>' in head
    assert set(re.findall(r'href="#(method-[\w-]+)"', text)) <= set(re.findall(r'<p id="(method-[\w-]+)">', method))
    assert 'href="#compliance"' in glance and '<h2 id="compliance">' in text


@pytest.mark.skipif(not CHROMIUM, reason="headless Chromium is not installed (apt-get install chromium; .ci/run does)")
def test_the_at_a_glance_table_fits_1400_px_without_scrolling_sideways(page, tmp_path):
    _, text = page
    wide = measured(text, tmp_path, 1400)
    assert wide["viewport"] == 1400, wide
    assert wide["over"] == [] and wide["section_scroll"] <= wide["section_client"], wide
    assert wide["section_top"] < 900, wide  # on the first screen, under the matrix
    # the same check on a window too narrow for the table finds what passes its edge: it can fail
    narrow = measured(text, tmp_path, 700)
    assert narrow["over"] and narrow["page_scroll"] > narrow["client"], narrow


def test_compliance_stands_beside_every_ranking_and_in_its_own_section(page):
    """Issue 45 on the redesigned page: each measurement's ranking has the compliance column (the server's score in
    its row), the at-a-glance lines have it, and the section lists each server's failed cases with their RFC."""
    m, text = page
    faulty = m.run.compliance["rust"]
    score = "11 MUST fail (transfer-encoding) · 92 % passed"
    section = text.split('<h2 id="hello">')[1].split("<h2")[0]  # hello has one run, c100
    head = section.split("<tr>")[1]
    assert head.index(">compliance<") < head.index(">flags<")
    rust_row = next(row for row in section.split("<tr") if "</span>rust<" in row)
    assert f"<td>{score}</td>" in rust_row
    compliance = text.split('<h2 id="compliance">HTTP compliance</h2>')[1].split("<h2")[0]
    assert escape(f"rust ({m.run.servers['rust']['stack']}): {score}") in compliance  # whose parser answered
    failed = [c for c in faulty["cases"] if c["verdict"] == "fail"]
    assert f"{len(failed)} failed cases" in compliance and all(
        f'<td class="l">{c["id"]}</td>' in compliance for c in failed
    )
    md = markdown.render(m)
    glance = md.split("## At a glance")[1].split("\n## ")[0]
    assert "[compliance](#http-compliance)" in glance and f"| {score} |" in glance
    assert "## HTTP compliance" in md and f"| {score} |" in md.split("### hello · c100")[1].split("###")[0]


def matrix_cells(text: str) -> int:
    """How many cells the matrix's table has: its header's and every row's."""
    table = text.split('<table class="matrix">')[1].split("</table>")[0]
    return len(re.findall(r"<t[hd][ >]", table))


@pytest.mark.skipif(not CHROMIUM, reason="headless Chromium is not installed (apt-get install chromium; .ci/run does)")
@pytest.mark.parametrize("bench", ["page", "long_named", "fresh"])
def test_the_matrix_fits_1400_px_and_every_cell_is_on_the_first_screen(bench, request, tmp_path):
    """Issue 76: eleven servers (nine rows and the ceiling's, the A/A twin folded) × nine scenario runs, the mean and
    the compliance column, in one table that does not scroll sideways at 1400 px; each cell visible and uncovered on
    the first screen (1400 × 900), also where a server's name is far wider than a column."""
    m, text = request.getfixturevalue(bench)
    runs = len({g.key for s in m.scenarios for g in s.groups})
    assert runs == (8 if bench == "fresh" else 9) and len(m.run.servers) == 11
    wide = measured(text, tmp_path, 1400, "matrix")
    assert wide["viewport"] == 1400, wide
    assert wide["over"] == [] and wide["section_scroll"] <= wide["section_client"], wide
    assert wide["page_scroll"] <= wide["client"], wide
    assert wide["cells"] == matrix_cells(text) == (1 + 10) * (2 + runs + 1), wide
    assert wide["hidden"] == [], wide
    if bench == "long_named":  # ranked as socko was, in a row of its own
        row = next(r for r in overview.build(m).rows if r.server == LONG_NAME)
        assert row.counted == 9 and LONG_NAME in text.split('<table class="matrix">')[1].split("</table>")[0]
    # the same check on a narrow window finds the cells past its edge: it can fail
    narrow = measured(text, tmp_path, 700, "matrix")
    assert narrow["over"] and narrow["hidden"], narrow
