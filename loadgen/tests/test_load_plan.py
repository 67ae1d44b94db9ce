"""The load generator at every size: the load plan as a pure function of the CPU list (2 to 64 CPUs), `make plan`
(ASSUME_CPUS, FORMAT=json), and loadgen saturation judged per process and per usable core, on hand-made records and
on a recorded run (fixtures/bench_20261124_low_compute)."""

import copy
import csv
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

import pytest

from harness.basics import cpus as cpu_plans
from harness.config import scenarios
from harness.judging import flags
from harness.measuring.executor import attempt_spec
from harness.results import records as results
from harness.results.records import Run
from harness.tools import TOOLS, LoadSpec
from harness.tools.load_plan import divide, plan_load

LOADGEN = Path(__file__).resolve().parents[1]
RECORDED = Path(__file__).parent / "fixtures" / "bench_20261124_low_compute" / "results.json"
SIZES = {2: (1, 1), 4: (1, 2), 8: (2, 5), 16: (4, 11), 64: (4, 59)}  # CPUs: (server cores, load-generator cores)


def bench_loads(profile="quick"):
    """Every run of make bench's scenarios, with the spec its first attempt would have (no rate known yet)."""
    for scenario in scenarios.select(scenarios.load(profile), None):
        for run in scenario.runs:
            yield scenario, run, attempt_spec(scenario, run, "http://127.0.0.1:8080/x", None)


@pytest.mark.parametrize("n", sorted(SIZES))
def test_every_load_uses_all_of_the_load_generators_cores(n):
    plan = cpu_plans.plan(tuple(range(n)))
    assert (len(plan.server), len(plan.loadgen)) == SIZES[n]
    for scenario, run, spec in bench_loads():
        load = plan_load(scenario.tool, spec, plan.loadgen)
        if TOOLS[scenario.tool].threading == "one":
            expected = min(len(plan.loadgen), spec.concurrency)
            assert len(load.processes) == expected, (scenario.name, run.label)
            assert len({p.cores for p in load.processes}) == expected  # each on a core of its own
            assert all(len(p.cores) == 1 and p.threads == 1 for p in load.processes)
            # the load divided exactly: connections, requests and rate add up to the whole
            assert sum(p.spec.concurrency for p in load.processes) == spec.concurrency
            if spec.requests:
                assert sum(p.spec.requests for p in load.processes) == spec.requests
            if spec.rate:
                assert sum(p.spec.rate for p in load.processes) == pytest.approx(spec.rate)
        else:
            (process,) = load.processes
            assert process.cores == plan.loadgen
            assert process.threads == min(len(plan.loadgen), spec.concurrency), (scenario.name, run.label)
        assert load.all_cores or spec.concurrency < len(plan.loadgen)


@pytest.mark.parametrize("n", [8, 16, 64])
def test_a_seed_run_keeps_the_threads_it_names_and_says_it_was_not_given_all_the_cores(n):
    plan = cpu_plans.plan(tuple(range(n)))
    hello = scenarios.load("seed")["hello"]
    spec = attempt_spec(hello, hello.runs[0], "http://127.0.0.1:8080/hello", None)
    load = plan_load("wrk", spec, plan.loadgen)
    assert [p.threads for p in load.processes] == [2]
    assert not load.all_cores
    assert load.note == f"wrk ran the 2 thread(s) the run names, on 2 of the load generator's {len(plan.loadgen)} cores"
    assert load.processes[0].argv(TOOLS["wrk"], Path("/tmp"))[:6] == [
        "taskset",
        "-c",
        ",".join(map(str, plan.loadgen)),
        "wrk",
        "-t",
        "2",
    ]


def test_loadgen_processes_splits_a_load_on_a_single_core():
    spec = LoadSpec("http://127.0.0.1:1/", concurrency=100, requests=1000)
    load = plan_load("ab", spec, (1,), override=2)
    assert [(p.cores, p.spec.concurrency, p.spec.requests) for p in load.processes] == [
        ((1,), 50, 500),
        ((1,), 50, 500),
    ]
    assert [load.capacity(i) for i in range(2)] == [0.5, 0.5]  # two processes share the core
    assert load.note == "LOADGEN_PROCESSES=2: 2 ab process(es) on 1 core(s)"


def test_open_file_limits_still_split_a_multi_threaded_tool():
    load = plan_load("wrk", LoadSpec("http://x/", concurrency=30000, duration_s=2), tuple(range(4, 12)), needed=2)
    assert [(p.cores, p.threads, p.spec.concurrency) for p in load.processes] == [
        ((4, 5, 6, 7), 4, 15000),
        ((8, 9, 10, 11), 4, 15000),
    ]


def test_division_keeps_whole_rounds_and_exact_totals():
    parts = divide(LoadSpec("u", concurrency=10, requests=70, rate=None), 3)
    assert [(p.concurrency, p.requests) for p in parts] == [(4, 28), (3, 21), (3, 21)]
    parts = divide(LoadSpec("u", concurrency=100, rate=10000.0), 7)
    assert sum(p.concurrency for p in parts) == 100 and sum(p.rate for p in parts) == pytest.approx(10000.0)


# -- make plan ---------------------------------------------------------------------------------------------------------


def harness(*args, **env):
    full = {k: v for k, v in os.environ.items() if k not in ("CPUS_SERVER", "CPUS_LOADGEN", "CPUS_UPSTREAM", "HOSTS")}
    return subprocess.run(
        [sys.executable, "-m", "harness", *args],
        cwd=LOADGEN,
        capture_output=True,
        text=True,
        env={**full, **env},
        timeout=60,
    )


@pytest.mark.integration
def test_make_plan_of_a_16_cpu_machine():
    proc = harness("plan", ASSUME_CPUS="16", FORMAT="json", PROFILE="quick")
    assert proc.returncode == 0, proc.stderr
    plan = json.loads(proc.stdout)
    assert plan["cpu_plan"]["server"] == [0, 1, 2, 3]
    assert plan["machine"] == {"cpus": 16, "assumed": True, "cpu_list": "0-15", "threads_per_core": 1}
    assert {(load["scenario"], load["run"]) for load in plan["loads"]} >= {
        ("low-compute", "c1000"),
        ("tweets", "c100"),
        ("hello", "c100"),
        ("weather", "c256"),
    }
    for load in plan["loads"]:
        cores = [tuple(p["cores"]) for p in load["processes"]]
        if load["tool"] in ("ab", "httperf"):
            assert len(cores) >= 8 and len(set(cores)) == len(cores), load["scenario"]
            assert all(p["argv"][:2] == ["taskset", "-c"] and p["argv"][3] == load["tool"] for p in load["processes"])
        elif load["run"] != "c1":  # one connection: one thread
            assert load["processes"][0]["threads"] >= 8, load["scenario"]
    assert "node-twin" in plan["loads"][0]["servers"]  # make bench's A/A control is planned too
    assert plan["estimate"]["seconds"] > 0 and plan["estimate"]["records"] > 0


@pytest.mark.integration
def test_make_plan_text_marks_a_seed_run_that_names_its_threads():
    proc = harness("plan", "hello", ASSUME_CPUS="16", PROFILE="seed")
    assert proc.returncode == 0, proc.stderr
    assert "NOT ALL CORES: wrk ran the 2 thread(s) the run names, on 2 of the load generator's 11 cores" in proc.stdout
    assert "estimated time: about" in proc.stdout


@pytest.mark.integration
@pytest.mark.parametrize(
    "env, message",
    [
        ({"ASSUME_CPUS": "1"}, "ASSUME_CPUS='1': must be a whole number of at least 2 (at most 4096)"),
        ({"ASSUME_CPUS": "100000"}, "ASSUME_CPUS='100000': must be a whole number of at least 2 (at most 4096)"),
        ({"ASSUME_CPUS": "lots"}, "ASSUME_CPUS='lots'"),
        ({"FORMAT": "yaml"}, "FORMAT='yaml'"),
        ({"LOADGEN_PROCESSES": "0"}, "LOADGEN_PROCESSES='0': must be a positive integer (at most 1024)"),
    ],
)
def test_make_plan_refuses_bad_values_in_one_line(env, message):
    proc = harness("plan", **env)
    assert proc.returncode == 2
    assert message in proc.stderr + proc.stdout and "Traceback" not in proc.stderr


# -- saturation per process --------------------------------------------------------------------------------------------


def attempt(loadgen_cpu_s, cores, tool_processes=1, processes=None, beside=None, server_util=0.5, duration=2.0):
    samples = {
        "server": {"cores": 4, "cpu_s": server_util * 4 * duration},
        "loadgen": {"cores": cores, "cpu_s": loadgen_cpu_s},
        **(beside or {}),
    }
    out = {
        "rps": 20000.0,
        "duration_s": duration,
        "samples": samples,
        "tool_processes": tool_processes,
        "latency_ms": {},
        "errors": {},
    }
    if processes:
        out["processes"] = processes
    return out


def judged(tool, attempts, threads=None) -> list[str]:
    record = {
        "server": "rust",
        "scenario": "low-compute",
        "run": "c1000",
        "tool": tool,
        "rps": 20000.0,
        "threads": threads,
        "attempts": attempts,
        "requests": 1,
        "good_requests": 1,
        "errors": {},
    }
    run = Run.from_dict(
        {"records": [record], "servers": {}, "verification": {"rust": {"ok": True, "checks": 1, "failures": []}}}
    )
    flags.evaluate(run)
    return [f.name for f in run.records[0].flags if f.name == "loadgen-saturated"]


def test_one_ab_process_at_99_percent_of_one_core_of_eight_is_saturated():
    # schema 3: no per-process figures; 1.98 CPU s over 2 s is 12 % of 8 cores, 99 % of the one core ab could use
    assert judged("ab", [attempt(1.98, cores=8)] * 3) == ["loadgen-saturated"]
    assert judged("ab", [attempt(1.98, cores=8, tool_processes=8)] * 3) == []  # 8 processes: 12 % of 8 cores


def test_one_busy_process_among_idle_ones_is_saturated():
    idle = [{"cores": [c], "threads": 1, "capacity": 1.0, "cpu_s": 1.0} for c in range(7)]
    busy = {"cores": [7], "threads": 1, "capacity": 1.0, "cpu_s": 1.9}
    assert judged("ab", [attempt(8.9, 8, 8, idle + [busy])] * 3) == ["loadgen-saturated"]
    calm = {"cores": [7], "threads": 1, "capacity": 1.0, "cpu_s": 1.2}
    assert judged("ab", [attempt(8.2, 8, 8, idle + [calm])] * 3) == []


def test_a_multi_threaded_tool_is_judged_on_the_cores_it_can_use():
    # wrk with the 2 threads a seed run names, on 8 cores: 3.8 CPU s over 2 s is 95 % of its 2, 24 % of 8
    assert judged("wrk", [attempt(3.8, cores=8)] * 3, threads=2) == ["loadgen-saturated"]
    assert judged("wrk", [attempt(3.8, cores=8)] * 3, threads=8) == []


def test_what_else_runs_on_the_load_generators_cores_counts():
    # each over its own sampled time: the harness 5 % of the core, the upstream 10 %
    beside = {
        "harness": {"cores": 1, "cpu_s": 0.1, "cpu_util": 0.05},
        "beside_loadgen:nginx": {"cores": 1, "cpu_s": 0.2, "cpu_util": 0.10},
    }
    assert judged("wrk", [attempt(1.6, cores=1)] * 3) == []  # the tool alone: 80 %
    assert judged("wrk", [attempt(1.6, cores=1, beside=beside)] * 3) == ["loadgen-saturated"]  # 95 % with the rest


def test_a_busy_server_explains_a_busy_load_generator():
    assert judged("ab", [attempt(1.98, cores=8, server_util=0.95)] * 3) == []


def recorded_with_loadgen_cores(cores: int) -> dict:
    data = json.loads(RECORDED.read_text())
    for record in data["records"]:
        for a in record["attempts"]:
            if "loadgen" in a["samples"]:
                a["samples"]["loadgen"]["cores"] = cores
    return data


@pytest.mark.parametrize("cores", [1, 8])
def test_a_recorded_run_is_judged_by_the_same_rule(cores):
    run = Run.from_dict(recorded_with_loadgen_cores(cores))
    flags.evaluate(run)
    rust = next(r for r in run.records if r.server == "rust")
    assert "loadgen-saturated" in [f.name for f in rust.flags]
    # the rule before: the tool's CPU over all of the load generator's cores
    old = [a.samples["loadgen"].cpu_s / (a.duration_s * cores) for a in rust.attempts if a.measured]
    assert (statistics.median(old) >= 0.9) == (cores == 1)


@pytest.mark.integration
def test_make_report_of_a_run_recorded_before_judges_it_again(tmp_path):
    run_dir = tmp_path / "20261124-072629-bench"
    run_dir.mkdir()
    (run_dir / "results.json").write_text(json.dumps(recorded_with_loadgen_cores(8)))
    proc = harness("report", str(run_dir))
    assert proc.returncode == 0, proc.stderr
    with (run_dir / "summary.csv").open() as f:
        rows = {row["server"]: row for row in csv.DictReader(f)}
    assert "loadgen-saturated" in rows["rust"]["flags"].split(";")
    assert "1 ab process(es) on 8 CPU(s)" in rows["rust"]["flag_reasons"]


def test_attempts_keep_their_processes_and_read_back():
    a = attempt(1.0, 1, 2, [{"cores": [1], "threads": 1, "capacity": 0.5, "cpu_s": 0.5}] * 2)
    a["loadgen_note"] = "LOADGEN_PROCESSES=2: 2 ab process(es) on 1 core(s)"
    back = results.Attempt.from_dict(a)
    assert results.Attempt.from_dict(back.to_dict()) == back and back.processes[0]["capacity"] == 0.5
    assert copy.deepcopy(back.to_dict())["loadgen_note"] == a["loadgen_note"]
