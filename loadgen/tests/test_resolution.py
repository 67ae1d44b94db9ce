"""What a run can tell apart (issue 74): the gap the bench's ranking orders 9 times in 10 at a given noise (drawn by
the rule itself, checked against the attempt-rank rule applied to drawn records by hand), the interval a duel reaches
in a budget, the forecast's noise read from a probe's rates, and the report's resolution line and duel suggestions on
a recorded bench."""

from __future__ import annotations

import json
import math
import random
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import pytest

from harness.judging import flags, resolution
from harness.measuring import forecast
from harness.measuring.clock import LEAST_ATTEMPTS
from harness.report import model, resolution_text
from harness.report.first_screen import glance
from harness.results import records as results
from harness.stats import attempt_ranks
from harness.stats.sitting_shape import Costs

BENCH = Path(__file__).parent / "fixtures" / "bench_20261126" / "results.json"
HELLO_COSTS = Costs(setup_s=16.0, round_s=2.0)


def test_without_noise_the_ranking_tells_apart_what_passes_the_process_margin():
    assert resolution.bench_gap(resolution.Noise(0.0, 0.0, 6)) == pytest.approx(0.045)


def test_the_share_ordered_is_the_attempt_rank_rule_on_drawn_records():
    noise = resolution.Noise(0.05, 0.0, 6)
    rng = random.Random(1)
    hits = 0
    for _ in range(3000):
        a = [math.exp(rng.gauss(0, 0.05)) for _ in range(6)]
        b = [1.12 * math.exp(rng.gauss(0, 0.05)) for _ in range(6)]
        hits += attempt_ranks.above(b, a)
    assert resolution.ordered_share(0.12, noise) == pytest.approx(hits / 3000, abs=0.03)


def test_more_noise_needs_a_wider_gap_and_more_attempts_a_narrower_one():
    quiet, loud = resolution.Noise(0.02, 0.01, 6), resolution.Noise(0.08, 0.01, 6)
    assert resolution.bench_gap(quiet) < resolution.bench_gap(loud)
    assert resolution.bench_gap(resolution.Noise(0.08, 0.01, 12)) < resolution.bench_gap(loud)


def test_rounds_that_share_their_noise_are_read_by_the_paired_rule():
    shared = resolution.Noise(0.02, 0.10, 6)
    assert resolution.paired(shared) and not resolution.paired(resolution.Noise(0.10, 0.02, 6))
    by_ranks = next(g for g in resolution.GAPS if resolution.ordered_share(g, shared) >= resolution.POWER)
    assert resolution.bench_gap(shared) < by_ranks  # the drift cancels in each round's ratio


def test_a_duel_narrows_with_its_budget():
    noise = resolution.Noise(0.03, 0.05, 6)
    widths = [resolution.duel_half_width(noise, b, HELLO_COSTS) for b in (120, 300, 1200)]
    assert widths[0] > widths[1] > widths[2] > 0
    assert resolution.duel_seconds(noise, widths[1], HELLO_COSTS) <= 300
    assert resolution.duel_seconds(resolution.Noise(0.5, 0.0, 6), 0.001, HELLO_COSTS) is None


def test_the_forecast_reads_back_to_back_noise_apart_from_the_drift():
    rng = random.Random(3)
    drift, rates = 0.0, []
    for _ in range(400):
        drift += rng.gauss(0, 0.002)  # a slow walk: it cancels between consecutive attempts, not over the whole
        rates.append(10_000 * math.exp(drift + rng.gauss(0, 0.03)))
    noise = forecast.noise_of(rates, 6)
    assert noise.own == pytest.approx(0.03, rel=0.15) and noise.shared > 0.01 and noise.attempts == 6


def test_the_forecast_in_words():
    said = forecast.sentence(
        {
            "probe": "nginx /hello, wrk, 10 attempts",
            "attempts": 6,
            "own_sd": 0.03,
            "shared_sd": 0.04,
            "gap": 0.14,
            "duel_s": 300.0,
            "duel_half_width": 0.021,
        }
    )
    assert "servers ≥ 14% apart are told apart 9 times in 10; closer ones will read tied" in said
    assert "±5.0%" in said and "±2.1% in 5 min" in said


def _bench_with_forecast(root: Path, name: str, machine: dict[str, float]) -> None:
    data = json.loads(BENCH.read_text())
    data["conditions"]["resolution"] = {"forecast": {"probe": "nginx /hello", **machine}}
    (root / name).mkdir()
    (root / name / "results.json").write_text(json.dumps(data))


def test_the_forecast_adds_the_servers_own_part_the_latest_benches_measured(tmp_path):
    """The part is each bench's rounds' variance less its forecast's machine variance, not below 0, the median of the
    benches'; a bench from before the part was kept (its forecast the machine's alone) reads the same way."""
    if not BENCH.exists():
        pytest.skip("no recorded bench")
    run = results.load(BENCH)
    measured = resolution.measured_noise(run.records, run.with_role("ceiling"))
    assert measured is not None and measured.own > 0.02
    _bench_with_forecast(tmp_path, "20261201-100000-bench", {"own_sd": 0.02, "shared_sd": 0.0})
    part = forecast.servers_part(tmp_path)
    assert part is not None and part.runs == ["20261201-100000-bench"]
    assert part.own == pytest.approx(math.sqrt(measured.own**2 - 0.02**2), rel=1e-6)
    assert part.shared == pytest.approx(measured.shared, rel=1e-6)
    louder = {"machine": {"own_sd": 1.0, "shared_sd": 1.0}, "own_sd": 2.0, "shared_sd": 2.0}
    _bench_with_forecast(tmp_path, "20261202-100000-bench", louder)  # the machine above the rounds: a part of 0
    _bench_with_forecast(tmp_path, "20261203-100000-bench", louder)
    part = forecast.servers_part(tmp_path)
    assert part is not None and part.own == 0.0 and len(part.runs) == 3  # the median of 0, 0 and the first's
    assert forecast.servers_part(tmp_path, "20261203-100000-bench").own == pytest.approx(  # type: ignore[union-attr]
        math.sqrt((measured.own**2 - 0.02**2) / 2), rel=1e-6
    )  # the run itself left out: the median of two variances
    data = json.loads((tmp_path / "20261203-100000-bench" / "results.json").read_text())
    data["conditions"]["ended"] = "interrupted"
    (tmp_path / "20261204-100000-bench").mkdir()
    (tmp_path / "20261204-100000-bench" / "results.json").write_text(json.dumps(data))
    assert forecast.servers_part(tmp_path).runs == part.runs  # type: ignore[union-attr]  # an interrupted one passed over
    today = resolution.Noise(0.03, 0.04, 6)
    both = forecast.with_servers(today, forecast.ServersPart(0.04, 0.0, ["x"]))
    assert (both.own, both.shared, both.attempts) == (pytest.approx(0.05), 0.04, 6)
    assert forecast.with_servers(today, None) == today


@pytest.fixture(scope="module")
def bench_model():
    if not BENCH.exists():
        pytest.skip("no recorded bench")
    run = results.load(BENCH)
    flags.evaluate(run)
    return model.build(run)


def test_a_recorded_bench_states_its_resolution(bench_model, monkeypatch):
    got = resolution_text.achieved(bench_model)
    assert got is not None and 0 < got.noise.own < 0.5 and got.noise.attempts >= 2
    line = resolution_text.resolution_line(bench_model)
    assert line.startswith("Resolution: this run tells apart servers ") and "9 times in 10" in line
    forecast = {
        "gap": 0.4,
        "own_sd": 0.12,
        "shared_sd": 0.05,
        "probe": "nginx /hello, wrk, 10 attempts",
        "machine": {"own_sd": 0.03, "shared_sd": 0.02},
        "servers": {"own_sd": 0.11, "shared_sd": 0.04, "from": ["a", "b", "c"]},
    }
    monkeypatch.setitem(bench_model.run.conditions, "resolution", {"forecast": forecast})
    said = resolution_text.resolution_line(bench_model)  # the forecast's two parts named, never all on nginx
    assert "forecast before it: ≥ 40% apart (±13.0%: the machine's ±3.6% on nginx /hello" in said
    assert "the servers' own ±11.7% from 3 earlier benches)" in said


def _top_two(row) -> set[str]:
    return {
        r.server.removesuffix("-twin") for r in sorted((x.record for x in row.leaders), key=lambda r: -(r.rps or 0))[:2]
    }


def test_each_tied_first_place_gets_the_duel_that_settles_it(bench_model):
    """An A/A pair tied on top (node and node-twin) is left out: tied is what two processes of one server read."""
    rows = glance(bench_model)
    tied = [r for r in rows if len(r.leaders) >= 2 and len(_top_two(r)) == 2]
    said = resolution_text.duel_suggestions(bench_model, rows)
    assert len(said) == len(tied)
    for row, line in zip(tied, said):
        names = {leader.record.server for leader in row.leaders}
        a, b = (line.split("A=")[1].split()[0], line.split("B=")[1].split()[0])
        assert {a, b} <= {n.removesuffix("-twin") for n in names} and a != b and "-twin" not in line
        assert f"SCENARIOS={row.scenario}`" in line
        assert "min to reach ±" in line or "more than two hours" in line


def test_a_suggested_duel_is_timed_with_fresh_processes_warm_ups(bench_model):
    """Every start of a duel is a fresh process: its warm-up costs what the server's longest warm-up of the run did, so
    a JVM pair's duel reads longer than one timed on the short warm-ups of records measured after others."""
    from harness.report.resolution_text import _costs

    rows = [r for r in glance(bench_model) if len(r.leaders) >= 2]
    a, b = (leader.record for leader in rows[0].leaders[:2])
    longest = sum(
        max(
            sum(w.duration_s or 0 for w in o.warmup.runs) for o in bench_model.run.records if o.server == s and o.warmup
        )
        for s in (a.server, b.server)
    )
    own = sum(sum(w.duration_s or 0 for w in r.warmup.runs) for r in (a, b) if r.warmup)
    setup = _costs(bench_model, a, b).setup_s
    assert setup >= longest and setup > own


def test_a_duels_own_report_suggests_no_duel(bench_model, monkeypatch):
    rows = glance(bench_model)
    assert any(len(r.leaders) >= 2 for r in rows)
    monkeypatch.setitem(bench_model.run.conditions, "versus", {"kind": "duel"})
    assert resolution_text.duel_suggestions(bench_model, rows) == []


def test_a_budget_buys_as_many_attempts_as_its_estimate_fits_and_no_fewer_than_four():
    from harness.basics.paths import REPO
    from harness.config import scenarios as scenario_data
    from harness.config.manifest import by_default, discover
    from harness.measuring.clock import LEAST_ATTEMPTS, Clock, campaign_budget_s, estimate, within_budget

    servers = by_default(discover(REPO))
    picked = scenario_data.select(scenario_data.load("quick"), [])
    profile = scenario_data.settings("quick")
    assert campaign_budget_s(40, profile) == 40 * 60 - 15 - 15 - 2 * 9  # the report, the forecast, the two probes
    short, default, long = (
        within_budget(servers, picked, profile, budget, 0.1)
        for budget in (campaign_budget_s(5, profile), profile.budget_s, campaign_budget_s(40, profile))
    )
    assert short.repeat == LEAST_ATTEMPTS and short.forced  # five minutes hold no bench: the fewest, said as such
    assert LEAST_ATTEMPTS <= default.repeat < long.repeat
    for fitted in (default, long):
        clock, over = Clock(), Clock()
        estimate(clock, servers, picked, fitted, 0.1)
        estimate(over, servers, picked, replace(fitted, repeat=fitted.repeat + 1), 0.1)
        assert clock.total <= fitted.budget_s < over.total  # the most that fit, not one more


class _Store:
    """What bench_budget reads and writes of a run: the probe's reading before it, and its conditions."""

    def __init__(self, cv: float) -> None:
        self.run = SimpleNamespace(conditions={"steadiness": {"before": {"cv": {"server": cv, "loadgen": 0.01}}}})
        self.run.compliance = None  # no builds to probe

    def update_conditions(self, **changes):
        self.run.conditions.update(changes)


def test_make_bench_fits_its_attempts_to_the_profile_s_budget_and_keeps_a_repeat_asked(capsys):
    from harness.basics.paths import REPO
    from harness.cli.subcommands import bench_budget
    from harness.config import scenarios as scenario_data
    from harness.config.environment import Configuration
    from harness.config.manifest import by_default, discover

    servers = by_default(discover(REPO))
    picked = scenario_data.select(scenario_data.load("quick"), [])
    profile = scenario_data.settings("quick")
    tight = replace(profile, budget_s=900.0)  # six attempts a record do not fit in 15 min of measuring
    store = _Store(0.1)
    fitted = bench_budget(None, store, Configuration(), servers, picked, tight)
    assert LEAST_ATTEMPTS <= fitted.repeat < profile.repeat and fitted.forced
    assert store.run.conditions["repeat"] == fitted.repeat and store.run.conditions["budget_s"] == 900
    said = capsys.readouterr().out
    assert f"{fitted.repeat} attempts a record (the profile has 6; they would overrun it)" in said, said
    asked = bench_budget(None, _Store(0.1), Configuration(repeat=6), servers, picked, tight)
    assert asked.repeat == 6  # REPEAT without BUDGET_MIN: as asked
    longer = bench_budget(None, _Store(0.1), Configuration(budget_min=40), servers, picked, tight)
    assert longer.repeat > profile.repeat and longer.budget_s == 40 * 60 - 48
