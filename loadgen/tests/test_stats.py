"""Statistics over attempts and the comparison rule, on hand-made numbers and on a recorded run."""

import json
import statistics
from pathlib import Path

import pytest

from harness.basics import formats
from harness.config.scenarios import LoadRun, Scenario
from harness.history.compare import compare_metric
from harness.results import summary as summaries
from harness.results.aggregate import Measured, aggregate
from harness.results.records import Attempt, Record, Summary, Warmup
from harness.stats import intervals as stats
from harness.tools.h2load import LOG, H2load
from harness.tools.output import Errors

FIXTURE = Path(__file__).parent / "fixtures" / "results_v2" / "results.json"


def attempts(*rps, p99=None, failed_at=()):
    out = []
    for i, value in enumerate(rps, 1):
        failed = "no request completed" if i in failed_at else None
        out.append(
            Attempt(
                attempt=i,
                started_at=None,
                tool_processes=1,
                commands=[],
                raw=[],
                failed=failed,
                samples={},
                requests=1000,
                good_requests=1000,
                errors=Errors(),
                duration_s=1.0,
                rps=None if failed else value,
                latency_ms={"p99": (p99 or {}).get(i)},
            )
        )
    return out


def test_describe_median_min_max_cv():
    d = stats.describe([100.0, 110.0, 90.0])
    assert d["median"] == 100.0 and d["min"] == 90.0 and d["max"] == 110.0 and d["n"] == 3
    assert d["cv"] == pytest.approx(statistics.stdev([100, 110, 90]) / 100, abs=1e-4)  # 0.1


def test_describe_even_count_takes_the_middle_mean_and_skips_none():
    d = stats.describe([1.0, None, 3.0, 2.0, 4.0])
    assert d["median"] == 2.5 and d["n"] == 4


def test_describe_one_value_has_no_spread_and_nothing_is_none():
    assert stats.describe([5.0])["cv"] is None
    assert stats.describe([None, None]) is None
    assert stats.describe([]) is None


def test_summarize_ignores_failed_attempts():
    s = summaries.summarize("wrk", {}, attempts(1000.0, 0.0, 1200.0, p99={1: 5.0, 3: 7.0}, failed_at=(2,)))
    assert s.rps["n"] == 2 and s.rps["median"] == 1100.0
    assert s.p99 == {
        "median": 6.0,
        "min": 5.0,
        "max": 7.0,
        "cv": pytest.approx(0.2357, abs=1e-4),
        "n": 2,
        "ci": {"low": 5.0, "high": 7.0, "level": 0.5, "method": "min-max", "k": 1},
    }


def test_summarize_without_latencies_httperf():
    s = summaries.summarize("httperf", {}, attempts(10.0, 11.0, 12.0))
    assert s.p99 is None and s.rps["median"] == 11.0


def made(rates, p99s):
    """A record aggregated from attempts of these req/s and p99 (the way the rounds make one)."""
    taken = attempts(*rates, p99=dict(enumerate(p99s, 1)))
    scenario = Scenario("hello", "", "wrk", (("hello", "/hello"),), (LoadRun("c100", {"concurrency": 100}),), None)
    return aggregate(
        Measured("rust", "/hello", "local"),
        scenario,
        scenario.runs[0],
        taken,
        Warmup(tool="wrk", runs=[], steady=True, tolerance=0.1, max_runs=40),
    )


def test_a_record_of_an_even_count_of_attempts_is_the_mean_of_the_middle_two():
    """Fails on the harness before issue 32: the record's req/s and p99 were the lower middle attempt's (200, 2.0),
    while its summary and `make compare` took the mean of the middle two (250)."""
    record = made([400.0, 100.0, 300.0, 200.0], [4.0, 1.0, 3.0, 2.0])
    assert record.rps == 250.0 == record.summary.rps["median"]
    assert record.latency_ms["p99"] == 2.5 == record.summary.p99["median"]
    odd = made([300.0, 100.0, 200.0], [3.0, 1.0, 2.0])
    assert odd.rps == 200.0 and odd.latency_ms["p99"] == 2.0


def test_a_record_holds_every_request_of_its_attempts_exactly():
    """Two attempts' histograms (h2load's real per-request logs, fixtures/h2load/ok and h1) make the record's: the
    percentiles of the two logs' requests together, to the µs."""
    folder = Path(__file__).parent / "fixtures" / "h2load"
    logged = []
    taken = attempts(100.0, 200.0)
    for attempt, name in zip(taken, ("ok", "h1")):
        m = H2load().parse((folder / name / "output.txt").read_text(), folder / name)
        attempt.latency_histogram = m.distribution.encode()
        logged += [
            int(line.split("\t")[2])
            for line in (folder / name / LOG).read_text().splitlines()
            if line.split("\t")[1] != "-1"
        ]
    whole = summaries.distribution(taken)
    logged.sort()
    assert whole.count == len(logged) == 704
    for pct in (50, 90, 99, 99.9, 100):
        assert whole.percentile_ms(pct) == logged[max(int(pct / 100 * len(logged) + 0.5), 1) - 1] / 1000
    taken[1].latency_histogram = None  # one attempt without its distribution: the record claims none
    assert summaries.distribution(taken) is None


def test_a_record_summary_is_computed_once_and_kept():
    record = made([1.0, 2.0, 3.0], [1.0, 1.0, 1.0])
    stored = record.summary
    assert summaries.completed(record) is stored  # evaluating flags later does not compute it again
    record.summary = Summary(
        rps={"median": 42.0, "min": 42.0, "max": 42.0, "cv": None, "n": 1, "ci": stats.median_interval([42.0])},
        p99=None,
        cost_us={},
    )
    assert summaries.completed(record).rps["median"] == 42.0
    record.summary = None
    assert summaries.completed(record).rps["median"] == 2.0


def d(*values):
    return stats.describe(list(values))


def test_compare_significant_when_intervals_apart():
    c = compare_metric(d(100, 101, 99), d(120, 121, 119))
    assert c.significant is True and c.delta == pytest.approx(0.2)
    assert c.delta_pct == pytest.approx(20.0)


def test_compare_not_significant_when_intervals_overlap():
    c = compare_metric(d(100, 130, 90), d(120, 125, 118))
    assert c.significant is False and c.reason.startswith("intervals overlap")


def test_compare_is_the_interval_rule_alone():
    # intervals apart (100..102 against 103..104): significant, however small the change against the spread
    a, b = d(100, 101, 102), d(103, 103.5, 104)
    c = compare_metric(dict(a, cv=0.05), b)
    assert c.delta == pytest.approx(0.0247525, abs=1e-6) and c.significant is True
    assert c.reason == "intervals apart: 100 – 102 (75 %) and 103 – 104 (75 %)"
    # touching ends overlap: a tie, even with a +18.8 % change of the medians
    c = compare_metric(d(100, 101, 120), d(120, 116, 130))
    assert c.significant is False and c.delta == pytest.approx(0.1881, abs=1e-4)
    assert c.reason == "intervals overlap: 100 – 120 (75 %) and 116 – 130 (75 %)"


def test_compare_unknown_with_single_attempts_or_missing_side():
    assert compare_metric(d(100), d(200, 201)).significant is None
    assert compare_metric(None, d(1, 2)).significant is None
    assert compare_metric(d(0, 0), d(1, 2)).delta is None


def test_geomean_ratio():
    assert stats.geomean_ratio([2.0, 0.5]) == pytest.approx(1.0)
    assert stats.geomean_ratio([]) is None


def test_formatting():
    assert formats.fmt_rate(12345.6) == "12,346"
    assert formats.fmt_rate(123.45) == "123.5"
    assert formats.fmt_rate(0.521) == "0.52"
    assert formats.fmt_rate(None) == "-"
    assert formats.fmt_ms(0.4211) == "0.421" and formats.fmt_ms(4.633) == "4.63" and formats.fmt_ms(1234.0) == "1,234"


def test_recorded_run_summaries_match_the_attempts():
    """On a real run: every summary is the statistics of its record's attempts, and the record's rps is their median
    (an odd count of attempts: the median is one of them)."""
    data = json.loads(FIXTURE.read_text())
    assert data["records"]
    for r in data["records"]:
        record = Record.from_dict(r)
        s = summaries.summarize(record.tool, record.load, record.attempts).rps
        rates = [a["rps"] for a in r["attempts"] if a["rps"] is not None and not a["failed"]]
        assert s["n"] == len(rates) == 3
        assert s["min"] == min(rates) and s["max"] == max(rates)
        assert r["rps"] == s["median"] == summaries.median_rps(record.attempts)
        if s["cv"] is not None:
            assert s["cv"] == pytest.approx(statistics.stdev(rates) / statistics.fmean(rates), abs=1e-4)
