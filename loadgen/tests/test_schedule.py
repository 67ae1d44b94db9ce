"""The campaign's order and clock, and attempts sized by time: unit tests (no server, no tool runs)."""
import subprocess
import time
from pathlib import Path
from types import SimpleNamespace

import psutil
import pytest

from harness.config import scenarios
from harness.config.manifest import discover
from harness.config.scenarios import LoadRun, Scenario, Settings, WarmupRule
from harness.measuring import campaign, rounds
from harness.measuring.campaign import OrderError, choose_order
from harness.measuring.clock import JIT_WARMUP_RPS, START_S, Clock, estimate
from harness.results.records import Attempt
from harness.results.records import Warmup as WarmupResult
from harness.runtime import RunningServer
from harness.runtime.local import LocalRuntime
from harness.tools import TOOLS, LoadSpec
from harness.tools.output import Errors

GIB = 2**30
SCRATCH = Path("/scratch")


def test_ab_is_sized_in_whole_rounds_of_its_concurrency_from_the_warm_up_rate():
    spec = LoadSpec(url="http://127.0.0.1:1/f", concurrency=10, duration_s=2, timeout_s=10000, continue_on_error=True)
    sized = TOOLS["ab"].sized(spec, 2, 23.4)  # 46.8 requests in 2 s -> 5 rounds of 10
    assert (sized.requests, sized.duration_s, sized.sized_from_rps) == (50, None, 23.4)
    assert TOOLS["ab"].command(sized, SCRATCH) == [
        "ab", "-r", "-s", "10000", "-n", "50", "-c", "10", "-e", "/scratch/percentiles.csv", "http://127.0.0.1:1/f"]


def test_ab_without_a_rate_runs_for_its_time_limit_with_n_after_t():
    spec = LoadSpec(url="http://127.0.0.1:1/f", concurrency=1000, duration_s=1.5)
    argv = TOOLS["ab"].command(TOOLS["ab"].sized(spec, 1.5, None), SCRATCH)
    assert argv[argv.index("-t"):argv.index("-t") + 6] == ["-t", "2", "-n", "2000000", "-c", "1000"]


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
            assert run.load.get("duration_s"), f"{scenario.name} {run.label} is sized by count"
    assert [r.label for r in quick["weather"].runs] == ["c1", "c256"]
    assert quick["low-compute"].repeat(scenarios.settings("quick")) == 4  # the 5 % rule needs four attempts
    seed = scenarios.load("seed")
    assert seed["low-compute"].runs[0].load["requests"] == 20000  # the seeds' exact parameters stay
    assert len(seed["weather"].runs) == 9


def servers(*names):
    known = discover()
    return [known[n] for n in names]


def test_order_is_interleaved_where_the_servers_fit_up_at_once():
    chosen = servers("nginx", "rust", "node")
    ports = {s.name: s.port for s in chosen}
    assert choose_order("auto", chosen, ports, 20 * GIB)[0] == "interleaved"
    assert choose_order("sequential", chosen, ports, 20 * GIB) == ("sequential", "asked for (ORDER=sequential)")
    assert choose_order("auto", chosen[:1], ports, 20 * GIB)[0] == "sequential"


@pytest.mark.parametrize("ports_of, available, why", [
    ({"rust": 9000, "node": 9000}, 20 * GIB, "servers share a port (rust and node), so they cannot be up at once"),
    ({}, 5 * GIB, "3 servers up at once need about 6.5 GiB, 5.0 GiB is available"),
])
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
BACKEND = scenario("backend", "ab", [LoadRun("close", {"concurrency": 100, "duration_s": 2}),
                                     LoadRun("keepalive", {"concurrency": 100, "duration_s": 2, "keepalive": True})], "backend")
HELLO = scenario("hello", "wrk", [LoadRun("c100", {"concurrency": 100, "threads": 2, "duration_s": 2})])


def test_the_estimate_counts_every_start_warm_up_and_attempt():
    clock = Clock()
    counts = estimate(clock, servers("nginx", "rust"), [BACKEND, HELLO], SETTINGS)
    # per server: backend close and keep-alive (each warmed: the pattern changes), hello
    assert counts == {"servers": 2, "records": 6, "attempts": 18, "warmups": 6}
    per_server = START_S + 3 * 3.5 * (1.5 + 0.4) + 3 * 3 * (2 + 0.4)
    assert clock.total == pytest.approx(2 * per_server)
    assert clock.status().startswith("run 0%, ~")


INCOMPLETE = "%d of 3 attempts: the run ended before the rest"


class Recorder:
    """A session and a store that only note what the campaign does."""

    runtime = SimpleNamespace(name="local")

    def __init__(self):
        self.calls, self.records = [], []

    def put_record(self, record):
        """As RunStore.put_record: in place of the record with its key."""
        at = next((i for i, r in enumerate(self.records) if r.key == record.key), None)
        if at is None:
            self.records.append(record)
        else:
            self.records[at] = record
        if record.incomplete:
            self.calls.append(("partial", record.server, record.run, len(record.attempts), record.incomplete))
        else:
            self.calls.append(("record", record.server, record.run, [a.rps for a in record.attempts]))


def measure_backend(monkeypatch, recorder: Recorder, round_no: int | None = None) -> None:
    calls = recorder.calls
    monkeypatch.setattr(rounds, "warm_up", lambda bench, t, sc, run, rule, first:
                        calls.append(("warm", t.name, run.label, first)) or WarmupResult("ab", [], True, 0.1, 8, 100.0))
    monkeypatch.setattr(rounds, "attempt", lambda bench, t, sc, run, n, repeat, rate, pos:
                        calls.append(("attempt", t.name, run.label, n, pos)) or fake_attempt(n))
    monkeypatch.setattr(rounds, "evaluate_flags", lambda store: None)
    bench = rounds.Bench(session=recorder, store=recorder, round_no=round_no)
    members = [rounds.Target(s, None) for s in servers("rust", "node")]
    rounds.measure_in_rounds(bench, Clock(), members, BACKEND, SETTINGS)


def test_interleaved_rounds_warm_every_server_then_rotate_who_goes_first(monkeypatch):
    recorder = Recorder()
    measure_backend(monkeypatch, recorder)
    calls = recorder.calls
    assert calls == [
        ("warm", "rust", "close", True), ("warm", "node", "close", True),  # each server's first: a longer warm-up
        # each attempt but the last is kept at once, its record marked incomplete (an interrupt loses none)
        ("attempt", "rust", "close", 1, (1, 2)), ("partial", "rust", "close", 1, INCOMPLETE % 1),
        ("attempt", "node", "close", 1, (2, 2)), ("partial", "node", "close", 1, INCOMPLETE % 1),
        ("attempt", "node", "close", 2, (1, 2)), ("partial", "node", "close", 2, INCOMPLETE % 2),
        ("attempt", "rust", "close", 2, (2, 2)), ("partial", "rust", "close", 2, INCOMPLETE % 2),
        ("attempt", "rust", "close", 3, (1, 2)), ("attempt", "node", "close", 3, (2, 2)),
        ("record", "rust", "close", [1.0, 2.0, 3.0]), ("record", "node", "close", [1.0, 2.0, 3.0]),
        ("warm", "rust", "keepalive", True), ("warm", "node", "keepalive", True),  # keep-alive: a new pattern, first again
        ("attempt", "rust", "keepalive", 1, (1, 2)), ("partial", "rust", "keepalive", 1, INCOMPLETE % 1),
        ("attempt", "node", "keepalive", 1, (2, 2)), ("partial", "node", "keepalive", 1, INCOMPLETE % 1),
        ("attempt", "node", "keepalive", 2, (1, 2)), ("partial", "node", "keepalive", 2, INCOMPLETE % 2),
        ("attempt", "rust", "keepalive", 2, (2, 2)), ("partial", "rust", "keepalive", 2, INCOMPLETE % 2),
        ("attempt", "rust", "keepalive", 3, (1, 2)), ("attempt", "node", "keepalive", 3, (2, 2)),
        ("record", "rust", "keepalive", [1.0, 2.0, 3.0]), ("record", "node", "keepalive", [1.0, 2.0, 3.0]),
    ]
    assert [(r.server, r.run, r.incomplete) for r in recorder.records] == [
        ("rust", "close", None), ("node", "close", None), ("rust", "keepalive", None), ("node", "keepalive", None)]


def test_records_carry_the_runtime_and_the_round_they_were_measured_in(monkeypatch):
    plain, overhead = Recorder(), Recorder()
    measure_backend(monkeypatch, plain)
    measure_backend(monkeypatch, overhead, round_no=2)
    assert {(r.runtime, r.round) for r in plain.records} == {("local", None)}
    assert {(r.runtime, r.round) for r in overhead.records} == {("local", 2)}
    assert {r.run for r in overhead.records} == {"close", "keepalive"}  # the scenario's own labels
    assert {r.label for r in overhead.records} == {"close local-2", "keepalive local-2"}


LOW = scenario("low-compute", "ab", [LoadRun("c1000", {"concurrency": 1000, "duration_s": 2, "continue_on_error": True})])
LONG = scenario("long", "ab", [LoadRun("c1000", {"concurrency": 1000, "duration_s": 3, "continue_on_error": True})])


def test_attempts_that_climb_are_warmed_further_and_measured_again_within_the_budget(monkeypatch):
    recorder = Recorder()
    calls = recorder.calls
    rates = {"rust": iter([100.0, 130.0, 160.0, 200.0, 201.0, 199.0]), "node": iter([50.0, 51.0, 49.0])}

    def climbing(n, name):
        a = fake_attempt(n)
        a.rps = next(rates[name])
        return a
    monkeypatch.setattr(rounds, "warm_up", lambda bench, t, sc, run, rule, first:
                        calls.append(("warm", t.name, run.label, first)) or WarmupResult("ab", [], True, 0.1, 8, 100.0))
    monkeypatch.setattr(rounds, "attempt", lambda bench, t, sc, run, n, repeat, rate, pos:
                        calls.append(("attempt", t.name, run.label, n, pos)) or climbing(n, t.name))
    monkeypatch.setattr(rounds, "evaluate_flags", lambda store: None)
    bench = rounds.Bench(session=recorder, store=recorder, remeasure_left_s=100.0)
    members = [rounds.Target(s, None) for s in servers("rust", "node")]
    close_only = scenario("backend", "ab", [BACKEND.runs[0]], "backend")
    rounds.measure_in_rounds(bench, Clock(), members, close_only, SETTINGS)
    rust, node = recorder.records
    # rust climbed 100 → 130 → 160: a further warm-up (not its first), then three attempts back to back
    # (its first record is written before: an interrupt meanwhile keeps it)
    assert calls[-5:] == [("warm", "rust", "close", False), ("attempt", "rust", "close", 1, None),
                          ("attempt", "rust", "close", 2, None), ("attempt", "rust", "close", 3, None),
                          ("record", "rust", "close", [200.0, 201.0, 199.0])]
    assert ("record", "rust", "close", [100.0, 130.0, 160.0]) in calls
    assert [a.rps for a in rust.attempts] == [200.0, 201.0, 199.0]
    assert rust.remeasured["first_attempts"] == [100.0, 130.0, 160.0] and "warming" in rust.remeasured["why"]
    assert node.remeasured is None and [a.rps for a in node.attempts] == [50.0, 51.0, 49.0]
    assert bench.remeasure_left_s < 100.0


def test_the_run_budget_and_the_ceiling_are_not_measured_again(monkeypatch):
    recorder = Recorder()
    calls = recorder.calls
    monkeypatch.setattr(rounds, "warm_up", lambda bench, t, sc, run, rule, first:
                        calls.append(("warm", t.name, run.label, first)) or WarmupResult("ab", [], True, 0.1, 8, 100.0))
    monkeypatch.setattr(rounds, "attempt", lambda bench, t, sc, run, n, repeat, rate, pos:
                        calls.append(("attempt", t.name, run.label, n, pos)) or fake_attempt(n))  # 1, 2, 3: climbing
    monkeypatch.setattr(rounds, "evaluate_flags", lambda store: None)
    close_only = scenario("backend", "ab", [BACKEND.runs[0]], "backend")
    # rust: re-measuring time left, but the run's budget is spent; nginx: the ceiling, never measured again
    bench = rounds.Bench(session=recorder, store=recorder, remeasure_left_s=100.0, budget_left=lambda: 5.0)
    members = [rounds.Target(s, None) for s in servers("rust", "nginx")]
    rounds.measure_in_rounds(bench, Clock(), members, close_only, SETTINGS)
    assert [c for c in calls if c[0] == "warm"] == [("warm", "rust", "close", True), ("warm", "nginx", "close", True)]
    assert all(r.remeasured is None for r in recorder.records)
    bench = rounds.Bench(session=recorder, store=recorder, remeasure_left_s=100.0, budget_left=lambda: 500.0)
    calls.clear()
    rounds.measure_in_rounds(bench, Clock(), members, close_only, SETTINGS)
    assert [c[1] for c in calls if c[0] == "warm" and c[3] is False] == ["rust"]


def test_without_time_left_a_climbing_record_is_kept_and_flagged(monkeypatch):
    recorder = Recorder()
    measure_backend(monkeypatch, recorder)  # attempts 1, 2, 3 climb; SETTINGS leaves no time to measure again
    assert all(r.remeasured is None for r in recorder.records)
    assert not any(c[0] == "warm" and c[3] is False and c[2] == "close" for c in recorder.calls)


def test_a_load_the_server_was_just_measured_with_is_not_warmed_up_again(monkeypatch):
    calls = []
    monkeypatch.setattr(rounds, "warm_up", lambda bench, t, sc, run, rule, first:
                        calls.append(("warm", sc.name, t.name)) or WarmupResult("ab", [], True, 0.1, 8, 100.0))
    monkeypatch.setattr(rounds, "attempt", lambda bench, t, sc, run, n, repeat, rate, pos:
                        calls.append(("attempt", sc.name, t.name, rate)) or fake_attempt(n))
    monkeypatch.setattr(rounds, "evaluate_flags", lambda store: None)
    recorder = Recorder()
    bench = rounds.Bench(session=recorder, store=recorder)
    members = [rounds.Target(s, None) for s in servers("rust", "node")]
    for sc in (LOW, LONG, BACKEND):
        rounds.measure_in_rounds(bench, Clock(), members, sc, SETTINGS)
    warmed = [c[1:] for c in calls if c[0] == "warm"]
    # long repeats low-compute's load (only its length differs): sized from low-compute's last attempt (3.0 req/s);
    # backend is another path (and its keep-alive run another pattern): warmed again
    assert warmed == [("low-compute", "rust"), ("low-compute", "node")] + [("backend", "rust"), ("backend", "node")] * 2
    assert {c[3] for c in calls if c[0] == "attempt" and c[1] == "long"} == {3.0}
    long_records = [r for r in recorder.records if r.scenario == "long"]
    assert {(r.warmup.runs == [], r.warmup.after, r.warmup.rate) for r in long_records} == {(True, "low-compute c1000", 3.0)}
    assert long_records[0].to_dict()["warmup"]["after"] == "low-compute c1000"
    counts = estimate(Clock(), servers("rust"), [LOW, LONG, BACKEND], SETTINGS)
    assert counts["warmups"] == 3  # low-compute, backend close, backend keep-alive


def test_ab_warm_up_runs_are_counted_once_a_rate_is_known_and_grow_while_nothing_completes(monkeypatch):
    from harness.measuring import attempts as measurement
    from harness.tools.output import Measurement

    specs = []
    completed = iter([0, 0, 12, 14, 13])  # two runs in which no fibonacci finished in time (ab -t), then a rate

    def load(target, tool, spec, stem, label, what, expected_rps):
        specs.append(spec)
        done = next(completed)
        return measurement.Outcome(Measurement(requests=done, errors=Errors(), duration_s=1.0, rps=float(done),
                                               latency_ms={}), None)

    order = []
    monkeypatch.setattr(measurement.httpclient, "get", lambda *a, **k: order.append("primer"))
    running = RunningServer(name="rust", host="127.0.0.1", port=1, cpus=[0], pid=0, log="", started_at=0, startup_s=0,
                            runtime="local")
    target = rounds.Target(servers("rust")[0], running)
    # a sleeping server (interleaved rounds) is woken before its primer, which would otherwise wait out its timeout
    bench = SimpleNamespace(load=load, dead={}, raw=SCRATCH, turn=lambda name: order.append(f"wake {name}"))
    high = scenario("high-compute", "ab", [LoadRun("c10", {"concurrency": 10, "duration_s": 2})], "fibonacci")
    result = measurement.warm_up(bench, target, high, high.runs[0], WarmupRule(duration_s=1, tolerance=0.2, max_runs=6))
    # the latest three runs with a rate settle it (12, 14, 13: no trend beyond 20 %)
    assert [(s.duration_s, s.requests) for s in specs] == [(1, None), (2, None), (4, None), (None, 20), (None, 20)]
    assert result.rate == 13.0 and result.steady
    assert order[:2] == ["wake rust", "primer"]


def fake_attempt(n):
    return Attempt(attempt=n, started_at=None, tool_processes=1, commands=[], raw=[], failed=None, samples={},
                   requests=10, good_requests=10, errors=Errors(), duration_s=1.0, rps=float(n), latency_ms={})


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
        turns = campaign.Turns(Session(), [rounds.Target(known[n], n) for n in sleepers])
        turns("rust")
        assert (status("rust"), status("node"), status("nginx")) == ("sleeping", "stopped", "sleeping")  # nginx: upstream
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
    from harness.measuring.attempts import first_connections

    akka, rust = servers("akka", "rust")
    close, keepalive = BACKEND.runs
    assert akka.warmup_connections > 0 and rust.warmup_connections == 0
    assert first_connections(akka, BACKEND, close) == akka.warmup_connections
    assert first_connections(akka, BACKEND, keepalive) == 0 and first_connections(akka, HELLO, HELLO.runs[0]) == 0
    assert first_connections(rust, BACKEND, close) == 0
    # a scenario warmed by a load of its own (gatling-backend: ab on new connections) is judged by that load
    own = Scenario("gatling-backend", "", "gatling", (("backend", "/backend"),), (LoadRun("ramp", {"users": 10}),), None,
                   warmup=WarmupLoad("ab", LoadRun("warm-up", {"concurrency": 100, "duration_s": 1})))
    assert first_connections(akka, own, own.runs[0]) == akka.warmup_connections
    plain, jvm = Clock(), Clock()
    estimate(plain, [rust], [BACKEND], SETTINGS)
    estimate(jvm, [akka], [BACKEND], SETTINGS)
    assert jvm.total - plain.total == pytest.approx(akka.warmup_connections / JIT_WARMUP_RPS)
