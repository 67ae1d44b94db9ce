"""The medians' confidence intervals, the spread rule at its edges and the interval ranking, on the attempts recorded in
fixtures/results_v2 (a real run) and on hand-made edge cases. Exact values throughout: these tests fail when the rule
changes."""

import copy
import json
import math
from pathlib import Path

import pytest

from harness.export.files import write_report
from harness.history import compare
from harness.judging import flags, ranking
from harness.report import model
from harness.report import terminal as console
from harness.results import summary as summaries
from harness.results.records import Record, Run
from harness.stats import intervals as stats

FIXTURE = Path(__file__).parent / "fixtures" / "results_v2" / "results.json"


def recorded() -> dict:
    return json.loads(FIXTURE.read_text())


def find(d: dict, server: str, scenario: str, run: str) -> dict:
    return next(r for r in d["records"] if (r["server"], r["scenario"], r["run"]) == (server, scenario, run))


# Attempts of rust on /weather/{city}, in the order they were measured (9 loads × 3 attempts)
RUST_WEATHER = [
    a["rps"]
    for r in recorded()["records"]
    if r["server"] == "rust" and r["scenario"] == "weather"
    for a in r["attempts"]
]


# -- the interval and its coverage -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "n, low, high, level, method, k",
    [
        (3, 2464.62, 4066.31, 0.75, "min-max", 1),
        (4, 2464.62, 7014.06, 0.875, "min-max", 1),
        (5, 2464.62, 7153.29, 0.9375, "min-max", 1),
        (6, 2464.62, 7217.71, 0.96875, "order-statistic", 1),  # the first n whose min–max reaches 95 %
        (10, 3060.68, 10516.07, 0.978515625, "order-statistic", 2),  # [x(2), x(9)]: x(3)..x(8) would cover 89 %
    ],
)
def test_interval_and_its_level_on_recorded_attempts(n, low, high, level, method, k):
    ci = stats.median_interval(RUST_WEATHER[:n])
    assert ci == {"low": low, "high": high, "level": level, "method": method, "k": k}


def test_coverage_is_the_binomial_probability_of_the_median_lying_between_the_order_statistics():
    # [x(k), x(n+1-k)] holds the median when between k and n-k of the n attempts fall below it
    for n in range(1, 31):
        for k in range(1, (n + 1) // 2 + 1):
            direct = sum(math.comb(n, i) for i in range(k, n - k + 1)) / 2**n
            assert stats.coverage(k, n) == pytest.approx(direct, abs=1e-15), (n, k)
    assert [stats.coverage(1, n) for n in (1, 2, 3, 4, 5, 6)] == [0.0, 0.5, 0.75, 0.875, 0.9375, 0.96875]
    assert stats.coverage(2, 10) == 1 - 2 * (1 + 10) / 1024 and stats.coverage(3, 10) == 1 - 2 * (1 + 10 + 45) / 1024
    assert [stats.interval_k(n) for n in (3, 5, 6, 8, 9, 10, 17, 20)] == [1, 1, 1, 1, 2, 2, 5, 6]
    with pytest.raises(ValueError):
        stats.coverage(3, 4)


def evaluated(d: dict) -> Run:
    run = Run.from_dict(d)
    flags.evaluate(run)
    return run


def record(run: Run, server: str, scenario: str, label: str) -> Record:
    return next(r for r in run.records if (r.server, r.scenario, r.run) == (server, scenario, label))


def test_every_recorded_record_gets_its_interval_although_the_file_has_none():
    """results_v2 was written before intervals: they are computed from the attempts when the file is read."""
    d = recorded()
    assert all("ci" not in r["summary"]["rps"] for r in d["records"])
    run = evaluated(d)
    for r in run.records:
        s = r.summary.rps
        assert s["ci"] == {"low": s["min"], "high": s["max"], "level": 0.75, "method": "min-max", "k": 1}
    node = record(run, "node", "hello", "c100").summary.rps
    assert (node["ci"]["low"], node["ci"]["high"]) == (13013.77, 15836.22)


def test_a_stored_summary_without_attempts_gets_the_min_max_interval():
    r = Record.from_dict(
        {
            "server": "s",
            "scenario": "hello",
            "summary": {"rps": {"median": 10.0, "min": 8.0, "max": 13.0, "cv": 0.2, "n": 4}, "p99": None},
            "attempts": [],
        }
    )
    assert summaries.completed(r).rps["ci"] == {"low": 8.0, "high": 13.0, "level": 0.875, "method": "min-max", "k": 1}
    assert "ci" not in r.summary.rps  # the record itself is left alone


# -- a single attempt ------------------------------------------------------------------------------------------------


def test_a_single_attempt_is_a_point_flagged_spread_and_not_ranked():
    d = recorded()
    rust = find(d, "rust", "hello", "c100")
    rust["attempts"] = rust["attempts"][:1]
    rust["rps"], rust["summary"] = rust["attempts"][0]["rps"], None
    run = evaluated(d)
    rust = record(run, "rust", "hello", "c100")
    s = rust.summary.rps
    assert s["n"] == 1 and s["cv"] is None
    assert s["ci"] == {"low": 35266.33, "high": 35266.33, "level": 0.0, "method": "single-attempt", "k": 1}
    assert [f.to_dict() for f in rust.flags] == [
        {"flag": "spread", "reason": "a single attempt: no spread measured (REPEAT=3 or more measures it)"}
    ]
    g = groups(run)["hello", "c100"]
    assert rust in g.flagged and g.rank_label(rust) == ""
    assert [(s.record.server, s.label) for s in g.ranked] == [("node", "1")]


# -- the spread rule at its edges ------------------------------------------------------------------------------------


def spread_of(rates):
    s = stats.describe(list(rates))
    return s, flags.spread_reasons(s)


def test_spread_cv_edge_9_9_against_10_1_percent():
    # ten attempts, eight at 10,000 and two outliers: the interval [x(2), x(9)] is the point 10,000, only the CV moves
    s, reasons = spread_of([10000.0] * 8 + [10000 - 2100.0, 10000 + 2100.0])
    assert s["cv"] == 0.099 and (s["ci"]["low"], s["ci"]["high"]) == (10000.0, 10000.0) and reasons == []
    s, reasons = spread_of([10000.0] * 8 + [10000 - 2143.0, 10000 + 2143.0])
    assert s["cv"] == 0.101
    assert reasons == ["CV 10.1% between attempts, above 10% (7,857 to 12,143)"]


def test_spread_interval_width_edge_19_against_21_percent():
    # six attempts: the interval is the min–max (96.9 %), the CV stays near 6 %
    s, reasons = spread_of([9050.0, 10000.0, 10000.0, 10000.0, 10000.0, 10950.0])
    assert (s["ci"]["high"] - s["ci"]["low"]) / s["median"] == pytest.approx(0.19) and s["cv"] == 0.0601
    assert reasons == []
    s, reasons = spread_of([8950.0, 10000.0, 10000.0, 10000.0, 10000.0, 11050.0])
    assert (s["ci"]["high"] - s["ci"]["low"]) / s["median"] == pytest.approx(0.21) and s["cv"] == 0.0664
    assert reasons == ["interval 8,950 – 11,050 (96.9 %) is ±10.5% of the median 10,000, wider than ±10%"]


def test_spread_reason_names_both_rules_with_their_figures_on_a_recorded_record():
    run = evaluated(recorded())
    node = record(run, "node", "low-compute", "c1000")
    # its attempts climb (889 → 1,552 → 2,389): that is warming, not spread
    assert [f.to_dict() for f in node.flags] == [
        {
            "flag": "warming",
            "reason": (
                "req/s 889 → 1,552 → 2,389: +97% over the attempts (Theil–Sen trend), direction agreement +1.00"
            ),
        }
    ]
    # the same attempts out of order are noise around a level: spread, with both rules' figures
    shuffled = recorded()
    node_d = find(shuffled, "node", "low-compute", "c1000")
    assert [round(a["rps"]) for a in node_d["attempts"]] == [889, 1552, 2389]
    node_d["attempts"] = [node_d["attempts"][i] for i in (1, 2, 0)]  # 1,552 → 2,389 → 889: no direction
    node = record(evaluated(shuffled), "node", "low-compute", "c1000")
    assert [f.to_dict() for f in node.flags] == [
        {
            "flag": "spread",
            "reason": (
                "req/s: CV 46.7% between attempts, above 10% (889 to 2,389); "
                "interval 889 – 2,389 (75 %) is ±48.3% of the median 1,552, wider than ±10%"
            ),
        }
    ]
    # 5.1 % to 10 % of CV is no longer a cliff: rust /hello (CV 7.4 %, interval ±7.2 %) is ranked
    rust = record(run, "rust", "hello", "c100")
    assert rust.summary.rps["cv"] == 0.0739 and rust.ranked is True


# -- ranking: ties where intervals overlap, order where they are apart -----------------------------------------------


def groups(run: Run) -> dict:
    m = model.build(run)
    return {(g.scenario, g.run): g for s in m.scenarios for g in s.groups}


def with_finagle(d: dict) -> dict:
    """A fourth server on hello c100 whose attempts are nginx's recorded ones (32,437 – 36,290): its interval overlaps
    rust's (35,266 – 40,867) and lies entirely above node's (13,014 – 15,836)."""
    finagle = copy.deepcopy(find(d, "nginx", "hello", "c100"))
    finagle["server"] = "finagle"
    d["records"].append(finagle)
    d["verification"]["finagle"] = copy.deepcopy(d["verification"]["nginx"])
    return d


def test_overlapping_intervals_tie_and_disjoint_ones_are_ordered_on_recorded_attempts():
    run = evaluated(with_finagle(recorded()))
    g = groups(run)["hello", "c100"]
    assert [(s.record.server, s.rank, s.label) for s in g.ranked] == [
        ("rust", 1, "1–2"),
        ("finagle", 1, "1–2"),
        ("node", 3, "3"),
    ]  # node: 2 intervals entirely above it
    assert [r.server for r in g.leaders()] == ["rust", "finagle"]
    assert g.ceiling.server == "nginx" and g.rank_label(g.ceiling) == ""  # the ceiling stays apart
    # without finagle: rust and node are apart, 1 and 2
    plain = evaluated(recorded())
    assert [(s.record.server, s.label) for s in groups(plain)["hello", "c100"].ranked] == [("rust", "1"), ("node", "2")]


def test_rank_is_one_plus_the_intervals_entirely_above():
    def rec(name, low, median, high):
        return Record.from_dict(
            {
                "server": name,
                "scenario": "hello",
                "rps": median,
                "attempts": [],
                "summary": {
                    "rps": {
                        "median": median,
                        "n": 3,
                        "cv": 0.05,
                        "ci": {"low": low, "high": high, "level": 0.75, "method": "min-max", "k": 1},
                    }
                },
            }
        )

    a, b, c, e = rec("a", 95, 100, 105), rec("b", 88, 92, 96), rec("c", 80, 85, 90), rec("e", 50, 52, 54)
    ranked = ranking.rank([e, c, b, a])
    # a overlaps b, b overlaps c, only a is above c: a first or second, b anywhere of the three, c second or third;
    # e is below all three: 4
    assert [(s.record.server, s.label) for s in ranked] == [("a", "1–2"), ("b", "1–3"), ("c", "2–3"), ("e", "4")]
    touching = ranking.rank([rec("x", 90, 95, 100), rec("y", 80, 85, 90)])  # touching ends overlap
    assert [s.label for s in touching] == ["1–2", "1–2"]


def test_ranges_of_places_in_every_export_and_the_console_table(tmp_path):
    d = with_finagle(recorded())
    (tmp_path / "results.json").write_text(json.dumps(d))
    write_report(tmp_path)
    md = (tmp_path / "summary.md").read_text()
    glance_md = md.split("| hello | c100 | rust (1–2) |")[1].splitlines()
    assert glance_md[0].startswith(" 38,757 |") and glance_md[0].endswith(" | 111% | 3 | 1 |  |")
    assert glance_md[1].startswith("|  |  | finagle (1–2) | 35,011 |") and "| 100% |" in glance_md[1]  # its own line
    section = md.split("### hello · c100")[1].split("###")[0]
    assert "| 1–2 | rust | 38,757 | 35,266 – 40,867 (75 %) |" in section
    assert "| 1–2 | finagle | 35,011 | 32,437 – 36,290 (75 %) |" in section and "| 3 | node | 14,815 |" in section
    html = (tmp_path / "report.html").read_text()
    glance = html.split('<section id="at-a-glance">')[1].split("</section>")[0]
    rows = glance.split("<tr")
    first = next(i for i, r in enumerate(rows) if '<a href="#hello-c100">' in r)
    assert 'rowspan="2"' in rows[first] and "rust (1–2)</td>" in rows[first]
    assert '<td class="rps">38,757</td>' in rows[first]
    assert rows[first + 1].startswith(' class="more">') and "finagle (1–2)</td>" in rows[first + 1]
    assert '<td class="rps">35,011</td>' in rows[first + 1]
    assert '<td class="rank">1–2</td>' in html
    csv_rows = [line.split(",") for line in (tmp_path / "summary.csv").read_text().splitlines()]
    ranks = {(c[2], c[0], c[1]): tuple(c[3:6]) for c in csv_rows[1:]}
    assert (ranks["rust", "hello", "c100"], ranks["finagle", "hello", "c100"], ranks["node", "hello", "c100"]) == (
        ("1–2", "1", "2"),
        ("1–2", "1", "2"),
        ("3", "3", "3"),
    )
    table = console.table(model.build(evaluated(d)))
    marks = dict(
        zip(zip(table.columns[1].cells, table.columns[2].cells, table.columns[3].cells), table.columns[0].cells)
    )
    assert (marks["rust", "hello", "c100"], marks["finagle", "hello", "c100"], marks["node", "hello", "c100"]) == (
        "1–2",
        "1–2",
        "3",
    )
    assert marks["nginx", "hello", "c100"] == "ceil"


def test_none_ranked_only_where_every_record_is_kept_out(tmp_path):
    d = recorded()
    for r in d["records"]:  # every weather c1-t1 record failed: nothing to rank there
        if r["scenario"] == "weather" and r["run"] == "c1-t1":
            r["failed"] = "attempt 1: the server died during this load"
    (tmp_path / "results.json").write_text(json.dumps(d))
    write_report(tmp_path)
    md = (tmp_path / "summary.md").read_text()
    glance = md.split("## At a glance")[1].split("\n## ")[0]
    none_ranked = [line.split(" | ")[0:2] for line in glance.splitlines() if "_none ranked_" in line]
    assert none_ranked == [["| weather", "c1-t1"]]  # flagged spread or saturated elsewhere: still ranked
    for (scenario, run), g in groups(evaluated(d)).items():
        assert (not g.ranked) == ([f"| {scenario}", run] in none_ranked)


# -- compare: a change is significant only where the intervals are apart ----------------------------------------------


def summary_of(record: dict):
    return summaries.completed(Record.from_dict(record))


def test_compare_ties_overlapping_records_and_orders_disjoint_ones():
    d = recorded()
    nginx, rust, node = (find(d, s, "hello", "c100") for s in ("nginx", "rust", "node"))
    tie = compare.compare_metric(summary_of(nginx).rps, summary_of(rust).rps)
    assert tie.significant is False and tie.delta == pytest.approx(38757.41 / 35010.7 - 1)
    assert tie.reason == "intervals overlap: 32,437 – 36,290 (75 %) and 35,266 – 40,867 (75 %)"
    assert compare._verdict(tie, higher_is_better=True) == ("= (+10.7%)", "dim")
    apart = compare.compare_metric(summary_of(node).rps, summary_of(rust).rps)
    assert apart.significant is True and compare._verdict(apart, higher_is_better=True) == ("+161.6%", "green")
