"""The flag rules, on hand-made records and on a recorded run (fixtures/results_v2: nginx, rust, node over every
scenario, plus a deliberately saturated wrk -t1 -c1000 run and a server answering 500)."""

import copy
from pathlib import Path

import pytest

from harness.export import markdown
from harness.judging import flags, ranking
from harness.report import model
from harness.results import flag_kinds
from harness.results import records as results
from harness.results.records import Record, Run

FIXTURE = Path(__file__).parent / "fixtures" / "results_v2" / "results.json"
NO_ERRORS = {"connect": 0, "read": 0, "write": 0, "timeout": 0, "non_2xx": 0, "length": 0, "other": 0, "total": 0}


def attempt(rps, server_cpu=0.95, loadgen_cpu=0.5, duration=2.0, errors=None, failed=None):
    return {
        "rps": rps,
        "failed": failed,
        "duration_s": duration,
        "errors": errors or dict(NO_ERRORS),
        "latency_ms": {"p99": 5.0},
        "samples": {
            "server": {"cores": 1, "cpu_s": server_cpu * duration, "cpu_util": server_cpu * 0.9},
            "loadgen": {"cores": 1, "cpu_s": loadgen_cpu * duration, "cpu_util": loadgen_cpu * 0.9},
        },
    }


def rec(server="rust", scenario="hello", run="c100", path="/hello", rates=(1000.0, 1005.0, 995.0), **kw):
    attempts = [attempt(r, **kw) for r in rates]
    measured = sorted(r for r in rates if r is not None)
    errors = kw.get("errors") or dict(NO_ERRORS)
    total_errors = {k: v * len(rates) for k, v in errors.items()}
    requests = int(sum(r or 0 for r in rates) * 2)
    return {
        "server": server,
        "scenario": scenario,
        "run": run,
        "path": path,
        "rps": measured[len(measured) // 2] if measured else None,
        "requests": requests,
        "good_requests": max(requests - total_errors["total"], 0),
        "errors": total_errors,
        "failed": kw.get("failed"),
        "attempts": attempts,
        "summary": None,
        "flags": [],
        "ranked": True,
    }


def data(*records, verification=None, roles=None) -> Run:
    """`roles`: {server: [roles]} as a run records them; None: a run of an older harness, which recorded none."""
    servers = {r["server"] for r in records}
    return Run.from_dict(
        {
            "records": list(records),
            "servers": {name: {"roles": list(r)} for name, r in roles.items()} if roles is not None else {},
            "verification": verification
            if verification is not None
            else {s: {"ok": True, "checks": 10, "failures": []} for s in servers},
        }
    )


def evaluated(*records, **kw) -> list[Record]:
    run = data(*records, **kw)
    flags.evaluate(run)
    return run.records


def names(r: Record) -> list[str]:
    return [f.name for f in r.flags]


def reason(r: Record, i: int = 0) -> str:
    return r.flags[i].reason


def test_clean_record_is_ranked_and_gets_its_summary():
    (r,) = evaluated(rec())
    assert r.flags == [] and r.ranked is True
    assert r.summary.rps["median"] == 1000.0


def test_errors_flag_with_rate_and_causes():
    errors = dict(NO_ERRORS, non_2xx=10, timeout=2, total=12)
    (r,) = evaluated(rec(errors=errors))
    assert names(r) == ["errors"] and r.ranked is False
    assert "36 of 6,000 requests failed (0.60%)" in reason(r) and "non_2xx 30" in reason(r) and "timeout 6" in reason(r)


def test_error_rate():
    def record(failed, good):
        return Record.from_dict(
            {
                "server": "rust",
                "scenario": "hello",
                "attempts": [],
                "good_requests": good,
                "errors": dict(NO_ERRORS, other=failed, total=failed),
            }
        )

    assert flags.error_rate(record(1, 3)) == 0.25
    assert flags.error_rate(record(0, 0)) is None


def test_saturated_loadgen_is_flagged_only_when_the_server_is_not_busy():
    (r,) = evaluated(rec(server_cpu=0.6, loadgen_cpu=0.97))
    assert names(r) == ["loadgen-saturated"]
    assert "97 % of the 1 core(s) its tool could use" in reason(r) and "60 %" in reason(r)
    (busy,) = evaluated(rec(server_cpu=0.95, loadgen_cpu=0.97))
    assert busy.flags == []
    (idle_tool,) = evaluated(rec(server_cpu=0.3, loadgen_cpu=0.89))
    assert idle_tool.flags == []


def test_utilization_uses_the_tools_duration_not_the_sampler_wall_time():
    r = rec(loadgen_cpu=0.96, server_cpu=0.5)
    # cpu_util as sampled is diluted to 0.864 (start-up, polling); cpu_s / duration says 0.96
    assert r["attempts"][0]["samples"]["loadgen"]["cpu_util"] < flags.LOADGEN_SATURATED
    assert flags.utilization(Record.from_dict(r), "loadgen") == pytest.approx(0.96)
    without_cpu_s = copy.deepcopy(r)
    for a in without_cpu_s["attempts"]:
        del a["samples"]["loadgen"]["cpu_s"]
    assert flags.utilization(Record.from_dict(without_cpu_s), "loadgen") == pytest.approx(0.864)


def test_saturation_with_an_unsampled_server():
    r = rec(loadgen_cpu=0.99)
    for a in r["attempts"]:
        a["samples"]["server"] = {}
    (r,) = evaluated(r)
    assert names(r) == ["loadgen-saturated"] and "not sampled" in reason(r)


def weather(server, run, rates, path="/weather/Montpellier"):
    return rec(server=server, scenario="weather", run=run, path=path, rates=rates)


def test_upstream_limit_within_ten_percent_of_nginx_weather_json_at_the_same_load():
    records = evaluated(
        weather("nginx", "c8-t8", (10000.0, 10000.0, 10000.0), path="/weather.json"),
        weather("nginx", "c64-t8", (20000.0, 20000.0, 20000.0), path="/weather.json"),
        weather("rust", "c8-t8", (9200.0, 9200.0, 9200.0)),  # 92 %: limited by the upstream
        weather("rust", "c64-t8", (17000.0, 17000.0, 17000.0)),  # 85 %: not
        weather("node", "c8-t8", (10500.0, 10500.0, 10500.0)),  # above nginx (noise): limited too
    )
    by = {(r.server, r.run): r for r in records}
    assert names(by["rust", "c8-t8"]) == ["upstream-limit"]
    assert "92% of nginx's own /weather.json (10,000 req/s at c8-t8)" in reason(by["rust", "c8-t8"])
    assert by["rust", "c64-t8"].flags == []
    assert names(by["node", "c8-t8"]) == ["upstream-limit"]
    assert by["nginx", "c8-t8"].flags == []  # nginx is the ceiling, not limited by itself


def test_the_upstream_is_whichever_server_the_run_recorded_with_that_role():
    records = (
        weather("static", "c8-t8", (10000.0,) * 3, path="/weather.json"),
        weather("nginx", "c8-t8", (5000.0,) * 3, path="/weather.json"),
        weather("rust", "c8-t8", (9500.0,) * 3),
    )
    by = {r.server: r for r in evaluated(*records, roles={"static": ["upstream", "ceiling"], "nginx": [], "rust": []})}
    assert "95% of static's own /weather.json" in reason(by["rust"])
    run = data(*records, roles={"static": ["upstream", "ceiling"], "nginx": [], "rust": []})
    flags.evaluate(run)
    group = model.build(run).scenarios[0].groups[0]
    assert group.ceiling.server == "static" and "nginx" in [s.record.server for s in group.ranked]


def test_upstream_limit_needs_a_clean_nginx_figure_at_that_load():
    nginx = weather("nginx", "c8-t8", (10000.0, 10000.0, 10000.0), path="/weather.json")
    nginx["errors"] = dict(NO_ERRORS, timeout=5, total=5)
    records = evaluated(
        nginx, weather("rust", "c8-t8", (9900.0, 9900.0, 9900.0)), weather("rust", "c1-t1", (900.0, 900.0, 900.0))
    )
    assert records[1].flags == [] and records[2].flags == []


def test_spread_above_ten_percent_names_the_rules_that_fired():
    (r,) = evaluated(rec(rates=(1000.0, 1150.0, 900.0)))  # CV 12.4 %, interval 900 – 1,150: ±12.5 %
    assert names(r) == ["spread"]
    assert reason(r) == (
        "req/s: CV 12.4% between attempts, above 10% (900 to 1,150); "
        "interval 900 – 1,150 (75 %) is ±12.5% of the median 1,000, wider than ±10%"
    )
    (ok,) = evaluated(rec(rates=(1000.0, 1090.0, 910.0)))  # CV 9 %, ±9 %: noise, shown by the interval, not flagged
    assert ok.flags == [] and ok.summary.rps["ci"]["low"] == 910.0


def test_a_single_attempt_is_flagged_as_unknown_spread():
    (r,) = evaluated(rec(rates=(1000.0,)))
    assert names(r) == ["spread"] and "single attempt" in reason(r)


def test_contract_failed_or_unverified():
    verification = {"rust": {"ok": False, "checks": 28, "failures": ["GET /id: status 500, expected 200", "x"]}}
    records = evaluated(rec(), rec(server="node"), verification=verification)
    assert names(records[0]) == ["contract-failed"]
    assert reason(records[0]) == "2 of 28 contract checks failed: GET /id: status 500, expected 200 (and 1 more)"
    assert names(records[1]) == ["contract-failed"] and "no contract verification" in reason(records[1])


def test_an_outside_implementation_is_named_so_never_contract_failed():
    """make twin's entry is never given the contract check: it is kept out of any ranking as outside, not as failed."""
    run = data(rec(), rec(server="te"), verification={"rust": {"ok": True, "checks": 28, "failures": []}})
    run.servers["te"] = {"started": True, "outside": True}
    flags.evaluate(run)
    ours, entry = run.records
    assert names(ours) == [] and ours.ranked
    assert names(entry) == ["outside"] and "200 with a body" in reason(entry) and entry.ranked is False


def test_failed_attempt_flags_the_record_and_skips_spread():
    r = rec(rates=(1000.0, None, 1001.0))
    r["attempts"][1]["failed"] = "no request completed"
    r["failed"] = "attempt 2: no request completed"
    (r,) = evaluated(r)
    assert names(r) == ["failed"] and r.ranked is False
    nothing = rec(rates=(None, None, None))
    (nothing,) = evaluated(nothing)
    assert names(nothing) == ["failed"] and reason(nothing) == "no attempt produced a measurement"


def test_several_flags_in_a_fixed_order_and_evaluate_is_idempotent():
    errors = dict(NO_ERRORS, connect=3, total=3)
    r = rec(errors=errors, rates=(1000.0, 1300.0, 800.0), server_cpu=0.2, loadgen_cpu=0.99)
    r["summary"] = {"rps": {"median": 1000.0, "min": 800.0, "max": 1300.0, "cv": 0.2494, "n": 3}}
    run = data(r)
    flags.evaluate(run)
    first = copy.deepcopy(run.records[0].flags)
    assert [f.name for f in first] == ["errors", "loadgen-saturated", "spread"]
    flags.evaluate(run)
    assert run.records[0].flags == first


def test_flags_are_written_with_todays_field_names():
    (r,) = evaluated(rec(rates=(1000.0,)))
    assert r.to_dict()["flags"] == [{"flag": "spread", "reason": reason(r)}]
    assert r.to_dict()["ranked"] is False  # one attempt: a point, no interval, nothing to order it by


# -- on the recorded run ----------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def recorded():
    run = results.load(FIXTURE)
    flags.evaluate(run)
    return {(r.server, r.scenario, r.run): r for r in run.records}


def test_recorded_saturated_run_is_flagged_and_ranked_as_a_lower_bound(recorded):
    r = recorded["rust", "hello", "c1000-t1"]  # wrk -t1 -c1000 on one CPU against rust
    assert "loadgen-saturated" in names(r) and r.ranked is True and ranking.is_lower_bound(r)
    assert flags.utilization(r, "loadgen") >= flags.LOADGEN_SATURATED > flags.utilization(r, "server")


def test_recorded_erroring_server_is_flagged_and_not_ranked(recorded):
    r = recorded["py500", "hello", "c100"]  # answers 500 to everything
    assert names(r) == ["contract-failed", "errors"] and r.ranked is False
    assert r.errors.non_2xx == r.errors.total > 0
    assert "(100.00%)" in reason(r, 1)


def test_recorded_run_every_record_has_flags_ranked_and_samples(recorded):
    for key, r in recorded.items():
        assert r.ranked == (not {"failed", "contract-failed", "errors"} & set(names(r))), key
        assert all(f.name in flag_kinds.BY_NAME for f in r.flags)
        assert len(r.attempts) == 3
        for a in r.attempts:
            assert a.samples["server"].cpu_s is not None and a.samples["loadgen"].peak_rss_mb is not None
        assert r.summary.cost_us["n"] == 3 and r.summary.cost_us["median"] > 0
        spread = next((f for f in r.flags if f.name == "spread"), None)
        moving = flags.attempts_trend(r.attempts)[0].moving  # type: ignore[index]  # three attempts: a trend
        assert not (spread and moving), key  # a trend explains the spread: one flag or the other
        s = r.summary.rps
        wide = s["ci"]["high"] - s["ci"]["low"] > 2 * flags.SPREAD_MAX_HALF_WIDTH * s["median"]
        assert (spread is not None) == (not moving and (s["cv"] > flags.SPREAD_MAX_CV or wide)), key


def test_each_flag_is_explained_once_in_flags_and_the_report_reads_it():
    assert [name for name, _ in flag_kinds.legend()] == [k.name for k in flag_kinds.ALL]
    assert "wider than ±10% of the median" in flag_kinds.SPREAD.explanation
    run = results.load(FIXTURE)
    flags.evaluate(run)
    legend = markdown.render(model.build(run)).split("## Flags")[1]
    assert [line for line in legend.splitlines() if line] == [f"- **{n}**: {t}" for n, t in flag_kinds.legend()]


LOW_COMPUTE = Path(__file__).parent / "fixtures" / "bench_20261124_low_compute" / "results.json"


def test_a_warm_up_that_hit_its_cap_while_still_climbing_is_flagged_unsettled():
    """Issue 32: `steady=false` was stored and no flag read it. The recorded low-compute warm-ups all settled; akka's
    cut at its 17th run (as a cap of 17 runs would have) was still climbing, node-twin's cut at its 6th was falling."""
    run = results.load(LOW_COMPUTE)
    flags.evaluate(run)
    assert not any(flag_kinds.UNSETTLED.name in names(r) for r in run.records)  # all settled (steady)
    akka = next(r for r in run.records if r.server == "akka")
    akka.warmup.runs, akka.warmup.steady, akka.warmup.max_runs = akka.warmup.runs[:17], False, 17
    twin = next(r for r in run.records if r.server == "node-twin")
    twin.warmup.runs, twin.warmup.steady = twin.warmup.runs[:6], False
    flags.evaluate(run)
    unsettled = [f for f in akka.flags if f.name == flag_kinds.UNSETTLED.name]
    assert [f.reason for f in unsettled] == [
        "the warm-up stopped after 17 runs, not settled: its latest 3 runs 3,009 → 3,987 → 5,216 req/s, +55% "
        "(more than 10%)"
    ]
    assert akka.ranked  # it explains the figure, as warming does; it does not keep the record out
    assert flag_kinds.UNSETTLED.name not in names(twin)  # not settled, but falling: not a climb cut short
    again = Record.from_dict(akka.to_dict())  # the window and the verdict survive results.json
    assert again.warmup.window is None and flags.flags_for(again, {}, None)[0].reason == unsettled[0].reason
