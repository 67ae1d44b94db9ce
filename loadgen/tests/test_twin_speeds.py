"""`make twin` on the server CPU's speed (harness/versus/twin_speeds.py): on synthetic rounds whose CPU slows by
up to 30 % from attempt to attempt, the ratios on the speed find ours ÷ theirs where the figures as measured scatter;
where a side is bound on the tools' CPU, or an attempt has no speed, the ratios stay as measured and say why. The
watch around an attempt reads the real meter and the tools' CPU."""

from __future__ import annotations

import math
import random
import subprocess
import sys
import time
from typing import Any

import pytest

from harness.basics import cpu_speed
from harness.basics.cpus import CpuPlan
from harness.basics.sampling import ProcessCost
from harness.versus.twin_speeds import AttemptWatch, bound_role, on_speed
from harness.versus.twin_table import speed_lines, summary

ROUNDS = 9


def attempt(rng: random.Random, k: int, side: str, level: float, bound: str = "server") -> dict[str, Any]:
    """Round `k`'s attempt of `side`, a server `level` times as fast whose rate follows its `bound` CPU's speed, with
    1 % of its own noise."""
    speeds = {role: round(rng.uniform(0.7, 1.0), 4) for role in ("server", "loadgen")}
    util = {"server": 0.99, "loadgen": 0.6} if bound == "server" else {"server": 0.7, "loadgen": 0.99}
    rps = round(50_000 * level * speeds[bound] * math.exp(rng.gauss(0, 0.01)), 1)
    return {"round": k, "side": side, "rps": rps, "cpu": {"speed": speeds, "util": util}}


def rounds(seed: int, levels: dict[str, float], bound: dict[str, str] | None = None) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    bound = bound or {}
    return [
        attempt(rng, k, side, level, bound.get(side, "server")) for k in range(ROUNDS) for side, level in levels.items()
    ]


def test_ours_ten_percent_behind_reads_so_on_the_speed_where_the_rates_as_measured_scatter():
    attempts = rounds(1, {"ours": 0.9, "theirs": 1.0, "again": 0.9})
    got = on_speed(attempts, ("ours", "theirs", "again"))
    assert got["rule"] == "on the server CPU's speed"
    assert got["below_1"] == ROUNDS and 0.87 < got["interval"]["low"] <= got["median_ratio"] <= got["interval"]["high"]
    assert got["interval"]["high"] < 0.93 and abs(got["median_ratio"] - 0.9) < 0.015
    assert 0.97 < got["again"]["median_ratio"] < 1.03 and got["again"]["rounds"] == ROUNDS
    as_measured = summary(*([a["rps"] for a in attempts if a["side"] == s] for s in ("ours", "theirs")))
    width = as_measured["interval"]["high"] - as_measured["interval"]["low"]
    assert width > 3 * (got["interval"]["high"] - got["interval"]["low"])  # the CPU's slow-downs, gone
    # the meter's own ours ÷ theirs, round by round, beside
    ours, theirs = ([a["cpu"]["speed"]["server"] for a in attempts if a["side"] == s] for s in ("ours", "theirs"))
    meter = sorted(round(o / t, 4) for o, t in zip(ours, theirs))
    assert got["meter"]["median_ratio"] == meter[ROUNDS // 2]


def test_a_side_bound_on_the_tools_cpu_leaves_the_ratios_as_measured_and_says_which():
    attempts = rounds(2, {"ours": 1.0, "theirs": 1.0}, bound={"theirs": "loadgen"})
    assert bound_role([a for a in attempts if a["side"] == "theirs"]) == "loadgen"
    got = on_speed(attempts, ("ours", "theirs"))
    assert got == {
        "rule": "as measured: not every side bound on the server's CPU (ours on the server's, theirs on the tools' CPU)"
    }


def test_an_attempt_without_its_speeds_leaves_the_ratios_as_measured():
    attempts = rounds(3, {"ours": 1.0, "theirs": 1.0})
    attempts[5]["cpu"] = None
    got = on_speed(attempts, ("ours", "theirs"))
    assert "median_ratio" not in got and got["rule"].startswith("as measured: an attempt without its CPUs' speeds")


def test_twin_md_shows_each_pair_on_the_speed_or_why_not():
    pair = {"ours_path": "/hello", "theirs_path": "/plaintext", "pattern": "keep-alive"}
    speed = on_speed(rounds(4, {"ours": 0.9, "theirs": 1.0}), ("ours", "theirs"))
    lines = speed_lines(
        [
            pair | {"on_speed": speed},
            pair | {"pattern": "connection-per-request", "on_speed": {"rule": "as measured: x"}},
        ]
    )
    assert lines[0].startswith("On the server CPU's speed")
    assert lines[4].startswith(f"| /hello ÷ /plaintext | keep-alive | speed | {speed['median_ratio']:.3f} | ")
    assert f"| {ROUNDS} of {ROUNDS} | - | - | {speed['meter']['median_ratio']:.3f}, " in lines[4]
    assert lines[5] == "| /hello ÷ /plaintext | connection-per-request | as measured: x | | | | | | |"
    assert speed_lines([pair]) == []  # a twin.json from before the meter


@pytest.fixture
def meter_on():
    cpu_speed.choose(True)
    yield
    cpu_speed.choose(False)


def test_the_watch_reads_both_cpus_speeds_and_the_tools_share_of_theirs(meter_on):
    plan = CpuPlan((0,), (1,), (1,))
    busy = "import time\nend = time.process_time() + 0.4\nwhile time.process_time() < end: pass"
    with AttemptWatch(plan) as watch:
        began = time.monotonic()
        subprocess.run(["taskset", "-c", "1", sys.executable, "-c", busy], check=True)  # the "tool"
        time.sleep(max(0.0, 0.6 - (time.monotonic() - began)))
    got = watch.reading(ProcessCost(1.0, 0.5, 0), ProcessCost(1.2, 0.6, 0))  # the server spent 0.3 s
    assert got is not None and set(got["speed"]) == {"server", "loadgen"}
    assert all(0 < s <= 1 for s in got["speed"].values())
    assert got["util"]["server"] == round(0.3 / watch.wall_s, 3)
    assert 0.4 / watch.wall_s <= got["util"]["loadgen"] < (0.4 + 0.15) / watch.wall_s  # the tool's, not the meters'
    assert watch.reading(None, ProcessCost(1, 1, 0)) is None


def test_without_the_meter_the_watch_reads_nothing():
    cpu_speed.choose(False)
    with AttemptWatch(CpuPlan((0,), (1,), (1,))) as watch:
        pass
    assert watch.reading(ProcessCost(0, 0, 0), ProcessCost(1, 1, 0)) is None
