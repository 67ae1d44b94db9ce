"""Open-model load: oha's parser on real outputs, its command line, the latency scenario's data, capacity at a latency
target, and, against a real responder that stalls, that the corrected latency shows what a closed loop hides."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from ports import free_port

from harness.config import scenarios
from harness.judging import capacity, flags
from harness.results.records import Run
from harness.tools import TOOLS, LoadSpec, ToolFailed, find_binary

FIXTURES = Path(__file__).parent / "fixtures" / "oha"
RESPONDER = Path(__file__).parent / "responders" / "keepalive.py"
OHA = TOOLS["oha"]


# -- oha's output ------------------------------------------------------------------------------------------------------


def test_oha_json_at_a_constant_rate_is_read_with_its_corrected_percentiles():
    m = OHA.parse((FIXTURES / "ok_rate.json").read_text(), FIXTURES)
    assert m.requests == 400 and m.errors.total == 0
    assert m.duration_s == pytest.approx(2.002395012)
    assert m.rps == pytest.approx(400 / 2.002395012)
    assert m.latency_ms == {"p50": 1.5939, "p90": 2.0486, "p99": 3.8997, "p99.9": 8.1252, "max": 8.1252, "mean": 1.7036}
    assert m.details["oha"]["percentiles_ms"]["p99.99"] == 8.1252
    assert m.details["oha"]["status"] == {"200": 400}
    # its histogram: the JSON's 9 levels and the max, exact at the levels (to the µs)
    assert m.distribution.count == 400
    assert [m.distribution.percentile_ms(p) for p in (10, 50, 99, 99.9)] == [1.416, 1.594, 3.9, 8.125]


def test_oha_timeouts_are_timeouts_and_leave_no_latency():
    m = OHA.parse((FIXTURES / "timeout.json").read_text(), FIXTURES)
    assert m.requests == 198 and m.errors.timeout == 198 and m.errors.total == 198
    assert m.rps == 0.0 and m.good_requests == 0
    assert m.latency_ms["p99"] is None and m.latency_ms["max"] is None


def test_oha_refused_connections_are_connect_errors():
    m = OHA.parse((FIXTURES / "refused.json").read_text(), FIXTURES)
    assert m.requests == 100 and m.errors.connect == 100 and m.errors.total == 100
    assert m.details["oha"]["errors"] == {"Connection refused (os error 111)": 100}


def test_oha_without_a_json_summary_fails_with_its_last_line():
    with pytest.raises(ToolFailed, match="error: invalid value"):
        OHA.parse("error: invalid value 'x' for '-q <QUERY_PER_SECOND>'\n", FIXTURES)


def test_oha_command_offers_a_rate_with_latency_correction_and_waits_for_the_last_answers(tmp_path):
    argv = OHA.command(
        LoadSpec(url="http://127.0.0.1:1/hello", concurrency=100, duration_s=9.5, threads=2, rate=1234.5, timeout_s=30),
        tmp_path,
    )
    assert argv[0] == OHA.binary and argv[-1] == "http://127.0.0.1:1/hello"
    joined = " ".join(argv)
    for part in (
        "-z 10s",
        "-c 100",
        "-q 1234.5 --latency-correction",
        "-w",
        "--no-tui",
        "--output-format json",
        "--worker-threads 2",
        "-t 30s",
    ):
        assert part in joined
    closed = OHA.command(LoadSpec(url="http://127.0.0.1:1/", concurrency=10, duration_s=2), tmp_path)
    assert "-q" not in closed and "--latency-correction" not in closed
    with pytest.raises(ValueError, match="duration"):
        OHA.command(LoadSpec(url="http://127.0.0.1:1/", concurrency=10), tmp_path)


# -- the latency scenario's data ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("profile", scenarios.PROFILES)
def test_latency_steps_are_shares_of_a_closed_loop_warm_up(profile):
    latency = scenarios.load(profile)["latency"]
    assert latency.tool == "oha" and latency.warmup.tool == "wrk" and not latency.in_bench
    assert [r.rate_share for r in latency.runs] == [0.10, 0.25, 0.50, 0.75, 0.90, 1.00, 1.10]
    assert all(r.load["duration_s"] >= (60 if profile == "seed" else 10) for r in latency.runs)
    assert latency.repeat(scenarios.settings(profile)) == 1
    assert latency.repeat(scenarios.settings(profile, repeat=3)) == 3  # REPEAT wins


def test_a_rate_share_without_a_warm_up_load_or_not_positive_is_refused(tmp_path):
    base = (
        "[settings.quick]\nrepeat = 1\nwarmup = { duration_s = 1, tolerance = 0.1, max_runs = 2 }\n"
        '[s]\ntool = "oha"\ntargets = [{ route = "hello", path = "/hello" }]\n'
    )
    path = tmp_path / "s.toml"
    path.write_text(base + "profile.quick = { runs = [{ rate_share = 0.5, concurrency = 10, duration_s = 1 }] }\n")
    with pytest.raises(scenarios.ScenarioError, match="need a `warmup` load"):
        scenarios.load("quick", path)
    path.write_text(
        base + 'warmup = { tool = "wrk", concurrency = 10 }\n'
        "profile.quick = { runs = [{ rate_share = -1, concurrency = 10, duration_s = 1 }] }\n"
    )
    with pytest.raises(scenarios.ScenarioError, match="rate_share = -1 must be a positive number"):
        scenarios.load("quick", path)


# -- capacity at a latency target --------------------------------------------------------------------------------------


def _step(label, offered, achieved, p99, errors=0, server_cpu=0.5, loadgen_cpu=0.5):
    attempt = {
        "attempt": 1,
        "rps": achieved,
        "duration_s": 10.0,
        "requests": int(achieved * 10),
        "errors": {"timeout": errors},
        "latency_ms": {"p99": p99},
        "samples": {
            "server": {"cores": 1, "cpu_s": server_cpu * 10},
            "loadgen": {"cores": 1, "cpu_s": loadgen_cpu * 10},
        },
        "details": {"offered_rps": offered},
    }
    return {
        "server": "s",
        "scenario": "latency",
        "run": label,
        "path": "/hello",
        "rps": achieved,
        "latency_ms": {"p99": p99},
        "errors": {"timeout": errors},
        "attempts": [attempt],
        "details": {"offered_rps": offered},
    }


def _run(*steps) -> Run:
    run = Run.from_dict({"schema": 3, "run_id": "t", "records": list(steps), "servers": {}})
    flags.evaluate(run)
    return run


def test_capacity_is_the_highest_step_held_without_errors_within_the_target():
    run = _run(
        _step("10%", 1000, 1000, 1.0),
        _step("50%", 5000, 4990, 8.0),
        _step("75%", 7500, 7480, 25.0),
        _step("90%", 9000, 9000, 4.0, errors=3),
    )
    c = capacity.of_run(run, 10.0)["s"]["latency"]
    assert (c["rps"], c["step"], c["p99_ms"], c["lower_bound"]) == (5000, "50%", 8.0, False)
    assert [s["why_not"] for s in c["steps"]] == [None, None, "p99 25.0 ms above 10 ms", "3 errors"]
    assert capacity.of_run(run, 30.0)["s"]["latency"]["rps"] == 7500


def test_a_step_the_load_generator_could_not_offer_is_flagged_and_makes_the_capacity_a_lower_bound():
    run = _run(_step("50%", 5000, 5000, 2.0), _step("75%", 7500, 6000, 3.0, server_cpu=0.4, loadgen_cpu=0.95))
    assert flags.names(run.records[1]) == ["loadgen-saturated", "rate-not-held"]
    assert "spread" not in flags.names(run.records[0])  # a step's req/s is its offered rate, not a spread
    c = capacity.of_run(run, 10.0)["s"]["latency"]
    assert c["rps"] == 5000 and c["lower_bound"] and "measured the load generator" in c["why"]


def test_a_server_that_is_the_limit_is_not_flagged_and_no_step_held_says_why():
    run = _run(_step("10%", 1000, 900, 50.0, server_cpu=0.98, loadgen_cpu=0.3))
    assert flags.names(run.records[0]) == []
    c = capacity.of_run(run, 10.0)["s"]["latency"]
    assert c["rps"] is None and "achieved 90.0% of the offered rate" in c["why"]


def test_a_bad_latency_target_is_refused(monkeypatch):
    monkeypatch.setenv("SLO_P99_MS", "fast")
    with pytest.raises(capacity.CapacityError, match="SLO_P99_MS='fast'"):
        capacity.slo_from_env()
    monkeypatch.setenv("SLO_P99_MS", "25")
    assert capacity.slo_from_env() == 25.0


# -- coordinated omission, for real --------------------------------------------------------------------------------------


@pytest.mark.integration
@pytest.mark.skipif(not find_binary(OHA), reason="oha is not built: make setup-oha")
@pytest.mark.skipif(not (find_binary(TOOLS["wrk"]) and find_binary(TOOLS["ab"])), reason="wrk, ab: make setup")
def test_a_stalling_responder_shows_in_the_corrected_p99_and_hides_in_the_closed_loop_one(tmp_path):
    """The responder is stopped (SIGSTOP) for 200 ms of every second, so a fifth of the requests users would send
    meet a stall. A closed loop (ab; oha without a rate) sends a connection's next request only after the answer: each
    stall costs it one slow sample per connection, its p99 stays fast and only its max shows the stall. oha at a
    constant rate measures from each request's planned start, and its p99 shows the stall.
    wrk 4.1 is a closed loop too, but corrects its histogram itself (wrk.c's stats_correct back-fills, for each sample
    slower than a connection's mean interval, the samples that would have been sent meanwhile): its p99 shows this
    stall, which this test asserts as well, so the harness's wrk latencies are known to be such estimates."""
    port = free_port()
    responder = subprocess.Popen([sys.executable, str(RESPONDER), str(port)], stderr=subprocess.DEVNULL)
    stop = threading.Event()

    def stall():
        while not stop.wait(0.8):
            os.kill(responder.pid, signal.SIGSTOP)
            time.sleep(0.2)
            os.kill(responder.pid, signal.SIGCONT)

    staller = threading.Thread(target=stall, daemon=True)

    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.05)
        staller.start()
        url = f"http://127.0.0.1:{port}/"
        results = {}
        for key, name, spec in (
            ("ab", "ab", LoadSpec(url=url, concurrency=4, requests=8000)),
            ("oha closed", "oha", LoadSpec(url=url, concurrency=4, threads=1, duration_s=4)),
            ("oha at a rate", "oha", LoadSpec(url=url, concurrency=50, threads=1, duration_s=4, rate=300)),
            ("wrk", "wrk", LoadSpec(url=url, concurrency=4, threads=1, duration_s=3)),
        ):
            tool = TOOLS[name]
            scratch = tmp_path / key.replace(" ", "-")
            scratch.mkdir()
            out = subprocess.run(tool.command(spec, scratch), capture_output=True, text=True, timeout=60)
            results[key] = tool.parse(out.stdout + out.stderr, scratch)
    finally:
        stop.set()
        if staller.is_alive():  # its last SIGCONT sent before the responder is killed (and its pid reaped)
            staller.join()
        os.kill(responder.pid, signal.SIGCONT)
        responder.kill()
        responder.wait()
    assert all(m.errors.total == 0 and m.requests > 500 for m in results.values()), results
    for closed in ("ab", "oha closed"):
        assert results[closed].latency_ms["max"] >= 150, (closed, results[closed].latency_ms)  # it met the stalls...
        assert results[closed].latency_ms["p99"] < 50, (closed, results[closed].latency_ms)  # ...its p99 hides them
    assert results["oha at a rate"].latency_ms["p99"] >= 100, results["oha at a rate"].latency_ms  # this one shows them
    assert results["wrk"].latency_ms["p99"] >= 100, results["wrk"].latency_ms  # wrk's own correction


def test_the_report_ranks_a_stepped_scenario_by_capacity_and_draws_latency_against_offered_load(tmp_path):
    from harness.export import charts, csv_export, markdown
    from harness.report import model as report_model

    fast = [_step(f"{p}%", 100 * p, 100 * p, p / 10) for p in (10, 50, 90)]  # p99 1, 5, 9 ms: all held
    slow = [{**_step(f"{p}%", 50 * p, 50 * p, p / 2), "server": "t"} for p in (10, 50, 90)]  # 5, 25, 45 ms
    run = _run(*fast, *slow)
    run.conditions["slo_p99_ms"] = 10.0
    m = report_model.build(run)
    assert m.scenarios[0].is_stepped and not m.scenarios[0].is_matrix
    assert [(s, c["rps"]) for s, c in m.capacities("latency")] == [("s", 9000), ("t", 500)]
    md = markdown.render(m)
    assert "| latency | capacity at p99 ≤ 10 ms | s | 9,000 req/s |" in md
    assert "| t | 50% | 2,500 | 2,500 | 25.00 | 0 | p99 25.0 ms above 10 ms |" in md
    rows = csv_export.render(m).splitlines()
    header = rows[0].split(",")
    first = dict(zip(header, rows[1].split(",")))
    assert first["offered_rps"] and first["capacity_rps"] in ("9000", "500") and first["capacity_slo_p99_ms"] == "10.0"
    drawn = charts.write(m, tmp_path)
    assert list(drawn) == ["latency-latency-steps"] and drawn["latency-latency-steps"].stat().st_size > 10_000
