"""Faults, second pass (items 3 and 4): no read without a deadline, and one odd output costs one attempt.

- A Docker engine that stalls (a `docker` of the test's own on PATH: its `system dial-stdio` reads the request and
  never answers, or answers a few then stalls) costs the call, within the deadline, and the sampler's stop too; through
  the runner it costs the attempt, with its reason.
- A load tool whose output the parser did not foresee (ab without its "Time taken" line: ParseError; wrk's report
  without its 99th percentile: KeyError; tests/fixtures/odd_tool) costs that attempt, recorded with its raw output,
  and the run goes on: the command line measures a server of the test's own (tests/responders/contract_server.py)
  with the odd tool on the second attempt only.
Ports are fixed: run under the integration lock, like tests/test_cli_integration.py."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
from local_responder import CONTRACT_RESPONDER, running_responder

from harness.basics.machine import port_owner
from harness.basics.paths import RESULTS
from harness.containers import engine_api
from harness.containers.engine_api import EngineApi, EngineStatsSampler
from harness.measuring.tool_processes import Beside, Naming, measure
from harness.results import records as results
from harness.runtime.local import LocalRuntime
from harness.runtime.protocol import RuntimeFailure
from harness.tools import LoadSpec
from harness.tools.load_plan import plan_load

LOADGEN = Path(__file__).resolve().parents[1]
RESPONDER = CONTRACT_RESPONDER
ODD_TOOL = Path(__file__).parent / "fixtures" / "odd_tool" / "odd_output.py"
PORT = 28211
STATS = (
    '{"cpu_stats": {"cpu_usage": {"total_usage": %d}}, "memory_stats": {"usage": 1000000, '
    '"stats": {"inactive_file": 0}}}'
)
# `docker ... system dial-stdio` of an engine that answers FAKE_ANSWERS requests (0: none), then reads on, silent
FAKE_DOCKER = f"""#!{sys.executable}
import os, sys
answers = int(os.environ.get("FAKE_ANSWERS", "0"))
stdin = sys.stdin.buffer
for n in range(10**6):
    request = b""
    while not request.endswith(b"\\r\\n\\r\\n"):
        byte = stdin.read(1)
        if not byte:
            sys.exit(0)
        request += byte
    if n >= answers:
        continue  # the engine stalls: reads on, answers nothing
    body = ({STATS!r} % ((n + 1) * 10**8)).encode()
    sys.stdout.buffer.write(b"HTTP/1.1 200 OK\\r\\nContent-Length: %d\\r\\n\\r\\n" % len(body) + body)
    sys.stdout.buffer.flush()
"""


@pytest.fixture
def stalled_engine(tmp_path, monkeypatch):
    """A `docker` on PATH whose engine stalls; the engine deadline is 1 s. Yields a setter for its answers before the
    stall. Every dial-stdio process is gone at the end."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "docker").write_text(FAKE_DOCKER)
    (bin_dir / "docker").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setattr(engine_api, "TIMEOUT_S", 1.0)
    yield lambda n: monkeypatch.setenv("FAKE_ANSWERS", str(n))
    left = [p for p in psutil.Process().children(recursive=True) if str(bin_dir) in " ".join(p.cmdline())]
    assert not left, f"dial-stdio processes left: {left}"


def test_a_stalled_engine_costs_the_call_within_its_deadline(stalled_engine):
    stalled_engine(1)
    api = EngineApi([], "the test's engine")
    assert api.get("/containers/x/stats")["cpu_stats"]["cpu_usage"]["total_usage"] == 10**8  # the first answers
    started = time.monotonic()
    with pytest.raises(
        RuntimeFailure,
        match=r"^the Docker engine of the test's engine did not answer GET "
        r"/containers/x/stats within 1 s$",
    ):
        api.get("/containers/x/stats")
    assert 1.0 <= time.monotonic() - started < 2.0
    with pytest.raises(RuntimeFailure, match="the connection to the Docker engine of the test's engine closed"):
        api.get("/containers/x/stats")  # half an answer may still come: the connection is not used again


def test_a_sampler_whose_engine_stalls_stops_within_its_deadline_and_says_why(stalled_engine):
    stalled_engine(1)  # the start's reading, then nothing
    sampler = EngineStatsSampler([], "the test's engine", "bench-x", 1).start()
    time.sleep(0.5)
    started = time.monotonic()
    with pytest.raises(
        RuntimeFailure,
        match=r"the CPU counter of bench-x could not be read at the load's end: the "
        r"Docker engine of the test's engine did not answer",
    ):
        sampler.stop()
    assert time.monotonic() - started < 2 * engine_api.TIMEOUT_S + EngineStatsSampler.INTERVAL_S + 1


@pytest.fixture
def responder():
    with running_responder(PORT) as server:
        yield server


class EngineSampledRuntime(LocalRuntime):
    """The local runtime, its server sampled through an engine's API, as the Docker runtimes sample theirs."""

    def sampler(self, running, cores):
        return EngineStatsSampler([], "the test's engine", "bench-probe", cores)


def test_an_engine_that_fails_at_a_samplers_start_costs_the_attempt(stalled_engine, responder, tmp_path):
    stalled_engine(0)
    spec = LoadSpec(url=f"http://127.0.0.1:{PORT}/hello", concurrency=2, threads=1, duration_s=1)
    started = time.monotonic()
    outcome = measure(
        EngineSampledRuntime(), plan_load("wrk", spec, (1,)), Naming(tmp_path, "attempt", "attempt"), Beside(responder)
    )
    assert time.monotonic() - started < 5
    assert outcome.failure == (
        "the CPU sampling could not start, so the load was not run: RuntimeFailure: the Docker "
        "engine of the test's engine did not answer GET "
        "/containers/bench-probe/stats?stream=false&one-shot=true within 1 s"
    )
    assert outcome.measurement is None and outcome.commands == []  # no load was sent
    assert not [p for p in psutil.process_iter(["name"]) if p.info["name"] == "wrk"]


SCENARIOS = """
[settings.quick]
repeat = 3
warmup = { duration_s = 1, tolerance = 1.0, window = 2, max_runs = 2 }

[hello-ab]
description = "GET /hello with ab -k, 1 s attempts"
tool = "ab"
targets = [{ route = "hello", path = "/hello" }]
profile.quick = { runs = [{ concurrency = 4, duration_s = 1, keepalive = true }] }

[hello-wrk]
description = "GET /hello with wrk, 1 s attempts"
tool = "wrk"
targets = [{ route = "hello", path = "/hello" }]
profile.quick = { runs = [{ threads = 1, concurrency = 4, duration_s = 1 }] }
"""
WITH_SCENARIOS = (
    "import pathlib, sys; from harness import cli; from harness.config import scenarios; "
    "scenarios.SCENARIO_FILE = pathlib.Path(sys.argv.pop(1)); sys.exit(cli.main(sys.argv[1:]))"
)


@pytest.mark.integration
def test_an_output_the_parser_did_not_foresee_costs_that_attempt_and_nothing_more(tmp_path):
    servers = tmp_path / "servers" / "probe"
    servers.mkdir(parents=True)
    (servers / "manifest.toml").write_text(
        f'[[server]]\nname = "probe"\nport = {PORT}\nroutes = ["id", "hello"]\n'
        f'run = ["{sys.executable}", "{RESPONDER}", "{{port}}", "probe"]\n'
    )
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("ab", "wrk"):  # found first on PATH: each runs the real tool, but for attempt 2
        (bin_dir / tool).write_text(f'#!/bin/sh\nexec "{sys.executable}" "{ODD_TOOL}" {tool} "$@"\n')
        (bin_dir / tool).chmod(0o755)
    (tmp_path / "scenarios.toml").write_text(SCENARIOS)
    run_id = f"test-odd-output-{os.getpid()}"
    env = {k: v for k, v in os.environ.items() if k not in ("SERVERS", "PORTS", "REPEAT", "ORDER", "PROFILE", "TWIN")}
    env.update(
        BENCH_SERVERS_DIR=str(tmp_path / "servers"),
        PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
        ODD_ATTEMPT="2",
        ODD_BIN=str(bin_dir),
    )
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            WITH_SCENARIOS,
            str(tmp_path / "scenarios.toml"),
            "--runtime",
            "local",
            "--servers",
            "probe",
            "--run-id",
            run_id,
            "run",
            "hello-ab hello-wrk",
        ],
        cwd=LOADGEN,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    output = proc.stdout + proc.stderr
    print(output)
    assert proc.returncode == 0 and "Traceback" not in output, output

    run = results.load(RESULTS / run_id / "results.json")
    by_scenario = {r.scenario: r for r in run.records}
    assert set(by_scenario) == {"hello-ab", "hello-wrk"}
    for scenario, tool, error in (
        ("hello-ab", "ab", r"ParseError: ab's summary lacks a line matching ^Time taken for tests:\s+([\d.]+)"),
        ("hello-wrk", "wrk", "KeyError: 99.0"),
    ):
        record = by_scenario[scenario]
        first, odd, third = record.attempts
        raw = RESULTS / run_id / odd.raw[0]
        assert odd.failed == f"{tool}'s output could not be read ({error}); it is kept in {raw}"
        assert raw.read_text().strip() and odd.rps is None
        assert first.measured and third.measured and first.rps > 0 and third.rps > 0
        assert "failed" in [f.name for f in record.flags] and not record.ranked
    assert port_owner("127.0.0.1", PORT) is None
