"""The calibration's arithmetic (harness/calibrate/known_answers.py): what a load against the calibrated server must
measure, the judgement of what a tool measured, and the plan (loadgen/calibrate.toml) as the harness reads it."""

from pathlib import Path

import pytest
from calibrated_records import one_attempt

from harness.calibrate import calibration
from harness.calibrate import known_answers as ka
from harness.config.scenarios import ScenarioError
from harness.judging import flags
from harness.report import calibration_page, model
from harness.results import flag_kinds as kinds
from harness.results.records import Attempt, Record, Run
from harness.tools.httperf import Httperf

FIXTURES = Path(__file__).parent / "fixtures"
PACED = ka.ServerSettings(service_us=10000, every=20, delay_us=30000)


def test_a_paced_closed_loop_runs_at_c_over_the_mean_cycle_with_a_two_point_latency():
    k = ka.known(PACED, concurrency=16, server_cores=1)
    assert k.limit == ka.PACE_LIMIT
    assert k.rps == pytest.approx(16 / 0.0115)  # 16 connections, 10 ms + 30 ms / 20 each
    assert k.latencies == ((10.0, 0.95), (40.0, 0.05))
    assert ka.percentile(k.latencies, 50) == 10.0
    assert ka.percentile(k.latencies, 95) == 10.0  # exactly 95 % answer in 10 ms
    assert ka.percentile(k.latencies, 95.1) == 40.0
    assert ka.percentile(k.latencies, 99) == 40.0
    assert ka.percentile(k.latencies, 99.9) == 40.0


def test_a_rare_delay_moves_p99_9_but_not_p99():
    k = ka.known(ka.ServerSettings(service_us=2000, every=500, delay_us=8000), concurrency=4, server_cores=1)
    assert ka.percentile(k.latencies, 99) == 2.0
    assert ka.percentile(k.latencies, 99.9) == 10.0
    assert k.rps == pytest.approx(4 / 0.002016)


def test_a_cpu_burn_makes_the_server_the_limit_at_its_cores_over_the_burn():
    k = ka.known(ka.ServerSettings(burn_us=2000), concurrency=8, server_cores=2)
    assert (k.limit, k.rps, k.cost_us) == (ka.SERVER_LIMIT, 1000.0, 2000)
    assert k.latencies == ((8.0, 1.0),)  # 8 requests share 2 cores, 2 ms of CPU each: 8 ms


def test_the_cap_sets_the_rate_and_every_request_waits_its_turn():
    k = ka.known(ka.ServerSettings(cap=1000), concurrency=8, server_cores=1)
    assert (k.limit, k.rps, k.latencies) == (ka.CAP_LIMIT, 1000, ((8.0, 1.0),))


def test_nothing_asked_of_the_server_leaves_the_tool_as_the_limit():
    k = ka.known(ka.ServerSettings(), concurrency=32, server_cores=1)
    assert (k.limit, k.rps, k.latencies) == (ka.TOOL_LIMIT, None, ())


def test_an_open_loop_under_every_bound_runs_at_its_offered_rate():
    k = ka.known(PACED, concurrency=32, server_cores=1, offered_rps=500)
    assert (k.limit, k.rps) == (ka.PACE_LIMIT, 500)
    assert ka.percentile(k.latencies, 99) == 40.0
    beyond = ka.known(ka.ServerSettings(cap=400), concurrency=32, server_cores=1, offered_rps=500)
    assert (beyond.limit, beyond.rps) == (ka.CAP_LIMIT, 400)


def test_wrk_back_fills_a_slow_answer_every_expected_interval():
    # wrk's stats_correct: a 40 ms sample with an 11.5 ms interval gains 28.5 and 17 ms (5.5 is not above 11.5)
    corrected = ka.wrk_corrected(((10.0, 0.95), (40.0, 0.05)), 11.5)
    assert sorted(corrected) == [(10.0, 0.95), (17.0, 0.05), (28.5, 0.05), (40.0, 0.05)]
    assert ka.percentile(corrected, 90) == 17.0  # the truth's p90 is 10 ms
    assert ka.percentile(((10.0, 0.95), (40.0, 0.05)), 90) == 10.0


def test_req_s_passes_within_2_percent_and_a_miss_says_how_much_of_the_load_s_time_it_lost():
    k = ka.known(PACED, concurrency=16, server_cores=1)
    assert ka.judge_rate(k, ka.Observed(rps=k.rps * 0.981)).ok is True
    miss = ka.judge_rate(k, ka.Observed(rps=k.rps * 0.97, duration_s=3.0))
    assert miss.ok is False
    assert miss.note.startswith("-3.0%: as if 90 ms of the 3.0 s carried no requests")  # 3 % of 3 s


def test_percentiles_pass_within_5_percent_or_0_2_ms_whichever_is_wider():
    assert ka.judge_latency("p50", 10.0, 10.49).ok is True
    assert ka.judge_latency("p50", 10.0, 10.51).ok is False
    assert ka.judge_latency("p50", 2.0, 2.19).ok is True  # 5 % of 2 ms is 0.1 ms: the 0.2 ms floor applies
    assert ka.judge_latency("p50", 2.0, 2.21).ok is False
    assert ka.judge_latency("p99", 40.0, None, "httperf gives no percentiles", given=False).ok is None
    lost = ka.judge_latency("p99.9", 40.0, None)  # a figure the tool gives, missing: a parser that dropped it
    assert lost.ok is False and "missing" in lost.note


def test_the_cpu_bound_answer_is_exact_or_restricted_for_any_connections_and_cores():
    burn = ka.ServerSettings(burn_us=2000)
    few = ka.known(burn, concurrency=8, server_cores=16)  # 8 connections cannot keep 16 cores busy
    assert few.rps == pytest.approx(4000) and few.latencies == () and "cannot spread evenly" in few.why
    even = ka.known(burn, concurrency=32, server_cores=16)
    assert even.rps == pytest.approx(8000) and even.latencies == ((4.0, 1.0),) and "not promised" in even.why
    one = ka.known(burn, concurrency=8, server_cores=1)
    assert one.rps == pytest.approx(500) and one.latencies == ((16.0, 1.0),)
    assert ka.figure_ms(ka.known(PACED, 32, 1).latencies, "mean") == pytest.approx(11.5)  # S + D/k: 10 + 30/20


def test_cpu_per_request_is_judged_only_where_the_server_is_the_limit():
    burn = ka.known(ka.ServerSettings(burn_us=2000), concurrency=8, server_cores=1)
    assert ka.judge_cost(burn, ka.Observed(rps=500, cost_us=2190)).ok is True
    assert ka.judge_cost(burn, ka.Observed(rps=500, cost_us=2210)).ok is False
    starved = ka.judge_cost(burn, ka.Observed(rps=500, cost_us=1700, server_wait_ms=450.0))
    assert starved.ok is False and starved.note == (
        "-15.0%: a busy loop answers one request every B of wall time, so the time its core went to others (its "
        "threads waited 450.0 ms in all for a CPU) is CPU it did not spend"
    )
    paced = ka.known(PACED, concurrency=16, server_cores=1)
    assert ka.judge_cost(paced, ka.Observed(rps=1391, cost_us=80)).ok is None


def test_the_saturation_flag_must_fire_when_and_only_when_the_tool_is_the_limit():
    cheap = ka.known(ka.ServerSettings(), concurrency=32, server_cores=1)
    burn = ka.known(ka.ServerSettings(burn_us=2000), concurrency=8, server_cores=1)
    name = kinds.LOADGEN_BOUND.name
    assert ka.judge_flag(cheap, ka.Observed(1e4, saturated=True, server_util=0.4, loadgen_util=0.98), name).ok is True
    quiet = ka.judge_flag(cheap, ka.Observed(1e4, saturated=False, server_util=0.2, loadgen_util=0.2), name)
    assert quiet.ok is False and "neither side kept its cores busy" in quiet.note
    both = ka.judge_flag(cheap, ka.Observed(1e4, cost_us=14.0, server_util=0.95, loadgen_util=0.97), name)
    assert both.ok is None and "premise did not hold" in both.note and "14 µs of CPU per request" in both.note
    assert ka.judge_flag(burn, ka.Observed(500, saturated=True, server_util=0.5, loadgen_util=0.95), name).ok is False
    assert ka.judge_flag(burn, ka.Observed(500, saturated=False, server_util=1.0, loadgen_util=0.1), name).ok is True


def test_the_project_plan_gives_every_tool_a_load_with_its_settings_in_the_query():
    plan = calibration.read_plan()
    assert {load.tool for load in plan.loads} == {"ab", "wrk", "httperf", "oha", "h2load", "gatling"}
    scenarios = {s.name: s for s in calibration.scenarios(plan)}
    assert scenarios["calibrate-wrk-paced"].targets == (
        ("hello", "/hello?service_us=40000&every=20&delay_us=40000&fail_every=10"),
    )
    assert scenarios["calibrate-ab-cheap"].targets == (("hello", "/hello"),)
    assert not any(s.in_bench for s in scenarios.values())
    assert [load.open_loop for load in plan.loads if load.tool == "oha"] == [False, True, False, False]


def test_a_plan_with_an_unknown_server_setting_is_one_error_naming_it(tmp_path):
    path = tmp_path / "calibrate.toml"
    path.write_text('[[load]]\ntool = "wrk"\nserver = { sleep_us = 5 }\nrun = { concurrency = 1, duration_s = 1 }\n')
    with pytest.raises(ScenarioError, match=r"\[\[load\]\] 1: server = \{'sleep_us': 5\}"):
        calibration.read_plan(path)


def recorded(server: str, scenario: str, rps: float, cost_cpu_s: float, requests: int) -> Record:
    return one_attempt(
        {"server": server, "scenario": scenario, "run": "paced", "tool": "wrk"},
        rps,
        requests,
        latency_ms={"p50": 40.3, "p99": 80.4},
        samples={"server": {"cores": 1, "cpu_s": cost_cpu_s}, "loadgen": {"cores": 1, "cpu_s": 0.1}},
    )


def test_a_recorded_load_is_judged_figure_by_figure_and_kept_out_of_the_ranking():
    plan = calibration.read_plan()
    wrk = next(load for load in plan.loads if load.scenario == "calibrate-wrk-paced")
    run = Run(
        "r", {}, {}, {"calibrated": {"roles": ["calibrated"]}}, [recorded("calibrated", wrk.scenario, 755.0, 0.2, 2265)]
    )
    verdicts = calibration.judge_run(run, calibration.Plan((wrk,), plan.settings), "calibrated")
    figures = {f["figure"]: f for f in verdicts[0]["figures"]}
    assert figures["req/s"]["known"] == pytest.approx(761.9) and figures["req/s"]["ok"] is True
    assert (figures["p50"]["known"], figures["p50"]["ok"]) == (40.0, True)
    assert (figures["p99"]["known"], figures["p99"]["ok"]) == (80.0, True)
    assert (figures["p99.9"]["measured"], figures["p99.9"]["ok"]) == (None, False)  # wrk gives it: missing, a miss
    assert (figures["mean"]["known"], figures["mean"]["ok"]) == (42.0, False)  # S + D/k
    assert figures["max"]["known"] == 80.0 and figures[kinds.LOADGEN_BOUND.name]["ok"] is True
    run.calibration = verdicts
    assert calibration_page.counts(run) == (
        4,
        5,
    )  # p90, p99.9, max, mean and the 503s missing from this hand-made record
    assert model.build(run).scenarios == []  # never ranked: its records are on the calibration page only
    assert not run.records[0].ranked


def test_wrk_s_own_correction_is_printed_beside_the_truth_where_it_moves_a_percentile():
    settings = ka.ServerSettings(service_us=10000, every=100, delay_us=30000)
    load = calibration.CalibrationLoad(
        "wrk", "paced", settings, calibration.parse_run({"concurrency": 16, "duration_s": 3}, "test", 0)
    )
    k = ka.known(settings, 16, 1)
    record = recorded("calibrated", load.scenario, 16 / 0.0103, 0.1, 4660)
    # 1 in 100 held 40 ms, one connection's interval 10.3 ms: wrk adds 29.7 and 19.4 ms samples for each, so 3 of
    # 102 samples lie above 10 ms and its p99 is the second of them, where the truth's p99 is 10 ms
    expected, note = calibration.tool_note(load, record, "p99", ka.percentile(k.latencies, 99), k)
    assert ka.percentile(k.latencies, 99) == 10.0
    assert expected == pytest.approx(29.7)
    assert "it should read 29.700 ms, +19.700 ms from the truth" in note
    assert calibration.tool_note(load, record, "p50", 10.0, k) == (
        None,
        "wrk's correction of coordinated omission adds 2 sample(s) per delayed answer here (every 10.30 ms it "
        "held its connection): not enough to move p50",
    )
    ab = calibration.CalibrationLoad("ab", "paced", settings, load.run)
    assert calibration.tool_note(ab, record, "p50", 10.0, k) == (None, "")  # p50 10.3, p99 40.4: µs from its -e file
    whole = recorded("calibrated", load.scenario, 1380.0, 0.1, 4140)
    whole.latency_ms = {"p50": 10.0, "p99": 40.0}
    assert calibration.tool_note(ab, whole, "p50", 10.2, k) == (10, "ab's figures are its table's whole ms (±0.5 ms)")


def test_httperf_s_known_rate_holds_its_connection_opening_and_its_slowest_connection():
    """httperf's paced load in a make calibrate of 2026-11-26 (32 connections opened at 1,000/s, 216 calls each, S 40
    ms, 1 in 20 held 40 ms more) read 731.4 req/s; the unluckiest connection has 17.9 of its calls delayed where the mean is
    10.8, and the last opened 31 ms late: 6,912 requests in 9.387 s, 736.3 req/s (not 761.9, the closed loop's)."""
    paced = ka.ServerSettings(service_us=40000, every=20, delay_us=40000)
    load = calibration.CalibrationLoad(
        "httperf", "paced", paced, calibration.parse_run({"concurrency": 32, "rate": 1000, "duration_s": 10}, "test", 0)
    )
    record = recorded("calibrated", load.scenario, 731.4, 0.2, 6912)
    k = calibration.with_connection_opening(load, record, ka.known(paced, 32, 1))
    assert k.rps == pytest.approx(736.3, abs=0.1) and "the last 31 ms" in k.why and "17.9 of its 216" in k.why
    assert ka.judge_rate(k, ka.Observed(731.4)).ok is True
    assert ka.expected_most(216, 0.05, 1) == pytest.approx(10.8)


def test_gatling_s_rate_needs_no_note_now_that_it_is_over_its_measured_span():
    load = next(load for load in calibration.read_plan().loads if load.tool == "gatling")
    record = recorded("calibrated", load.scenario, 200.0, 0.2, 4000)
    assert calibration.rate_note(load, record) == ""


def test_gatling_is_judged_by_its_whole_ms_reading_its_max_too():
    """Gatling's figures of the open load in a make calibrate of 2026-11-26 (S 10 ms, 1 in 20 held 30 ms more): p50
    11 (two whole-ms timestamps: within 1 ms of the 10 ms truth); a p50 2 ms off still misses. Its max is judged like
    any tool's now that its JVM's start is in its own warm-up: 43 within 40 + 2 + 1, 193 (the first users of a fresh
    JVM, before the warm-up) and a max under the server's slowest answer (a request lost) miss."""
    load = next(load for load in calibration.read_plan().loads if load.tool == "gatling")

    def judged(name: str, known_ms: float, measured_ms: float) -> ka.Figure:
        return calibration.within_resolution(load, ka.judge_latency(name, known_ms, measured_ms), known_ms)

    p50 = judged("p50", 10.0, 11.0)
    assert p50.ok is True and p50.note.startswith("within the tolerance and the tool's reading (±1 ms of its time)")
    assert judged("p50", 10.0, 11.6).ok is False  # 0.5 ms tolerance and 1 ms of reading
    assert judged("mean", 11.5, 12.3).ok is True
    assert judged("max", 40.0, 43.0).ok is True
    assert judged("max", 40.0, 193.0).ok is False and "+153.000 ms" in judged("max", 40.0, 193.0).note
    assert judged("max", 40.0, 30.0).ok is False
    other = calibration.CalibrationLoad("wrk", "open", load.server, load.run)
    assert calibration.within_resolution(other, ka.judge_latency("p50", 10.0, 11.0), 10.0).ok is False
    # ab's p99.9 from -g, whole ms: a burn-close load's 40 ms read 42 (its own rounding of up to 0.5 ms beside 2 ms)
    ab = calibration.CalibrationLoad("ab", "burn-close", load.server, load.run)
    assert calibration.within_resolution(ab, ka.judge_latency("p99.9", 40.0, 42.001), 40.0).ok is True
    assert calibration.within_resolution(ab, ka.judge_latency("p99.9", 40.0, 42.6), 40.0).ok is False
    assert calibration.within_resolution(ab, ka.judge_latency("max", 40.0, 42.6), 40.0).ok is False


def test_a_latency_miss_says_what_the_figures_show_about_it():
    burn = ka.known(ka.ServerSettings(burn_us=2000), concurrency=8, server_cores=1)
    starved = ka.Observed(rps=250, server_util=0.5, loadgen_util=0.1)
    assert ka.latency_context(burn, starved, 16.0) == (
        "at the 50% of its cores the server had, the known latency is 32.0 ms"
    )
    paced = ka.known(PACED, concurrency=16, server_cores=1)
    busy_tool = ka.Observed(rps=900, saturated=True, server_util=0.05, loadgen_util=1.1)
    assert ka.latency_context(paced, busy_tool, 10.0) == (
        "the tool was saturated (110% of its CPU): its own queueing is in these latencies"
    )
    assert ka.latency_context(paced, ka.Observed(rps=1391, server_util=0.05, loadgen_util=0.1), 10.0) == ""
    waited = ka.Observed(rps=490, server_util=1.0, loadgen_util=0.1, server_wait_ms=12.5, server_steal_ms=20)
    assert ka.latency_context(burn, waited, 16.0) == (
        "the server's threads waited 12.5 ms in all for a CPU while runnable (other work on its cores, /proc "
        "schedstat), and the hypervisor stole 20 ms of its CPUs (/proc/stat, 10 ms ticks): each wait holds every "
        "request in flight that much longer"
    )
    # waits that add up to less than one request's miss are not its cause (burn at 8 connections: p99.9 16 ms, read
    # 17.8 ms beside 0.3 ms of run delay in a make calibrate here)
    briefly = ka.Observed(rps=496, server_util=1.0, loadgen_util=0.03, server_wait_ms=0.3, server_steal_ms=0)
    assert ka.latency_context(burn, briefly, 16.0, 1.838) == (
        "the server's threads waited 0.3 ms in all for a CPU while runnable (other work on its cores, /proc "
        "schedstat), and the hypervisor stole 0 ms of its CPUs (/proc/stat, 10 ms ticks): less in all than this one "
        "figure's +1.838 ms, so not its cause; the rest is elsewhere: the tool's side, the server's order of service, "
        "or a stall of the whole virtual machine shorter than steal's 10 ms ticks"
    )
    assert ka.latency_context(burn, waited, 16.0, 1.838).endswith(
        "each wait holds every request in flight that much longer"
    )
    alone = ka.Observed(rps=490, server_util=1.0, loadgen_util=0.1, server_wait_ms=0.0, server_steal_ms=0)
    assert ka.latency_context(burn, alone, 16.0) == (
        "the server never waited for its CPU (run delay 0, and the hypervisor stole 0 ms of its CPUs (/proc/stat, "
        "10 ms ticks)): the tail is on the tool's side or below what the machine shows"
    )


def test_httperf_s_saturation_is_judged_by_its_pace_not_its_cpu():
    """httperf polls its core at 100 % whatever its rate: what it shows of its pace decides (a real output: 20
    connections of 500 calls at 18,508 req/s, each connection's cycle 1.08 ms of which its reply time is 1.0 ms)."""
    pace = Httperf().parse((FIXTURES / "httperf_ok.txt").read_text(), FIXTURES).details

    def held(reply_ms=1.0, **changed):
        details = {"httperf": {**pace["httperf"], "reply_ms": reply_ms, **changed}}
        record = Record.from_dict(
            {
                "server": "s",
                "scenario": "x",
                "tool": "httperf",
                "concurrency": 20,
                "load": {"rate": 1000},
                "attempts": [],
            }
        )
        return flags.httperf_held(record, Attempt.from_dict({"rps": 18507.7, "details": details}))

    assert held() == pytest.approx(0.075, abs=0.002)  # the server's answers hold each connection: not the tool
    assert held(reply_ms=0.1) == pytest.approx(0.907, abs=0.002)  # answers at once: httperf holds its connections
    assert held(client_errors=2) == 1.0  # it ran out of descriptors, ports or table entries
    assert held(connect_burst=2, replies_per_connection=1.0, connection_rate=997.9) == 0.0  # one late tick, on time
    assert held(replies_per_connection=1.0, connection_rate=900.0) == 1.0  # a connection per call, under its --rate
    assert held(replies_per_connection=1.0, connection_rate=995.0) == 0.0


def test_the_503s_of_the_error_mode_are_counted_exactly_or_missed():
    """1 in 10 of 7,600 answered requests are 503s: 760, give or take one and the answers in flight (32 connections)
    when a timed tool stops; a tool that counts none, or every error twice, misses."""
    assert ka.judge_failures(10, 7600, 760, 32).ok is True
    assert ka.judge_failures(10, 7600, 764, 32).ok is True  # 1 + 32/10 answers either way
    assert (
        ka.judge_failures(10, 7600, 0, 32).ok is False
        and "-760 against 1 in 10" in ka.judge_failures(10, 7600, 0, 32).note
    )
    assert ka.judge_failures(10, 7600, 1520, 32).ok is False
