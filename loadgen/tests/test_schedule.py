"""The campaign's order and clock, and attempts sized by time: unit tests (no server, no tool runs). The rounds are
driven through their executor interface with a fake executor (nothing is patched)."""

import subprocess
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import SimpleNamespace

import psutil
import pytest

from harness.config import scenarios
from harness.config.manifest import discover
from harness.config.scenarios import LoadRun, Scenario, Settings, WarmupRule
from harness.measuring import scheduler
from harness.measuring import warmup as warming
from harness.measuring.campaign import OrderError, choose_order
from harness.measuring.clock import ATTEMPT, MORE, REMEASURE, START, WARMUP, Clock, estimate, plan_spending
from harness.measuring.executor import record_of
from harness.measuring.run_plan import (
    ATTEMPT_OVERHEAD_S,
    JIT_FIRST_RUNS,
    JIT_RUNS,
    JIT_WARMUP_RPS,
    START_S,
    WARMUP_RUNS_STEADY,
    History,
    Job,
    WarmupStep,
    neighbours_by_rate,
    warmed_runs,
)
from harness.measuring.tool_processes import Outcome
from harness.results.records import Attempt
from harness.results.records import Warmup as WarmupResult
from harness.runtime import RunningServer
from harness.runtime.local import LocalRuntime
from harness.servers.readiness import Target
from harness.servers.turns import Turns
from harness.tools import TOOLS, LoadSpec
from harness.tools.output import Errors

GIB = 2**30
SCRATCH = Path("/scratch")


def test_ab_is_sized_in_whole_rounds_of_its_concurrency_from_the_warm_up_rate():
    spec = LoadSpec(url="http://127.0.0.1:1/f", concurrency=10, duration_s=2, timeout_s=10000, continue_on_error=True)
    sized = TOOLS["ab"].sized(spec, 2, 23.4)  # 46.8 requests in 2 s -> 5 rounds of 10
    assert (sized.requests, sized.duration_s, sized.sized_from_rps) == (50, None, 23.4)
    assert TOOLS["ab"].command(sized, SCRATCH) == [
        "ab",
        "-r",
        "-s",
        "10000",
        "-n",
        "50",
        "-c",
        "10",
        "-e",
        "/scratch/percentiles.csv",
        "-g",
        "/scratch/requests.tsv",
        "http://127.0.0.1:1/f",
    ]


def test_ab_takes_the_round_count_nearest_the_time_asked_not_the_next_above():
    spec = LoadSpec(url="http://127.0.0.1:1/f", concurrency=10, duration_s=1.5, timeout_s=10000, continue_on_error=True)
    assert TOOLS["ab"].sized(spec, 1.5, 28).requests == 40  # 42 requests: 4 rounds (1.43 s), not 5 (1.79 s)
    assert TOOLS["ab"].sized(spec, 1.5, 9).requests == 10  # 13.5: one round (1.1 s), not two (2.2 s)
    assert TOOLS["ab"].sized(spec, 1.5, 3).requests == 10  # 4.5 requests: never less than one round
    assert TOOLS["ab"].sized(spec, 1.5, 10).requests == 20  # 15: half a round up


def test_ab_without_a_rate_runs_for_its_time_limit_with_n_after_t():
    spec = LoadSpec(url="http://127.0.0.1:1/f", concurrency=1000, duration_s=1.5)
    argv = TOOLS["ab"].command(TOOLS["ab"].sized(spec, 1.5, None), SCRATCH)
    assert argv[argv.index("-t") : argv.index("-t") + 6] == ["-t", "2", "-n", "2000000", "-c", "1000"]


def test_httperf_calls_per_connection_come_from_the_rate_and_wrk_keeps_its_duration():
    spec = LoadSpec(url="http://127.0.0.1:1/v1/tweets", concurrency=100, duration_s=2, rate=10000)
    sized = TOOLS["httperf"].sized(spec, 2, 31_000)
    assert sized.calls_per_connection == 620 and sized.sized_from_rps == 31_000
    assert "--num-calls" in TOOLS["httperf"].command(sized, SCRATCH)
    assert TOOLS["httperf"].sized(spec, 2, None).calls_per_connection == 100  # first warm-up run: short
    wrk = LoadSpec(url="http://127.0.0.1:1/hello", concurrency=100, threads=2, duration_s=9)
    assert TOOLS["wrk"].sized(wrk, 2, 50_000).duration_s == 2


def test_wrk_gets_whole_seconds():  # "-d 1.5s" makes wrk print its usage and measure nothing
    spec = LoadSpec(url="http://127.0.0.1:1/hello", concurrency=100, threads=2, duration_s=1.5)
    argv = TOOLS["wrk"].command(spec, SCRATCH)
    assert argv[argv.index("-d") + 1] == "2s"


def test_the_quick_profile_sizes_every_attempt_by_time_and_keeps_two_weather_levels():
    quick = scenarios.load("quick")
    for scenario in quick.values():
        for run in scenario.runs:
            if run.load.get("injection") == "at-once":  # Gatling's users all arrive at once: it lasts as they take
                continue
            if scenario.name == "long":  # every connection cycled five times: counted, and out of the bench
                assert run.load["requests"] == 5 * run.load["concurrency"] and not scenario.in_bench
                continue
            assert run.load.get("duration_s"), f"{scenario.name} {run.label} is sized by count"
    assert [r.label for r in quick["weather"].runs] == ["c1", "c256"]
    assert quick["low-compute"].repeat(scenarios.settings("quick")) == 6  # six short attempts: attempt_ranks
    seed = scenarios.load("seed")
    assert seed["low-compute"].runs[0].load["requests"] == 20000  # the seeds' exact parameters stay
    assert len(seed["weather"].runs) == 9


def test_a_run_at_more_connections_than_its_pattern_was_warmed_at_is_warmed_again():
    quick, seed = scenarios.load("quick"), scenarios.load("seed")
    assert [r.label for r in warmed_runs(quick["weather"])] == ["c1", "c256"]
    # every level above the last warmed; c128-t16 follows c128-t8 at the same 128 connections
    assert [r.label for r in warmed_runs(seed["weather"])] == [
        r.label for r in seed["weather"].runs if r.label != "c128-t16"
    ]
    assert [r.label for r in warmed_runs(quick["backend"])] == ["close", "keepalive"]  # the pattern changes
    assert [r.label for r in warmed_runs(quick["latency"])] == ["10%"]  # its own warm-up load, once


def servers(*names):
    known = discover()
    return [known[n] for n in names]


def test_order_is_interleaved_where_the_servers_fit_up_at_once():
    chosen = servers("nginx", "rust", "node")
    ports = {s.name: s.port for s in chosen}
    assert choose_order("auto", chosen, ports, 20 * GIB)[0] == "interleaved"
    assert choose_order("sequential", chosen, ports, 20 * GIB) == ("sequential", "asked for (ORDER=sequential)")
    assert choose_order("auto", chosen[:1], ports, 20 * GIB)[0] == "sequential"


@pytest.mark.parametrize(
    "ports_of, available, why",
    [
        ({"rust": 9000, "node": 9000}, 20 * GIB, "servers share a port (rust and node), so they cannot be up at once"),
        ({}, 5 * GIB, "3 servers up at once need about 6.5 GiB, 5.0 GiB is available"),
    ],
)
def test_order_falls_back_to_sequential_and_says_why(ports_of, available, why):
    chosen = servers("nginx", "rust", "node")
    ports = {s.name: ports_of.get(s.name, s.port) for s in chosen}
    assert choose_order("interleaved", chosen, ports, available) == ("sequential", why)


def test_an_unknown_order_is_refused():
    with pytest.raises(OrderError, match="ORDER='random': use one of auto, interleaved, sequential"):
        choose_order("random", servers("rust"), {"rust": 8086}, 20 * GIB)


def scenario(name, tool, runs, route="hello"):
    return Scenario(name, "", tool, ((route, f"/{route}"),), tuple(runs), None)


SETTINGS = Settings(repeat=3, warmup=WarmupRule(duration_s=1.5, tolerance=0.1, max_runs=5))
BACKEND = scenario(
    "backend",
    "ab",
    [
        LoadRun("close", {"concurrency": 100, "duration_s": 2}),
        LoadRun("keepalive", {"concurrency": 100, "duration_s": 2, "keepalive": True}),
    ],
    "backend",
)
HELLO = scenario("hello", "wrk", [LoadRun("c100", {"concurrency": 100, "threads": 2, "duration_s": 2})])


def test_the_estimate_counts_every_start_warm_up_and_attempt():
    clock = Clock()
    counts = estimate(clock, servers("nginx", "rust"), [BACKEND, HELLO], SETTINGS)
    # per server: backend close and keep-alive (each warmed: the pattern changes), hello
    assert counts == {"servers": 2, "records": 6, "attempts": 18, "warmups": 6}
    per_server = START_S + 3 * WARMUP_RUNS_STEADY * (1.5 + ATTEMPT_OVERHEAD_S) + 3 * 3 * (2 + ATTEMPT_OVERHEAD_S)
    assert clock.total == pytest.approx(2 * per_server)
    assert clock.status().startswith("run 0%, ~")
    # on a machine probed at 10 %, each warm-up is expected to take 0.9 runs more (9 runs per unit of CV)
    unsteady = Clock()
    estimate(unsteady, servers("nginx", "rust"), [BACKEND, HELLO], SETTINGS, unsteadiness=0.10)
    assert unsteady.total - clock.total == pytest.approx(6 * 0.9 * (1.5 + ATTEMPT_OVERHEAD_S))


def test_the_time_left_is_each_kind_of_step_at_the_pace_it_kept_so_far():
    clock = Clock(started=time.monotonic() - 100)
    clock.plan(60, START)
    clock.plan(200, WARMUP)
    clock.plan(400, ATTEMPT)
    assert clock.remaining_s() == 660  # nothing done: the estimate as it stands
    clock.advance(30, START, actual_s=15)  # starts went at half their estimate
    clock.advance(100, WARMUP, actual_s=150)  # warm-ups at 1.5 times theirs
    clock.advance(10, ATTEMPT, actual_s=11)  # too little of the attempts done to trust their own pace
    pooled = (15 + 150 + 11) / (30 + 100 + 10)
    assert clock.remaining_s() == pytest.approx(30 * 0.5 + 100 * 1.5 + 390 * pooled)
    clock.advance(100, ATTEMPT, actual_s=500)  # a stall is not what the rest will cost: at most twice the estimate
    assert clock.pace(ATTEMPT) == 2.0


def test_re_measuring_the_estimate_expected_is_not_counted_twice():
    clock = Clock()
    clock.plan(36, REMEASURE)  # what the estimate expects re-measuring to take
    clock.plan_within(20, REMEASURE)  # a record measured again: within that
    assert clock.planned[REMEASURE] == 36
    clock.advance(20, REMEASURE, actual_s=22)
    clock.plan_within(30, REMEASURE)  # a second one: 20 done and 30 more is past it
    assert clock.planned[REMEASURE] == 50


def test_what_a_run_is_expected_to_spend_beyond_its_plan_stays_within_its_budget():
    def planned(budget_s):
        clock = Clock()
        clock.plan(400, ATTEMPT)
        clock.plan(500, WARMUP)
        plan_spending(clock, Settings(repeat=4, warmup=SETTINGS.warmup, remeasure_s=60, budget_s=budget_s))
        return clock.planned[REMEASURE], clock.planned.get(MORE)

    # 0.6 of the re-measuring time, then further rounds: 30 % of the attempts' time, or 0.8 of what the budget leaves
    assert planned(1140) == (36, 120)
    assert planned(1000) == (36, pytest.approx(0.8 * 64))
    assert planned(920) == (20, 0)  # the budget nearly spent by the plan: what is left of it, and no further rounds
    assert planned(None) == (36, None)  # no budget: re-measuring only (further rounds need one)


def test_the_re_measuring_expected_is_left_only_while_attempts_are():
    clock = Clock()
    clock.plan(100, ATTEMPT)
    clock.plan(36, REMEASURE)
    clock.advance(50, ATTEMPT)
    assert clock.remaining_s() == 50 + 18  # half the attempts to come: half the re-measuring expected
    clock.advance(50, ATTEMPT)
    assert clock.remaining_s() == 0  # the last scenario done: none re-measured, nothing left


def test_an_ab_warm_up_run_lasts_at_least_a_round_of_its_connections():
    many = scenario("long", "ab", [LoadRun("c19000", {"concurrency": 19000, "requests": 100000})], "factorial")
    [rust] = servers("rust")
    step = WarmupStep(Job(None, rust, many, many.runs[0]), first=True)
    # 19,000 requests a run at the assumed 5,000 a second, not the profile's 1.5 s
    assert step.seconds(SETTINGS) == pytest.approx(WARMUP_RUNS_STEADY * (19000 / 5000 + ATTEMPT_OVERHEAD_S))


INCOMPLETE = "%d of 3 attempts: the run ended before the rest"


class FakeExecutor:
    """The rounds' executor (scheduler.Executor) taking nothing: it notes what the rounds ask of it, and answers with
    warm-ups and attempts of its own (req/s: each server's next `rates`, else the attempt's number)."""

    runtime_name = "local"

    def __init__(self, rates: dict | None = None, round_no: int | None = None):
        self.history, self.dead, self.round_no = History(), {}, round_no
        self.rates = {name: iter(values) for name, values in (rates or {}).items()}
        self.calls, self.records, self.sized_from = [], [], []

    def warm_up(self, step, rule):
        self.calls.append(("warm", step.job.name, step.job.run.label, step.first))
        return WarmupResult("ab", [], True, 0.1, 8, 100.0)

    def attempt(self, job, n, repeat, warm_rate, position):
        self.calls.append(("attempt", job.name, job.run.label, n, position))
        self.sized_from.append((job.scenario.name, job.name, warm_rate))
        a = fake_attempt(n)
        a.raw, a.round_position = [f"raw/{job.name}-{job.run.label}-{n}/output.txt"], position
        if job.name in self.rates:
            a.rps = next(self.rates[job.name])
        return a

    def keep(self, job, attempts, warmup, marks):
        """As LoadExecutor.keep: the record made (executor.record_of) and put in place of the one with its key."""
        record = record_of(job, attempts, warmup, marks, self.runtime_name, self.round_no)
        at = next((i for i, r in enumerate(self.records) if r.key == record.key), None)
        if at is None:
            self.records.append(record)
        else:
            self.records[at] = record
        if record.incomplete:
            self.calls.append(("partial", record.server, record.run, len(record.attempts), record.incomplete))
        else:
            self.calls.append(("record", record.server, record.run, [a.rps for a in record.attempts]))
        return record

    def evaluate(self):
        pass

    def record_capacity(self):
        pass


def targets(*names):
    return [Target(s, None) for s in servers(*names)]


def measure(executor, scenario_, members=("rust", "node"), allowance=None):
    scheduler.measure_in_rounds(executor, Clock(), targets(*members), scenario_, SETTINGS, allowance)


def test_interleaved_rounds_warm_every_server_then_rotate_who_goes_first():
    executor = FakeExecutor()
    measure(executor, BACKEND)
    assert executor.calls == [
        ("warm", "rust", "close", True),
        ("warm", "node", "close", True),  # each server's first: a longer warm-up
        # each attempt is kept before the next starts, its record marked incomplete until its last (an interrupt
        # loses none, in the last round too)
        ("attempt", "rust", "close", 1, (1, 2)),
        ("partial", "rust", "close", 1, INCOMPLETE % 1),
        ("attempt", "node", "close", 1, (2, 2)),  # node, warmed last, waited only for rust's attempt
        ("partial", "node", "close", 1, INCOMPLETE % 1),
        ("attempt", "node", "close", 2, (1, 2)),
        ("partial", "node", "close", 2, INCOMPLETE % 2),
        ("attempt", "rust", "close", 2, (2, 2)),
        ("partial", "rust", "close", 2, INCOMPLETE % 2),
        ("attempt", "rust", "close", 3, (1, 2)),
        ("record", "rust", "close", [1.0, 2.0, 3.0]),
        ("attempt", "node", "close", 3, (2, 2)),
        ("record", "node", "close", [1.0, 2.0, 3.0]),
        ("warm", "rust", "keepalive", True),
        ("warm", "node", "keepalive", True),  # keep-alive: a new pattern, first again
        ("attempt", "rust", "keepalive", 1, (1, 2)),
        ("partial", "rust", "keepalive", 1, INCOMPLETE % 1),
        ("attempt", "node", "keepalive", 1, (2, 2)),  # node, warmed last, waited only for rust's attempt
        ("partial", "node", "keepalive", 1, INCOMPLETE % 1),
        ("attempt", "node", "keepalive", 2, (1, 2)),
        ("partial", "node", "keepalive", 2, INCOMPLETE % 2),
        ("attempt", "rust", "keepalive", 2, (2, 2)),
        ("partial", "rust", "keepalive", 2, INCOMPLETE % 2),
        ("attempt", "rust", "keepalive", 3, (1, 2)),
        ("record", "rust", "keepalive", [1.0, 2.0, 3.0]),
        ("attempt", "node", "keepalive", 3, (2, 2)),
        ("record", "node", "keepalive", [1.0, 2.0, 3.0]),
    ]
    assert [(r.server, r.run, r.incomplete) for r in executor.records] == [
        ("rust", "close", None),
        ("node", "close", None),
        ("rust", "keepalive", None),
        ("node", "keepalive", None),
    ]


class RatedWarmUps(FakeExecutor):
    """Warm-ups that read each server's own rate (req/s)."""

    def __init__(self, warm_rates: dict[str, float | None]):
        super().__init__()
        self.warm_rates = warm_rates

    def warm_up(self, step, rule):
        super().warm_up(step, rule)
        return WarmupResult("ab", [], True, 0.1, 8, self.warm_rates[step.job.name])


def test_from_the_second_round_the_servers_closest_in_speed_take_neighbouring_turns():
    """The drift a pair shares is largest on neighbouring turns (docs/noise.md): the pairs hardest to tell apart,
    those closest in rate, are measured next to each other; the first round follows the warm-ups' order."""
    executor = RatedWarmUps({"rust": 90_000.0, "node": 20_000.0, "nginx": None, "play": 85_000.0, "express": 21_000.0})
    measure(executor, HELLO, members=("node", "rust", "nginx", "express", "play"))
    order = [[c[1] for c in executor.calls if c[0] == "attempt" and c[3] == n] for n in (1, 2, 3)]
    assert order[0] == ["node", "rust", "nginx", "express", "play"]
    assert order[1] == ["play", "express", "node", "nginx", "rust"]  # rust play express node nginx, rotated by one
    assert order[2] == ["express", "node", "nginx", "rust", "play"]
    assert neighbours_by_rate(["a", "b"], {"a": None, "b": None}) == ["a", "b"]


def test_records_carry_the_runtime_and_the_round_they_were_measured_in():
    plain, overhead = FakeExecutor(), FakeExecutor(round_no=2)
    measure(plain, BACKEND)
    measure(overhead, BACKEND)
    assert {(r.runtime, r.round) for r in plain.records} == {("local", None)}
    assert {(r.runtime, r.round) for r in overhead.records} == {("local", 2)}
    assert {r.run for r in overhead.records} == {"close", "keepalive"}  # the scenario's own labels
    assert {r.label for r in overhead.records} == {"close local-2", "keepalive local-2"}


def test_a_server_that_died_gets_the_record_of_what_it_did_and_no_further_attempt():
    class Dying(FakeExecutor):
        def attempt(self, job, n, repeat, warm_rate, position):
            a = super().attempt(job, n, repeat, warm_rate, position)
            if job.name == "node" and n == 2:
                self.dead["node"] = "killed by signal 9 (SIGKILL)"
                a.failed, a.rps = "the server died during this load: killed by signal 9 (SIGKILL)", None
            return a

    executor = Dying()
    measure(executor, BACKEND)
    node_attempts = [c for c in executor.calls if c[0] == "attempt" and c[1] == "node"]
    assert [(c[2], c[3]) for c in node_attempts] == [("close", 1), ("close", 2)]  # nothing after its death
    node = next(r for r in executor.records if r.server == "node")
    assert node.failed.startswith("attempt 2: the server died") and node.incomplete is None
    assert [r.run for r in executor.records if r.server == "rust"] == ["close", "keepalive"]


def test_every_finished_attempt_is_kept_before_the_next_starts_also_in_the_last_round():
    """Issue 32: records were written after every member's last attempt, so Ctrl-C during node's last attempt lost
    rust's, finished just before."""

    class Interrupted(FakeExecutor):
        def attempt(self, job, n, repeat, warm_rate, position):
            if (job.name, n) == ("node", 3):
                raise KeyboardInterrupt  # Ctrl-C while node's last attempt runs
            return super().attempt(job, n, repeat, warm_rate, position)

    executor = Interrupted()
    with pytest.raises(KeyboardInterrupt):
        measure(executor, CLOSE_ONLY)
    rust, node = executor.records
    assert (rust.server, [a.rps for a in rust.attempts], rust.incomplete) == ("rust", [1.0, 2.0, 3.0], None)
    assert (node.server, [a.rps for a in node.attempts], node.incomplete) == ("node", [1.0, 2.0], INCOMPLETE % 2)


def test_a_warm_up_comes_right_before_a_server_s_first_attempt_only_where_the_plan_has_one():
    """The plan (run_plan.py) decides the steps once: the clock's estimate counts what the rounds carry out, the
    warm-ups all before the first round, none where the same load was measured just before (long after low-compute),
    nothing between rounds. (Issue 32's re-prime, one more warm-up run right before a first attempt, is gone: four
    benches read first attempts as low with it as without, wrk's and not ab's, whatever the server's place.)"""
    executor, clock = FakeExecutor(), Clock()
    estimate(clock, servers("rust", "node", "akka"), [LOW, LONG], SETTINGS)
    members = targets("rust", "node", "akka")
    for sc in (LOW, LONG):
        scheduler.measure_in_rounds(executor, clock, members, sc, SETTINGS)
    steps = [c[:4] for c in executor.calls if c[0] in ("warm", "attempt")]
    assert steps[:6] == [
        ("warm", "rust", "c1000", True),
        ("warm", "node", "c1000", True),
        ("warm", "akka", "c1000", True),
        ("attempt", "rust", "c1000", 1),
        ("attempt", "node", "c1000", 1),
        ("attempt", "akka", "c1000", 1),
    ]
    assert [c for c in steps[6:] if c[0] != "attempt"] == []
    assert all("reprime" not in r.to_dict()["warmup"] for r in executor.records)
    # the plan decided once: the estimate planned the steps the rounds took (akka's JIT warm-up too)
    assert clock.done_estimate == pytest.approx(clock.total - 3 * START_S)


LOW = scenario(
    "low-compute", "ab", [LoadRun("c1000", {"concurrency": 1000, "duration_s": 2, "continue_on_error": True})]
)
LONG = scenario("long", "ab", [LoadRun("c1000", {"concurrency": 1000, "duration_s": 3, "continue_on_error": True})])
CLOSE_ONLY = scenario("backend", "ab", [BACKEND.runs[0]], "backend")


def test_attempts_that_climb_are_warmed_further_and_measured_again_within_the_budget():
    executor = FakeExecutor(rates={"rust": [100.0, 130.0, 160.0, 200.0, 201.0, 199.0], "node": [50.0, 51.0, 49.0]})
    allowance = scheduler.Allowance(100.0)
    measure(executor, CLOSE_ONLY, allowance=allowance)
    rust, node = executor.records
    # rust climbed 100 → 130 → 160: a further warm-up (not its first), then three attempts back to back
    # (its first record is written before: an interrupt meanwhile keeps it)
    assert executor.calls[-5:] == [
        ("warm", "rust", "close", False),
        ("attempt", "rust", "close", 1, None),
        ("attempt", "rust", "close", 2, None),
        ("attempt", "rust", "close", 3, None),
        ("record", "rust", "close", [200.0, 201.0, 199.0]),
    ]
    assert ("record", "rust", "close", [100.0, 130.0, 160.0]) in executor.calls
    assert [a.rps for a in rust.attempts] == [200.0, 201.0, 199.0]
    assert rust.remeasured["first_attempts"] == [100.0, 130.0, 160.0] and "warming" in rust.remeasured["why"]
    assert rust.remeasured["first_raw"] == [
        ["raw/rust-close-1/output.txt"],
        ["raw/rust-close-2/output.txt"],
        ["raw/rust-close-3/output.txt"],
    ]  # the first attempts' outputs
    assert node.remeasured is None and [a.rps for a in node.attempts] == [50.0, 51.0, 49.0]
    assert allowance.left_s < 100.0


def test_only_the_server_that_climbs_beyond_the_others_of_its_rounds_is_measured_again():
    # every server climbs 100 → 130 → 160 % with the machine; akka climbs beyond them (harness.judging.round_trend)
    shared = [1.0, 1.3, 1.6]
    rates = {name: [level * s for s in shared] for name, level in (("rust", 900.0), ("node", 300.0), ("express", 90.0))}
    rates["akka"] = [50.0 * s * own for s, own in zip(shared, (1.0, 1.5, 2.0))] + [200.0, 201.0, 199.0]
    executor = FakeExecutor(rates=rates)
    measure(executor, CLOSE_ONLY, ("rust", "node", "express", "akka"), scheduler.Allowance(100.0))
    again = {r.server: r.remeasured for r in executor.records if r.remeasured}
    assert list(again) == ["akka"] and "warming" in again["akka"]["why"]


def test_the_run_budget_and_the_ceiling_are_not_measured_again():
    # rust: re-measuring time left, but the run's budget is spent; nginx: the ceiling, never measured again
    executor = FakeExecutor()  # attempts 1, 2, 3: climbing
    measure(executor, CLOSE_ONLY, ("rust", "nginx"), scheduler.Allowance(100.0, lambda: 5.0))
    assert [c for c in executor.calls if c[0] == "warm"] == [
        ("warm", "rust", "close", True),
        ("warm", "nginx", "close", True),
    ]
    assert all(r.remeasured is None for r in executor.records)
    executor = FakeExecutor()
    measure(executor, CLOSE_ONLY, ("rust", "nginx"), scheduler.Allowance(100.0, lambda: 500.0))
    assert [c[1] for c in executor.calls if c[0] == "warm" and c[3] is False] == ["rust"]


def test_without_time_left_a_climbing_record_is_kept_and_flagged():
    executor = FakeExecutor()
    measure(executor, BACKEND)  # attempts 1, 2, 3 climb; no allowance to measure again
    assert all(r.remeasured is None for r in executor.records)
    assert not any(c[0] == "warm" and c[3] is False and c[2] == "close" for c in executor.calls)


def test_a_load_the_server_was_just_measured_with_is_not_warmed_up_again():
    executor = FakeExecutor()
    members = targets("rust", "node")
    for sc in (LOW, LONG, BACKEND):
        scheduler.measure_in_rounds(executor, Clock(), members, sc, SETTINGS)
    warmed = [(c[1], c[2]) for c in executor.calls if c[0] == "warm"]
    # long repeats low-compute's load (only its length differs): sized from low-compute's last attempt (3.0 req/s);
    # backend is another path (and its keep-alive run another pattern): warmed again
    assert warmed == [("rust", "c1000"), ("node", "c1000")] + [
        ("rust", "close"),
        ("node", "close"),
        ("rust", "keepalive"),
        ("node", "keepalive"),
    ]
    assert {rate for sc, _, rate in executor.sized_from if sc == "long"} == {3.0}
    long_records = [r for r in executor.records if r.scenario == "long"]
    assert {(r.warmup.runs == [], r.warmup.after, r.warmup.rate) for r in long_records} == {
        (True, "low-compute c1000", 3.0)
    }
    assert long_records[0].to_dict()["warmup"]["after"] == "low-compute c1000"
    counts = estimate(Clock(), servers("rust"), [LOW, LONG, BACKEND], SETTINGS)
    assert counts["warmups"] == 3  # low-compute, backend close, backend keep-alive: the plan the rounds carried out


class Primed(BaseHTTPRequestHandler):
    """A server that notes each request (the warm-up's primer) in the order of the test's events."""

    order: list = []

    def do_GET(self):
        self.order.append("primer")
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"ok")

    def log_message(self, *args):
        pass


@pytest.mark.integration
def test_ab_warm_up_runs_are_counted_once_a_rate_is_known_and_grow_while_nothing_completes():
    from harness.tools.output import Measurement

    specs = []
    completed = iter([0, 0, 12, 14, 13])  # two runs in which no fibonacci finished in time (ab -t), then a rate

    def load(target, tool, spec, stem, label, what, expected_rps):
        specs.append(spec)
        done = next(completed)
        return Outcome(
            Measurement(requests=done, errors=Errors(), duration_s=1.0, rps=float(done), latency_ms={}), None
        )

    order = Primed.order = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), Primed)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        running = RunningServer(
            name="rust",
            host="127.0.0.1",
            port=server.server_address[1],
            cpus=[0],
            pid=0,
            log="",
            started_at=0,
            startup_s=0,
            runtime="local",
        )
        target = Target(servers("rust")[0], running)
        # a sleeping server (interleaved rounds) is woken before its primer, which would otherwise wait out its timeout
        bench = SimpleNamespace(load=load, dead={}, raw=SCRATCH, turn=lambda name: order.append(f"wake {name}"))
        high = scenario("high-compute", "ab", [LoadRun("c10", {"concurrency": 10, "duration_s": 2})], "fibonacci")
        step = WarmupStep(Job(target, target.server, high, high.runs[0]))
        result = warming.warm_up(bench, step, WarmupRule(duration_s=1, tolerance=0.2, max_runs=6))
    finally:
        server.shutdown()
    # the latest three runs with a rate settle it (12, 14, 13: no trend beyond 20 %); 12 and 14 req/s for 1 s are
    # nearest one round of 10
    assert [(s.duration_s, s.requests) for s in specs] == [(1, None), (2, None), (4, None), (None, 10), (None, 10)]
    assert result.rate == 13.0 and result.steady and result.window == 3  # kept: the unsettled flag judges by it
    assert order[:2] == ["wake rust", "primer"] and order.count("primer") == 10


def fake_attempt(n):
    return Attempt(
        attempt=n,
        started_at=None,
        tool_processes=1,
        commands=[],
        raw=[],
        failed=None,
        samples={},
        requests=10,
        good_requests=10,
        errors=Errors(),
        duration_s=1.0,
        rps=float(n),
        latency_ms={},
    )


@pytest.mark.integration
def test_servers_not_measured_sleep_until_their_turn_and_all_wake_at_the_end():
    sleepers = {name: subprocess.Popen(["sleep", "30"]) for name in ("rust", "node", "nginx")}

    class Runtime(LocalRuntime):  # its pause (SIGSTOP/SIGCONT to the server's processes), on these processes
        def pids(self, running):
            return [sleepers[running].pid]

    class Session:
        runtime = Runtime()

        def is_upstream(self, name):  # the role of nginx's manifest
            return name == "nginx"

    def status(name):  # a signal is delivered asynchronously: give the state a moment to change
        proc = psutil.Process(sleepers[name].pid)
        before, deadline = proc.status(), time.monotonic() + 2
        while time.monotonic() < deadline:
            time.sleep(0.02)
            if proc.status() == before:
                break
            before = proc.status()
        return before

    try:
        known = discover()
        turns = Turns(Session(), [Target(known[n], n) for n in sleepers])
        turns("rust")
        assert (status("rust"), status("node"), status("nginx")) == (
            "sleeping",
            "stopped",
            "sleeping",
        )  # nginx: upstream
        turns("node")
        assert (status("rust"), status("node")) == ("stopped", "sleeping")
        turns.wake_all()
        assert (status("rust"), status("node")) == ("sleeping", "sleeping")
    finally:
        for proc in sleepers.values():
            proc.kill()
            proc.wait()


def test_a_jvm_s_first_connection_per_request_warm_up_makes_its_manifest_s_connections_and_the_clock_counts_them():
    from harness.config.scenarios import WarmupLoad
    from harness.measuring.run_plan import first_connections

    akka, rust = servers("akka", "rust")
    close, keepalive = BACKEND.runs
    assert akka.warmup_connections > 0 and rust.warmup_connections == 0
    assert first_connections(akka, BACKEND, close) == akka.warmup_connections
    assert first_connections(akka, BACKEND, keepalive) == 0 and first_connections(akka, HELLO, HELLO.runs[0]) == 0
    assert first_connections(rust, BACKEND, close) == 0
    # a scenario warmed by a load of its own (gatling-backend: ab on new connections) is judged by that load
    own = Scenario(
        "gatling-backend",
        "",
        "gatling",
        (("backend", "/backend"),),
        (LoadRun("ramp", {"users": 10}),),
        None,
        warmup=WarmupLoad("ab", LoadRun("warm-up", {"concurrency": 100, "duration_s": 1})),
    )
    assert first_connections(akka, own, own.runs[0]) == akka.warmup_connections
    plain, jvm = Clock(), Clock()
    estimate(plain, [rust], [BACKEND], SETTINGS)
    estimate(jvm, [akka], [BACKEND], SETTINGS)
    # its first close warm-up: the runs its JIT takes to go quiet on new connections, or as long as making the
    # connections takes where that is longer; its keep-alive one the runs its JIT takes there (rust: the usual runs)
    run_s = 1.5 + ATTEMPT_OVERHEAD_S
    first = max(JIT_FIRST_RUNS * run_s, akka.warmup_connections / JIT_WARMUP_RPS)
    assert jvm.total - plain.total == pytest.approx(first + JIT_RUNS * run_s - 2 * WARMUP_RUNS_STEADY * run_s)
