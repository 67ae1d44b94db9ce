"""The trend detector (harness/stats/trend.py) on recorded series: akka warming on new connections, flat rust, falling
express; the warm-up's end; and the flags and re-measuring it drives."""

import itertools
import json
from pathlib import Path

from harness.judging import flags
from harness.results import records as results
from harness.stats import trend

FIXTURE = Path(__file__).parent / "fixtures" / "bench_20261123" / "results.json"

# akka by hand, cold, server on CPU 0 and ab -c1000 /factorial?param=1 on CPU 1 (loadgen/profiling/warm-by-hand.sh):
# each ~2 s run's req/s, in order
AKKA_BY_HAND = [
    620.56,
    1235.90,
    1494.55,
    1733.64,
    2218.89,
    2878.13,
    3224.70,
    4743.63,
    6301.64,
    7630.26,
    7683.16,
    7613.65,
    7673.95,
    7709.45,
    7736.22,
    7808.19,
    7770.20,
    7956.51,
    7836.46,
    7720.50,
]


def recorded(server: str, scenario: str) -> tuple[list[float], list[float]]:
    """(warm-up runs' req/s, attempts' req/s) of a record of the recorded bench."""
    d = json.loads(FIXTURE.read_text())
    r = next(r for r in d["records"] if r["server"] == server and r["scenario"] == scenario)
    return [w["rps"] for w in r["warmup"]["runs"]], [a["rps"] for a in r["attempts"]]


def test_the_recorded_akka_attempts_are_warming_not_spread():
    _, low = recorded("akka", "low-compute")
    _, long = recorded("akka", "long")
    assert [round(x) for x in low + long] == [2028, 2451, 2771, 3686, 5102, 7438]
    assert trend.classify(low, 0.10).kind == trend.WARMING
    assert trend.classify(long, 0.10).kind == trend.WARMING
    assert trend.classify(low + long, 0.10).kind == trend.WARMING  # six in a row: the JIT's climb
    assert trend.classify(low + long, 0.10).change > 1.0


def test_the_old_two_run_rule_called_akka_steady_mid_climb_and_the_window_does_not():
    warmup, _ = recorded("akka", "low-compute")
    assert [round(x) for x in warmup] == [211, 400, 1110, 1386, 1482]
    assert abs(warmup[-1] - warmup[-2]) / warmup[-2] <= 0.10  # what the old rule saw: "steady"
    assert not trend.settled(warmup, 3, 0.10)  # 1,110 → 1,386 → 1,482 is still a climb
    # by hand the same climb settles once it is flat over three runs, at the warm figure
    settled_at = next(i for i in range(3, len(AKKA_BY_HAND) + 1) if trend.settled(AKKA_BY_HAND[:i], 3, 0.10))
    assert settled_at == 12 and min(AKKA_BY_HAND[settled_at - 3 : settled_at]) > 7600  # 7,630 → 7,683 → 7,614


# akka's weather c1 warm-up (wrk, one connection, 1 s runs), 2026-11-28 on this project's VM, judged on its latest half
AKKA_WEATHER_C1 = [
    183,
    291,
    396,
    555,
    845,
    1037,
    1374,
    1362,
    1650,
    1654,
    1537,
    2445,
    2276,
    2410,
    3803,
    5740,
    5528,
    5488,
    5554,
    5446,
]
NGINX_WEATHER_C1 = [42806, 39617, 40558]


def ends_at(series: list[float], judged) -> int:
    return next(i for i in range(3, len(series) + 1) if trend.settled(series[:i], judged(i), 0.10))


def test_a_warm_up_is_judged_on_its_latest_half_and_no_longer_ends_mid_climb():
    three = ends_at(AKKA_WEATHER_C1, lambda n: 3)  # the rule before: three runs, one noisy slope
    assert three == 11 and AKKA_WEATHER_C1[three - 1] < 1600  # 1,650, 1,654, 1,537: a third of its steady rate
    half = ends_at(AKKA_WEATHER_C1, lambda n: trend.judged_window(n, 3))
    assert half == 19 and min(AKKA_WEATHER_C1[half - 3 : half]) > 5400
    assert ends_at(NGINX_WEATHER_C1, lambda n: trend.judged_window(n, 3)) == 3  # flat from its start: as before
    assert [trend.judged_window(n, 3) for n in (1, 3, 6, 9, 10, 40)] == [3, 3, 3, 5, 5, 5]


def test_flat_series_are_flat():
    for server, scenario in (("rust", "low-compute"), ("rust", "backend"), ("finagle", "long"), ("node", "tweets")):
        _, attempts = recorded(server, scenario)
        found = trend.classify(attempts, 0.10)
        assert found.kind == trend.FLAT, (server, scenario, attempts)
    assert trend.settled(AKKA_BY_HAND[-5:], 3, 0.10)


def test_falling_series_are_drifting():
    d = json.loads(FIXTURE.read_text())
    r = next(
        r for r in d["records"] if r["server"] == "express" and r["scenario"] == "weather" and r["run"] == "c256-t32"
    )
    rates = [a["rps"] for a in r["attempts"]]
    assert [round(x) for x in rates] == [9268, 9244, 6251]
    found = trend.classify(rates, 0.10)
    assert found.kind == trend.DRIFTING and found.change < -0.1


def test_noise_around_a_level_is_not_a_trend():
    # up, down, up: a big swing, but the points do not agree on a direction
    assert trend.classify([100.0, 130.0, 95.0, 128.0], 0.10).kind == trend.FLAT
    # one outlier cannot make a flat series climb: Theil–Sen takes the median slope
    assert trend.classify([100.0, 101.0, 99.0, 160.0], 0.10).kind == trend.FLAT
    # a steady climb of 4 % a run over four attempts is 12 %: beyond a 10 % tolerance
    assert trend.classify([100.0, 104.0, 108.0, 112.0], 0.10).kind == trend.WARMING


def test_identical_servers_are_rarely_called_warming():
    """Four exchangeable attempts are strictly rising in 1 of 24 orders: the flag needs that and a large change, so
    noise alone flags at most 1/24 of records per direction."""
    rates = [1000.0, 1040.0, 1080.0, 1130.0]
    moving = [o for o in itertools.permutations(rates) if trend.classify(list(o), 0.10).moving]
    assert len(moving) == 2  # strictly rising and strictly falling, of 24 orders


def test_the_flags_name_warming_and_drifting_instead_of_spread():
    run = results.load(FIXTURE)
    flags.evaluate(run)
    by = {(r.server, r.scenario, r.run): r for r in run.records}
    akka = by["akka", "low-compute", "c1000"]
    assert [f.name for f in akka.flags] == ["warming"] and akka.ranked
    assert "2,028 → 2,451 → 2,771" in akka.flags[0].reason
    express = by["express", "weather", "c256-t32"]
    assert [f.name for f in express.flags] == ["drifting"]
    finagle = by["finagle", "hello", "c100"]  # 104,781 → 84,336 → 100,726: no direction, a spread
    assert [f.name for f in finagle.flags] == ["spread"]
