"""The report written from a recorded results.json (fixtures/results_v2), the console table, and `compare`."""

import copy
import csv
import io
import json
import re
import shutil
from pathlib import Path

import pytest

from harness.export import command
from harness.export.files import write_report
from harness.history import compare
from harness.judging import flags
from harness.report import model
from harness.report import terminal as console
from harness.results import records as results
from harness.results.records import ResultsError

FIXTURE = Path(__file__).parent / "fixtures" / "results_v2" / "results.json"


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    run = tmp_path_factory.mktemp("run")
    shutil.copy(FIXTURE, run / "results.json")
    written = write_report(run)
    return run, written


@pytest.fixture(scope="module")
def data():
    run = results.load(FIXTURE)
    flags.evaluate(run)
    return run


def test_every_file_is_written(report):
    run, written = report
    names = {p.name for p in written}
    assert {"report.html", "summary.md", "summary.csv"} <= names
    pngs = sorted((run / "charts").glob("*.png"))
    assert pngs and {p.name for p in pngs} <= names
    for png in pngs:
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    expected = {
        "hello-c100-rps.png",
        "hello-c100-latency.png",
        "backend-keepalive-rps.png",
        "weather-rps-matrix.png",
        "weather-p99-matrix.png",
        "tweets-c100-rps.png",
    }
    assert expected <= {p.name for p in pngs}
    assert not (run / "charts" / "tweets-c100-latency.png").exists()  # httperf gives no percentiles


def test_charts_drawn_by_several_processes_are_those_one_draws(tmp_path, data, monkeypatch):
    from harness.basics import parallel
    from harness.export import charts

    m = model.build(data)
    monkeypatch.setattr(parallel.os, "sched_getaffinity", lambda pid: {0})
    alone = charts.write(m, tmp_path / "one")
    monkeypatch.setattr(parallel.os, "sched_getaffinity", lambda pid: {0, 1, 2})
    shared = charts.write(m, tmp_path / "three")
    assert list(shared) == list(alone) and len(alone) > 3
    for key, path in alone.items():
        assert shared[key].parent == tmp_path / "three" and shared[key].read_bytes() == path.read_bytes(), key


def test_html_is_self_contained(report):
    run, _ = report
    html = (run / "report.html").read_text()
    assert "<style>" in html
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", html)  # nothing fetched from anywhere
    assert "<script" not in html and "@import" not in html and "url(" not in html
    images = re.findall(r'<img alt="[^"]*" src="([^"]+)"', html)
    assert len(images) == len(list((run / "charts").glob("*.png")))
    assert all(src.startswith("data:image/png;base64,") for src in images)


def test_html_ranks_clean_records_and_sets_flagged_ones_apart(report):
    run, _ = report
    html = (run / "report.html").read_text()
    for section in ("At a glance", 'id="servers"', 'id="conditions"', 'id="flags"', "kept out of the ranking"):
        assert section in html
    # the erroring server's reasons are on the page, in a flagged row, never with a rank
    assert "1,136 of 1,136 requests failed" in html
    row = re.search(r'<tr class="flagged"><td class="rank">([^<]*)</td><td class="l"><span[^>]*></span>py500<', html)
    assert row and row.group(1) == "⚑"
    assert "load generator at 99 % of the 1 core(s) its tool could use" in html
    for text in ("runtime", "CPU sets", "machine", "tool wrk", "git commit", "warm-up", "profile"):
        assert f"<dt>{text}</dt>" in html


def test_markdown_tables(report):
    run, _ = report
    md = (run / "summary.md").read_text()
    assert md.startswith("# Benchmark run 20261122-051300-fixture")
    ranking = md.split("### backend · keepalive")[1].split("###")[0]
    assert "**kept out of the ranking" not in ranking
    assert "| ceiling | nginx | 30,894 | 29,818 – 32,801 (75 %) |" in ranking
    assert "| 1 | rust | 31,774 | 29,694 – 35,584 (75 %) | 9.2% |" in ranking  # CV 9.2 %: no longer flagged
    assert "| 2 | node | 12,021 |" in ranking
    section = md.split("### backend · close")[1].split("###")[0]
    assert "**kept out of the ranking" not in section  # a spread widens rust's interval: it is ranked through it
    assert "| 1 | rust | 6,356 | 6,142 – 9,437 (75 %) |" in section and "| 2 | node | 1,705 |" in section
    assert "- rust: **spread**: req/s: CV 25.2% between attempts" in section
    glance = md.split("## At a glance")[1].split("\n## ")[0]
    row = next(line for line in glance.splitlines() if line.startswith("| backend | keepalive |"))
    assert row.startswith("| backend | keepalive | rust | 31,774 |") and row.endswith("| 103% | 2 | 0 |  |")
    assert "## Servers" in md and "## Conditions" in md and "| rust |" in md.split("## Servers")[1]


def test_csv_has_one_row_per_record_with_its_flags(report, data):
    run, _ = report
    rows = list(csv.DictReader(io.StringIO((run / "summary.csv").read_text())))
    assert len(rows) == len(data.records)
    by = {(r["server"], r["scenario"], r["run"]): r for r in rows}
    py500 = by["py500", "hello", "c100"]
    assert py500["ranked"] == "no" and py500["flags"] == "contract-failed;errors" and py500["rank"] == ""
    assert float(py500["error_rate"]) == 1.0
    node = by["node", "backend", "keepalive"]
    assert node["rank"] == "2" and node["ranked"] == "yes" and node["attempts"] == "3"
    assert (node["rps_ci_low"], node["rps_ci_high"], node["rps_ci_level"], node["rps_ci_method"]) == (
        "11415.03",
        "12260.37",
        "0.75",
        "min-max",
    )
    assert len(node["attempt_rps"].split(";")) == 3 and float(node["rps_min"]) <= float(node["rps_median"]) <= float(
        node["rps_max"]
    )
    assert float(by["rust", "hello", "c1000-t1"]["loadgen_cpu_util"]) >= 0.9


def test_model_groups_ceilings_and_ranks(data):
    m = model.build(copy.deepcopy(data), {"hello": "", "backend": "", "weather": ""})
    assert [s.name for s in m.scenarios][:3] == ["hello", "backend", "weather"]  # the scenarios file's order
    groups = {(g.scenario, g.run): g for s in m.scenarios for g in s.groups}
    assert groups["hello", "c100"].ceiling.server == "nginx"
    assert groups["weather", "c4-t4"].ceiling.path == "/weather.json"
    assert groups["tweets", "c100"].ceiling is None  # nginx does not serve tweets
    for g in groups.values():
        ranked = [s.record for s in g.ranked]
        assert all(r.ranked for r in ranked) and not any(r.ranked for r in g.flagged)
        assert [r.rps for r in ranked] == sorted((r.rps for r in ranked), reverse=True)
        assert all(r.server != "nginx" for r in ranked + g.flagged)
    weather = next(s for s in m.scenarios if s.name == "weather")
    assert weather.is_matrix and len(weather.groups) == 9


def test_an_older_results_file_is_refused(tmp_path):
    (tmp_path / "results.json").write_text(json.dumps({"records": [{"server": "a", "attempts": 1}]}))
    with pytest.raises(ResultsError, match="older harness"):
        write_report(tmp_path)


def test_console_table_shows_what_is_kept_out_first(data):
    flagged, clean = console.rows(model.build(data))
    assert flagged and all(not r.ranked for _, r in flagged) and all(r.ranked for _, _, r in clean)
    assert any(r.flags for _, _, r in clean)  # a flag explains a ranked figure (spread, a lower bound)
    table = console.table(model.build(data), "run")
    assert table.row_count == len(data.records)
    marks = list(table.columns[0].cells)
    assert marks[: len(flagged)] == ["⚑"] * len(flagged)
    assert "⚑" not in marks[len(flagged) :]


# -- compare -----------------------------------------------------------------------------------------------------------


def scaled(d: dict, server: str, factor: float) -> dict:
    out = copy.deepcopy(d)
    out["run_id"] = "b"
    for r in out["records"]:
        if r["server"] == server:
            for a in r["attempts"]:
                if a["rps"] is not None:
                    a["rps"] *= factor
            r["rps"] *= factor
            r["summary"] = None
    return out


def test_compare_two_runs(tmp_path, data):
    a_dir, b_dir = tmp_path / "a", tmp_path / "b"
    a_dir.mkdir(), b_dir.mkdir()
    shutil.copy(FIXTURE, a_dir / "results.json")
    b = scaled(json.loads(FIXTURE.read_text()), "rust", 2.0)
    b["records"] = [r for r in b["records"] if r["server"] != "py500"]
    (b_dir / "results.json").write_text(json.dumps(b))
    rows = {(r.server, r.scenario, r.run): r for r in compare.rows(compare.load(a_dir), compare.load(b_dir))}
    hello = rows["rust", "hello", "c100"]
    assert hello.rps.delta == pytest.approx(1.0) and hello.rps.significant is True
    assert rows["node", "hello", "c100"].rps.delta == 0 and rows["node", "hello", "c100"].rps.significant is False
    assert rows["py500", "hello", "c100"].b is None
    # rust hello climbed 35,266 → 38,757 → 40,867 in that run (a trend of +15 %): warming on both sides
    assert hello.flags == ["A:warming", "B:warming"] and rows["rust", "backend", "close"].flags == [
        "A:spread",
        "B:spread",
    ]
    table, notes = compare.compare(a_dir, b_dir)
    assert table.row_count == len(rows) - 1  # py500 is listed under the table
    assert "1 measurements only in A: hello (py500)" in notes
    assert any(n.startswith("geomean") for n in notes)


def test_resolve_run_ids(tmp_path):
    for name in ("20261122-050300-hello", "20261122-060000-bench"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "results.json").write_text("{}")
    (tmp_path / "latest").symlink_to("20261122-060000-bench")
    assert command.resolve("latest", tmp_path).name == "latest"
    assert command.resolve("20261122-05", tmp_path).name == "20261122-050300-hello"
    assert (
        command.resolve(str(tmp_path / "20261122-060000-bench" / "results.json"), tmp_path).name
        == "20261122-060000-bench"
    )
    with pytest.raises(command.RunNotFound, match="several runs"):
        command.resolve("20261122", tmp_path)
    with pytest.raises(command.RunNotFound, match="no run"):
        command.resolve("nope", tmp_path)


def test_servers_without_measurements_are_named(tmp_path):
    d = json.loads(FIXTURE.read_text())
    d["servers"]["akka"] = {"started": False, "error": "port 8081 is taken"}
    d["servers"]["spray"] = {"started": True}
    d["verification"]["spray"] = {"ok": False, "checks": 40, "failures": ["GET /id: status 500, expected 200"]}
    (tmp_path / "results.json").write_text(json.dumps(d))
    write_report(tmp_path)
    for text in ((tmp_path / "report.html").read_text(), (tmp_path / "summary.md").read_text()):
        assert "akka: did not start (port 8081 is taken)" in text
        assert "spray: not benchmarked, it fails the contract: FAILED (1 of 40 checks)" in text


def test_report_html_copied_alone_reads_the_same(report, tmp_path):
    """Issue 76: the page holds its charts (data: URIs) and links only inside itself, so a copy of report.html alone
    shows all of it; the one file it names beside it (a versus run's versus.html) says where that file is."""
    run, _ = report
    alone = tmp_path / "copied" / "report.html"
    alone.parent.mkdir()
    shutil.copy(run / "report.html", alone)
    page = alone.read_text()
    refs = re.findall(r"""(?:src|href)=["']([^"']+)""", page)
    assert refs and all(ref.startswith(("#", "data:image/png;base64,")) for ref in refs), {
        r[:40] for r in refs if not r.startswith(("#", "data:"))
    }
    ids = set(re.findall(r'id="([^"]+)"', page))
    assert {ref[1:] for ref in refs if ref.startswith("#")} <= ids  # every link lands on the page itself
    d = json.loads(FIXTURE.read_text())
    d["conditions"]["versus"] = {"results": []}
    (tmp_path / "results.json").write_text(json.dumps(d))
    write_report(tmp_path)
    versus = (tmp_path / "report.html").read_text()
    assert re.search(r'<a href="versus.html">[^<]*</a> \(versus.html, beside this page in the run\'s folder', versus)
