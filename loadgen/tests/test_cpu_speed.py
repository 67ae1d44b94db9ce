"""Each CPU's speed read beside a load (CPU_METER=1, harness.basics.cpu_speed): the real meter, built from its source,
pinned beside a real load on this machine; kept in each role's sample, never counted as the tools' CPU, never left
running; off by default; a machine without a compiler measures on without it and says so."""

from __future__ import annotations

import math
import random
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
from fake_tool import SleepingTool
from ranked_group import ranked

from harness.basics import cpu_speed
from harness.basics.cpus import plan as cpu_plan
from harness.config.environment import ConfigurationError, read
from harness.history.compare import condition_differences
from harness.judging import noise, ranking, round_pairs
from harness.measuring.tool_processes import Beside, Naming, Outcome, measure
from harness.results.records import Record, Run
from harness.results.summary import summarize
from harness.runtime import RunningServer
from harness.runtime.local import LocalRuntime
from harness.stats import attempt_ranks
from harness.tools import LoadSpec, register
from harness.tools.load_plan import plan_load

CPUS = cpu_plan()


class Sleeper(SleepingTool):
    """Whatever CPU the tools' count shows beside this tool is another process's: it only sleeps."""

    name = binary = "sleeper"


@pytest.fixture(autouse=True)
def own_meter(monkeypatch, tmp_path):
    """Each test builds the meter into its own folder, with the switch and the module's memory of a failure reset."""
    monkeypatch.setattr(cpu_speed, "BUILT", tmp_path / "tools" / "cpu-meter")
    monkeypatch.setattr(cpu_speed, "_on", False)
    monkeypatch.setattr(cpu_speed, "_unavailable", None)


def meters_running() -> list[psutil.Process]:
    return [p for p in psutil.process_iter(["cmdline"]) if "cpu-meter" in " ".join(p.info["cmdline"] or [])]


def load_beside_an_idle_server(tmp_path: Path) -> Outcome:
    idle = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    server = RunningServer("idle", "127.0.0.1", 1, list(CPUS.server), idle.pid, "", 0, 0, "local")
    try:
        with register(Sleeper()):  # type: ignore[arg-type]  # a tool of the test's own
            load = plan_load("sleeper", LoadSpec(url="http://127.0.0.1:1/", concurrency=1, requests=1000), CPUS.loadgen)
            return measure(LocalRuntime(), load, Naming(tmp_path, "sleep", "sleep"), Beside(server))
    finally:
        idle.kill()
        idle.wait()


@pytest.mark.integration
def test_each_roles_cpu_speed_is_kept_in_its_sample_and_no_meter_outlives_the_load(tmp_path):
    cpu_speed.choose(True)
    outcome = load_beside_an_idle_server(tmp_path)
    assert outcome.failure is None and cpu_speed.BUILT.exists()  # built from its source on first use
    for role in ("server", "loadgen"):
        assert 0.2 < outcome.samples[role]["cpu_speed"] <= 1.0
    assert meters_running() == []


@pytest.mark.integration
def test_the_meters_cpu_is_not_counted_as_the_tools(tmp_path, monkeypatch):
    """A meter made to take nearly all of each CPU beside a tool that only sleeps: the tools' exact count, this
    process's reaped children, stays near zero, as it would not if the meters were reaped before it was read."""
    monkeypatch.setattr(cpu_speed, "PERIOD_MS", 0)
    monkeypatch.setattr(cpu_speed, "CHUNKS", 400)
    cpu_speed.choose(True)
    outcome = load_beside_an_idle_server(tmp_path)
    assert outcome.samples["loadgen"]["cpu_speed"] > 0
    assert outcome.samples["loadgen"]["cpu_s"] < 0.1


@pytest.mark.integration
def test_off_by_default_no_meter_runs_and_no_speed_is_kept(tmp_path):
    outcome = load_beside_an_idle_server(tmp_path)
    assert "cpu_speed" not in outcome.samples["server"] and not cpu_speed.BUILT.exists()


@pytest.mark.integration
def test_without_a_compiler_the_load_is_measured_without_it_and_says_why_once(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(cpu_speed.shutil, "which", lambda name: None)
    cpu_speed.choose(True)
    first, second = load_beside_an_idle_server(tmp_path), load_beside_an_idle_server(tmp_path)
    assert first.failure is None and second.failure is None
    assert "cpu_speed" not in first.samples["loadgen"]
    said = capsys.readouterr()
    assert (said.out + said.err).count("no C compiler (gcc or cc) to build it") == 1


def test_a_meter_cancelled_midway_leaves_no_process():
    cpu_speed.choose(True)
    meter = cpu_speed.SpeedMeter({"server": list(CPUS.server)}).start()
    time.sleep(0.1)
    assert len(meters_running()) == len(CPUS.server)
    meter.cancel()
    assert meters_running() == []


def test_speed_is_the_kept_chunks_at_the_best_chunks_time_over_their_summed_time():
    output = "1.0 100 250000 2000\n1.01 50 100000 1900\nhalf a line\n"
    assert cpu_speed.speed(output) == round(150 * 1900 / 350000, 4)
    assert cpu_speed.speed("") is None and cpu_speed.speed("1.0 0 0 2000\n") is None


@pytest.mark.integration
def test_a_runs_conditions_say_whether_the_meter_ran_and_why_not():
    try:
        cpu_speed.choose(False)
        assert cpu_speed.reading(remote=False) == "off (CPU_METER=0)"
        cpu_speed.choose(True)
        assert cpu_speed.reading(remote=True) == "off: with several hosts the meter does not run"
        assert cpu_speed.reading(remote=False).startswith("on: 25 chunks of about 2 µs every 10 ms")
        assert cpu_speed.BUILT.exists()
    finally:
        cpu_speed.choose(False)


def test_cpu_meter_takes_1_or_0_and_says_what_else_to_give():
    assert read({"CPU_METER": "1"}, {}).cpu_meter and not read({}, {}).cpu_meter
    with pytest.raises(ConfigurationError, match=r"CPU_METER='2': use one of 0, 1 \(default 0\)"):
        read({"CPU_METER": "2"}, {})


def metered_group(rng: random.Random, rounds: int) -> list[Record]:
    """Six servers in `rounds` interleaved rounds whose rates follow the speed of the CPU each is bound on (10 % per
    attempt) with 2 % of their own; half bound on the server's CPU, half on the load generator's, the other CPU's
    speed drawn apart (it must not be the one divided by)."""
    records = []
    for i, level in enumerate([1.0, 1.1, 1.25, 0.8, 0.9, 1.4]):
        bound = "server" if i % 2 else "loadgen"
        attempts = []
        for k in range(rounds):
            speeds = {role: math.exp(rng.gauss(-0.1, 0.1)) for role in ("server", "loadgen")}
            utils = {role: 0.98 if role == bound else 0.6 for role in speeds}
            attempts.append(
                {
                    "attempt": k + 1,
                    "rps": 10_000 * level * speeds[bound] * math.exp(rng.gauss(0, 0.02)),
                    "round_position": {"position": i + 1, "of": 6},
                    "samples": {r: {"cpu_util": utils[r], "cpu_speed": round(speeds[r], 4)} for r in speeds},
                }
            )
        records.append(Record.from_dict({"server": f"s{i}", "scenario": "hello", "run": "c100", "attempts": attempts}))
    return records


def test_a_rate_divided_by_its_cpus_speed_keeps_only_the_attempts_own_noise():
    rng = random.Random(41)
    groups = [metered_group(rng, 6) for _ in range(40)]
    raw = noise.pooled([s for g in groups if (s := noise.round_sharing(g))])
    adjusted = noise.pooled([s for g in groups if (s := noise.round_sharing(g, by_speed=True))])
    assert raw is not None and adjusted is not None
    assert math.sqrt(raw.own) == pytest.approx(math.sqrt(0.1**2 + 0.02**2), rel=0.1)
    assert math.sqrt(adjusted.own) == pytest.approx(0.02, rel=0.1)
    assert "divided by its CPU's speed: own 2.0%" in (noise.by_speed(groups) or "")


def test_two_servers_bound_on_one_cpu_are_divided_by_its_speed_whatever_its_level():
    """Identical servers, two bound on the server's CPU (its meter reading 0.85 on the mean), two on the load
    generator's (0.65). Divided by their own CPU's speed, the pairs on one CPU stay alike (that CPU's level cancels);
    divided by each attempt's busiest CPU across the CPUs, the second pair would come out 31 % faster, which is why a
    pair bound on different CPUs is compared as measured (GroupRule.for_pair)."""
    rng = random.Random(7)
    records = []
    for i, bound in enumerate(["server", "loadgen", "server", "loadgen"]):
        attempts = []
        for k in range(12):
            speeds = {"server": 0.85 * math.exp(rng.gauss(0, 0.05)), "loadgen": 0.65 * math.exp(rng.gauss(0, 0.05))}
            level = {"server": 0.85, "loadgen": 0.65}[bound]
            attempts.append(
                {
                    "attempt": k + 1,
                    "rps": 10_000 * speeds[bound] / level,
                    "round_position": {"position": i + 1, "of": 4},
                    "samples": {r: {"cpu_util": 0.98 if r == bound else 0.5, "cpu_speed": speeds[r]} for r in speeds},
                }
            )
        records.append(Record.from_dict({"server": f"s{i}", "scenario": "hello", "run": "c100", "attempts": attempts}))
    assert [noise.bound_role(r) for r in records] == ["server", "loadgen", "server", "loadgen"]
    means = [sum(v := list(noise.rounds_of(r, by_speed=True).values())) / len(v) for r in records]
    assert abs(means[2] - means[0]) < 0.005 and abs(means[3] - means[1]) < 0.005
    assert means[1] - means[0] == pytest.approx(math.log(0.85 / 0.65), abs=0.01)


def metered_bench_group(rng: random.Random, rounds: int) -> dict[str, Record]:
    """A bench's group whose noise is each CPU's own speed (10 % per attempt, each CPU apart) on top of a shared drift
    (3 %) and 2 % of the attempt's own; the server's CPU reads 0.85 on the mean, the load generator's 0.65. "fast" is
    10 % above "slow"; "twin" and "server" are one, and so are "far" and "near". All are bound on the server's CPU
    but "far", "b" and "d", bound on the load generator's."""
    levels = {"fast": 1.10, "slow": 1.0, "server": 0.9, "twin": 0.9, "far": 0.75, "near": 0.75, "b": 1.4, "d": 0.6}
    drift = [rng.gauss(0, 0.03) for _ in range(rounds)]
    out = {}
    for i, (name, level) in enumerate(levels.items()):
        bound = "loadgen" if name in ("far", "b", "d") else "server"
        attempts = []
        for k in range(rounds):
            speeds = {"server": 0.85 * math.exp(rng.gauss(0, 0.1)), "loadgen": 0.65 * math.exp(rng.gauss(0, 0.1))}
            relative = speeds[bound] / {"server": 0.85, "loadgen": 0.65}[bound]
            attempts.append(
                {
                    "attempt": k + 1,
                    "rps": 10_000 * level * relative * math.exp(drift[k] + rng.gauss(0, 0.02)),
                    "round_position": {"position": i + 1, "of": len(levels)},
                    "samples": {r: {"cpu_util": 0.98 if r == bound else 0.6, "cpu_speed": speeds[r]} for r in speeds},
                }
            )
        record = Record.from_dict({"server": name, "scenario": "hello", "run": "c100", "attempts": attempts})
        record.summary = summarize(None, {}, record.attempts)
        record.rps = record.summary.rps["median"]
        out[name] = record
    return out


def test_where_each_cpus_speed_is_the_noise_the_rule_divides_by_it_and_orders_at_its_stated_power_and_rate():
    """Divided by the speeds, 2 % of own noise is left over 6 rounds: the rule orders "fast" above "slow" (both bound
    on the server's CPU) at round_pairs.power's 90 %, never the other way, and the identical pair at most at the
    stated 2.9 %; on the rates as measured (10 % of own noise per attempt) it would order the 10 % apart at 21 % at
    best. The identical pair bound on different CPUs (whose levels differ by 31 %) is compared as measured: ordered
    at most at the stated rate too."""
    rng, draws, rounds = random.Random(41), 600, 6
    right = wrong = twins = across = divided = 0
    for _ in range(draws):
        group = metered_bench_group(rng, rounds)
        rule, above = ranked(group)
        right += above("fast", "slow")
        wrong += above("slow", "fast")
        twins += above("twin", "server") or above("server", "twin")
        across += above("far", "near") or above("near", "far")
        divided += rule.by_speed and not rule.for_pair(group["far"], group["near"]).by_speed
    stated_power, stated_rate = round_pairs.power(0.10, 0.02, rounds), attempt_ranks.FALSE_ORDER_RATE
    assert divided == draws and round_pairs.power(0.10, 0.10, rounds) < 0.25
    assert right / draws >= stated_power - 3 * math.sqrt(stated_power * (1 - stated_power) / draws)
    assert wrong == 0
    slack = 3 * math.sqrt(stated_rate * (1 - stated_rate) / draws)
    assert twins / draws <= stated_rate + slack and across / draws <= stated_rate + slack


def test_without_each_cpus_speed_on_every_attempt_the_rule_keeps_the_rates_as_measured():
    group = list(metered_bench_group(random.Random(3), 6).values())
    assert round_pairs.group_rule(group).by_speed
    del group[2].attempts[4].samples["loadgen"]
    rule = round_pairs.group_rule(group)
    assert not rule.by_speed and "CPU_METER" not in rule.why
    standings = ranking.rank(group)
    assert not any(s.by_speed for s in standings)


def test_a_run_without_each_cpus_speed_says_nothing_of_it():
    record = Record.from_dict(
        {"server": "s", "scenario": "hello", "run": "c100", "attempts": [{"attempt": 1, "rps": 1.0}]}
    )
    assert noise.busiest_role(record.attempts[0]) is None and noise.bound_role(record) is None
    assert noise.by_speed([[record]]) is None


def test_comparing_a_run_with_the_meter_and_one_without_says_so():
    older = Run.from_dict({"run_id": "a", "conditions": {}, "records": []})
    metered = Run.from_dict({"run_id": "b", "conditions": {"cpu_meter": "on: 25 chunks …"}, "records": []})
    said = " ".join(condition_differences(older, metered))
    assert "CPU speed meter: off → on (it takes about 0.5 % of each CPU" in said
    assert not condition_differences(metered, metered) and not condition_differences(older, older)
