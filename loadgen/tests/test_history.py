"""make history (harness/history/): synthetic run folders on one timeline; a server's own 15 % drop found and called
the server's, a machine-wide 0.77× day called the machine's (its common series, no server's own), no change found
where there is none beyond the test's level, conditions that differ never joined, make versus answers as paired
ratios, the JSON for scripts, and the time 200 runs take."""

import collections
import json
import math
import statistics
import time
from pathlib import Path

import numpy as np
import pytest

from harness.basics.paths import REPO
from harness.history import adjustment, confirm, history_command, timeline
from harness.history.timeline import Selection

QUIET_RUN = REPO.parent / "shared" / "runs" / "20261123-224346-bench" / "results.json"
SERVERS = ["akka", "finagle", "node", "pekko", "play", "rust", "socko", "spray", "nginx", "express"]


def recorded_noise() -> float:
    """The spread of one run's median req/s on this machine: the quiet recorded run's median coefficient of variation
    between attempts (5.4 %), over the square root of its attempts, times the median's 1.2533 (normal data)."""
    cv, attempts = 0.054, 3
    if QUIET_RUN.is_file():
        run = json.loads(QUIET_RUN.read_text())
        cvs = [r["summary"]["rps"]["cv"] for r in run["records"] if (r.get("summary") or {}).get("rps", {}).get("cv")]
        cv, attempts = statistics.median(cvs), run["conditions"]["repeat"]
    return cv * 1.2533 / attempts**0.5


def described(value: float) -> dict:
    return {
        "median": value,
        "min": value * 0.97,
        "max": value * 1.03,
        "n": 4,
        "cv": 0.02,
        "ci": {"low": value * 0.97, "high": value * 1.03, "level": 0.875, "method": "min-max", "k": 1},
    }


def probe_reading(server: float, loadgen: float) -> dict:
    """One reading of the steadiness probe as results.json holds it (the fields its schema asks for)."""
    return {
        "seconds": 9,
        "window_s": 0.8,
        "cpus": {"server": 0, "loadgen": 1},
        "cv": {"server": 0.02, "loadgen": 0.02},
        "rate": {"server": server, "loadgen": loadgen},
    }


def write_run(root: Path, i: int, rates: dict[str, float], speed: float = 1.0, **conditions) -> None:
    """Run i (a day apart from the first): every server's hello req/s, p99 and CPU µs/req, the probe's rate."""
    run_id = f"202611{1 + i // 24:02d}-{i % 24:02d}0000-bench"
    folder = root / run_id
    folder.mkdir(parents=True)
    cond = {
        "started_at": f"2026-11-{1 + i // 24:02d}T{i % 24:02d}:00:00+0000",
        "runtime": "local",
        "profile": "quick",
        "cpus": {"server": [0], "loadgen": [1]},
        "git_commit": f"c0ffe{i:03d}",
        "repeat": 4,
        "machine": {"hostname": "vm", "cpu_model": "AMD EPYC", "logical_cpus": 2, "kernel": "6.18"},
        "steadiness": {"before": probe_reading(9e6 * speed, 9e6 * speed)},
        **conditions,
    }
    records = [
        {
            "server": s,
            "scenario": "hello",
            "run": "c100",
            "attempts": [],
            "summary": {"rps": described(r), "p99": described(5e5 / r), "cost_us": described(4e6 / r)},
        }
        for s, r in rates.items()
    ]
    (folder / "results.json").write_text(
        json.dumps({"schema": 5, "run_id": run_id, "conditions": cond, "servers": {}, "records": records})
    )


def history(root: Path, **selection):
    return history_command.gather(Selection([str(root / "*")], **selection), lambda name: None)


def test_a_servers_15_percent_drop_at_run_12_of_30_is_found_and_called_the_servers(tmp_path):
    """The runs before the drop at this repository's 9e5aa0e, those after at 7690406: 52e07bc between them changed
    node's code (a `server` change needs one)."""
    rng, noise = np.random.default_rng(47), recorded_noise()
    for i in range(30):
        rates = {s: 10_000 * (k + 1) * np.exp(noise * rng.standard_normal()) for k, s in enumerate(SERVERS[:5])}
        rates["node"] *= 0.85 if i >= 11 else 1.0  # run 12 (index 11) on
        commit = "9e5aa0e" if i < 11 else "7690406"
        write_run(tmp_path, i, rates, speed=np.exp(0.01 * rng.standard_normal()), git_commit=commit)
    found = history_command.gather(Selection([str(tmp_path / "*")]), lambda name: REPO / name).changes
    node = [c for c in found if c.server == "node" and c.metric == "rps" and c.kind == "own"]
    assert len(node) == 1, found
    run_of = {f"202611{1 + i // 24:02d}-{i % 24:02d}0000-bench": i for i in range(30)}
    assert abs(run_of[node[0].at] - 11) <= 1 and node[0].low_percent < -15 < node[0].high_percent
    assert node[0].cause == "server" and node[0].q_value <= 0.05
    assert not [c for c in found if c.server not in ("node", "machine")], found


def test_a_machine_wide_077_day_is_the_machines_and_no_servers_own(tmp_path):
    rng, noise = np.random.default_rng(7), recorded_noise()
    for i in range(30):
        day = 0.77 if i >= 15 else 1.0
        rates = {s: 10_000 * (k + 1) * day * np.exp(noise * rng.standard_normal()) for k, s in enumerate(SERVERS)}
        write_run(tmp_path, i, rates, speed=day * np.exp(0.01 * rng.standard_normal()))
    found = history(tmp_path).changes
    [day] = [c for c in found if c.metric == "rps"]
    assert (day.kind, day.cause, day.at) == ("common", "machine", "20261101-150000-bench")
    assert day.low_percent < -23 < day.high_percent
    assert not [c for c in found if c.kind == "own"], found


# express's own CPU µs/req on /hello (log, relative to node and rust) over the 12 benches of 6 Dec 2026 (issue 73's
# timeline): 10,000 rounds of arithmetic a request from the 4th run, reverted from the 10th; each run's standard
# error and the A/A twin's between-run variance (11.4 % a process: an unsteady day) as make history derived them.
EXPRESS_OWN = [-0.303, -0.329, -0.316, 0.142, 0.112, 0.194, 0.158, -0.03, 0.401, -0.224, -0.109, -0.387]
EXPRESS_SE = [0.079, 0.041, 0.042, 0.109, 0.047, 0.093, 0.09, 0.059, 0.096, 0.062, 0.098, 0.115]
TWIN_FLOOR = 0.0130


def test_a_change_and_its_revert_on_the_real_timeline_are_one_test_at_the_draws_floor():
    """A step test at the 4th run weighs the reverted runs with the changed ones (p 0.0026 there, not enough for a
    page of 106 tests); the change and its revert as one segment: both placed, one p, at the floor of the draws."""
    most = 84_800  # make history's for 106 tests: 4 x 106 / (5 % x the revert's share of the level)
    verdict = confirm.search(np.array(EXPRESS_OWN), np.array(EXPRESS_SE), TWIN_FLOOR, math.log(1.05), 73, most)
    change, revert = verdict.tests[:2]
    assert (change.index, change.revert, revert.index, revert.revert) == (3, False, 9, True)
    assert change.p_value == revert.p_value <= 2 / (most + 1) / (1 - confirm.STEP_SHARE)


@pytest.mark.parametrize("runs", [12, 30])
def test_no_change_finds_nothing_beyond_the_tests_level(runs):
    """Changes (a step, or a change and its revert) at p <= 5 % over 300 flat series: at most the level plus three
    standard errors of a count of 300 (a fixed seed: the same draws every time)."""
    rng, noise, draws = np.random.default_rng(2014), recorded_noise(), 300
    se = np.full(runs, noise)
    false = sum(
        bool(confirm.search(noise * rng.standard_normal(runs), se, 0.0, 0.0, seed, 999).tests[0].p_value <= 0.05)
        for seed in range(draws)
    )
    assert false <= 0.05 * draws + 3 * (draws * 0.05 * 0.95) ** 0.5, f"{false} false changes in {draws} series"


def test_runs_under_other_conditions_are_never_joined_and_too_few_runs_are_said(tmp_path):
    write_run(tmp_path, 0, {"node": 1000.0})
    write_run(tmp_path, 1, {"node": 1100.0}, runtime="docker")
    h = history(tmp_path)
    rps = [s for s in h.series if s.server == "node" and s.metric == "rps"]
    assert len(rps) == 2 and {len(s.points) for s in rps} == {1}
    assert any("not joined" in n and "docker" in n for n in h.notes)
    assert any("cannot separate the machine from a server" in n for n in h.notes), h.notes


def test_the_machine_speed_divides_rates_and_multiplies_times(tmp_path):
    write_run(tmp_path, 0, {"node": 1000.0}, speed=1.0)
    write_run(tmp_path, 1, {"node": 800.0}, speed=0.8)
    by_metric = {
        s.metric: [round(p.value, 3) for p in s.points] for s in history(tmp_path).series if s.server == "node"
    }
    assert by_metric["rps_adjusted"][0] == pytest.approx(by_metric["rps_adjusted"][1], rel=1e-9)
    assert by_metric["cost_us_adjusted"][0] == pytest.approx(by_metric["cost_us_adjusted"][1], rel=1e-9)


def test_versus_runs_are_paired_ratios_and_the_json_has_changes_and_series(tmp_path, capsys, monkeypatch):
    write_run(tmp_path, 0, {"node": 1000.0})
    versus = {
        "server": "node",
        "builds": {"base": {"label": "abc1234"}, "head": {"label": "def5678"}},
        "results": [
            {
                "scenario": "hello",
                "run": "c100",
                "metrics": {
                    "rps": {"interval": {"ratio": 0.95, "low": 0.92, "high": 0.98}, "verdict": "slower by 5.0 %"}
                },
            }
        ],
    }
    write_run(tmp_path, 1, {"node": 990.0}, versus=versus)
    monkeypatch.setattr(history_command, "RESULTS", tmp_path / "out")
    assert history_command.cmd_history(str(tmp_path / "*"), "", "", [], "json", {}) == 0
    printed = json.loads(capsys.readouterr().out)
    assert set(printed) >= {"changes", "series", "paired"}
    assert printed["paired"] == [
        {
            "server": "node",
            "scenario": "hello",
            "run": "c100",
            "metric": "rps",
            "at": "20261101-010000-bench",
            "ratio": 0.95,
            "low": 0.92,
            "high": 0.98,
            "verdict": "slower by 5.0 %",
            "base": "abc1234",
            "head": "def5678",
        }
    ]
    node = [s for s in printed["series"] if s["server"] == "node" and s["metric"] == "rps"]
    assert len(node) == 1 and len(node[0]["points"]) == 1  # the versus run's records are not points of the series
    assert {"value", "low", "high", "flags", "commit", "runtime", "machine"} <= set(node[0]["points"][0])
    assert (tmp_path / "out" / "history" / "index.html").is_file()
    page = (tmp_path / "out" / "history" / "index.md").read_text()
    assert "changes kept at a false-discovery rate of 5 % over 0 tests" in page
    assert printed["discovery"] == {"false_discovery_rate": 0.05, "tested": 0, "threshold": 0.0}


def test_200_runs_are_read_and_searched_well_under_a_second_each(tmp_path):
    rng = np.random.default_rng(200)
    for i in range(200):
        write_run(tmp_path, i, {s: 10_000.0 * np.exp(0.03 * rng.standard_normal()) for s in SERVERS[:4]})
    began = time.monotonic()
    h = history(tmp_path)
    elapsed = time.monotonic() - began
    assert len(h.runs) == 200 and elapsed < 0.1 * 200, f"{elapsed:.1f} s for 200 runs"


def test_a_servers_change_has_the_commits_that_touched_its_folder_beside_it(tmp_path):
    """Two commits of this repository: between 9e5aa0e and 7690406, 52e07bc touched node/ (h2c). 16 runs."""
    rng = np.random.default_rng(11)
    for i in range(16):
        rates = {s: 10_000.0 * np.exp(0.01 * rng.standard_normal()) for s in SERVERS[:4]}
        rates["node"] *= 0.8 if i >= 8 else 1.0
        write_run(tmp_path, i, rates, git_commit="9e5aa0e" if i < 8 else "7690406")
    found = history_command.gather(Selection([str(tmp_path / "*")]), lambda name: REPO / name).changes
    node = [c for c in found if c.server == "node" and c.metric == "rps"]
    assert len(node) == 1 and node[0].cause == "server" and node[0].commit_range == ("9e5aa0e", "7690406")
    assert any(line.startswith("52e07bc") for line in node[0].commits), node[0].commits


def test_a_damaged_run_folder_is_left_out_and_named(tmp_path):
    write_run(tmp_path, 0, {"node": 1000.0})
    write_run(tmp_path, 1, {"node": 1000.0})
    damaged = next(tmp_path.glob("*-010000-bench")) / "results.json"
    run = json.loads(damaged.read_text())
    run["records"][0]["summary"]["rps"] = "fast"
    damaged.write_text(json.dumps(run))
    (tmp_path / "20261101-020000-bench").mkdir()
    (tmp_path / "20261101-020000-bench" / "results.json").write_text("{not json")
    h = history(tmp_path)
    assert h.runs == ["20261101-000000-bench"]
    assert sum(n.startswith("left out: ") for n in h.notes) == 2


@pytest.mark.skipif(not QUIET_RUN.is_file(), reason="the recorded runs (shared/runs) are not beside this checkout")
def test_the_readmes_adjustment_figure_is_what_the_recorded_runs_give():
    """README.md, "Every run on one timeline": the pure-CPU stand-in removes 41 % of the recorded runs' day-to-day
    req/s change; the probe's own rate is in none of them."""
    recorded = [str(QUIET_RUN.parents[1] / f"{day}-*-bench") for day in ("20261123", "20261124", "20261126")]
    h = history_command.gather(Selection(recorded), lambda name: None)  # the three of the README (more came later)
    assert adjustment.overall(adjustment.by_pure_cpu_stand_in(h.series)) == pytest.approx(0.41, abs=0.005)
    assert adjustment.by_probe(h.series) == []


def probed(mean: float, disagreement: float) -> dict:
    """The probe's readings before and after a run: `mean` × 9e6 loops/s, `disagreement` apart (a log ratio)."""
    half = np.exp(disagreement / 2)
    return {
        "before": probe_reading(9e6 * mean * half, 9e6 * mean * half),
        "after": probe_reading(9e6 * mean / half, 9e6 * mean / half),
    }


def test_only_a_run_whose_probe_rate_moved_beyond_its_own_noise_is_divided(tmp_path):
    """Six runs whose probe rate wobbles by less than its readings before and after a run disagree (10 %), then a
    0.77x day: the six are left as measured (dividing them would add the probe's noise), the day's two divided."""
    means = [1.0, 0.97, 1.03, 1.0, 0.96, 1.02, 0.77, 0.77]
    for i, mean in enumerate(means):
        write_run(tmp_path, i, {"node": 1000.0 * mean}, steadiness=probed(mean, 0.1))
    h = history(tmp_path)
    by_metric = {s.metric: [p.value for p in s.points] for s in h.series if s.server == "node"}
    reference = statistics.median(means)
    assert by_metric["rps_adjusted"][:6] == by_metric["rps"][:6]
    assert by_metric["rps_adjusted"][6:] == pytest.approx([1000.0 * reference] * 2, rel=1e-9)
    assert any("own noise 10.5 %" in n and "2 of 8 runs beyond it" in n for n in h.notes), h.notes


def test_runs_without_the_probes_rate_are_left_out_of_the_adjusted_series_only(tmp_path):
    """Two recorded runs from before the rate was kept, then three with it: the adjusted series has the three."""
    for i in range(5):
        write_run(tmp_path, i, {"node": 1000.0}, **({"steadiness": {}} if i < 2 else {}))
    series = {s.metric: s for s in history(tmp_path).series if s.server == "node"}
    assert len(series["rps"].points) == 5
    assert [p.run.run_id for p in series["rps_adjusted"].points] == [p.run.run_id for p in series["rps"].points[2:]]


TODAYS_BENCHES = [REPO / "results" / f"20261126-{t}-bench" for t in ("101555", "103829", "110403", "112226")]


@pytest.mark.skipif(
    not all((b / "results.json").is_file() for b in TODAYS_BENCHES),
    reason="the four benches of 2026-11-26 are not here",
)
def test_the_readmes_probe_figure_is_what_the_four_benches_of_2026_11_26_give(monkeypatch):
    """README.md: divided by every run's probe rate, the four benches an hour apart lose 5 % of their run-to-run
    req/s change; divided only beyond the probe's own noise (no run is), 0 %."""
    h = history_command.gather(Selection([str(b) for b in TODAYS_BENCHES]), lambda name: None)
    assert adjustment.overall(adjustment.by_probe(h.series)) == 0.0
    assert sum("0 of 4 runs beyond it" in n for n in h.notes) == 2, h.notes
    monkeypatch.setattr(timeline, "probe_noise", lambda machine: collections.defaultdict(float))
    every_run = history_command.gather(Selection([str(b) for b in TODAYS_BENCHES]), lambda name: None)
    assert adjustment.overall(adjustment.by_probe(every_run.series)) == pytest.approx(0.05, abs=0.005)


@pytest.mark.parametrize("others_drop, own", [(0.85, False), (1.0, True)])
def test_a_step_every_server_took_is_the_machines_not_the_servers(tmp_path, others_drop, own):
    """Finagle's low-compute req/s at 10:38 on 2026-11-26 (-15 %, called its own) was a step all nine others took:
    relative to the others, node's figure did not move, and only the machine's series changes; where the others
    stayed, node's own series changes."""
    rng = np.random.default_rng(3)
    for i in range(14):
        rates = {
            s: 10_000.0 * (others_drop if i >= 7 else 1.0) * np.exp(0.01 * rng.standard_normal()) for s in SERVERS[:5]
        }
        rates["node"] = 10_000.0 * (0.85 if i >= 7 else 1.0) * np.exp(0.01 * rng.standard_normal())
        write_run(tmp_path, i, rates)
    found = [c for c in history(tmp_path).changes if c.metric == "rps"]
    assert [(c.kind, c.server) for c in found] == ([("own", "node")] if own else [("common", "machine")]), found
