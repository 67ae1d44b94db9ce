"""HTTP/2 (h2c) scenarios: who takes part, which port and protocol each run uses, and, end to end, nginx and rust
verified over h2c and measured with h2load beside their HTTP/1.1 baseline (the last test starts servers on fixed
ports: run it under the integration lock, like tests/test_cli_integration.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness.basics.machine import port_owner
from harness.basics.paths import RESULTS
from harness.config import scenarios
from harness.config.manifest import discover, twin
from harness.containers import engine
from harness.measuring.run_plan import pattern, warmed_runs
from harness.results import records as results
from harness.runtime import RunningServer
from harness.runtime.protocol import RuntimeFailure
from harness.servers.session import Session

LOADGEN = Path(__file__).resolve().parents[1]
SERVERS = discover()


def test_an_h2c_scenario_takes_the_servers_that_speak_it_and_says_which_do_not():
    h2 = scenarios.load("quick")["h2-hello"]
    assert h2.protocol == "h2c" and not h2.in_bench
    speak = {name for name, s in SERVERS.items() if h2.path_for(s)}
    assert {"akka", "pekko", "play", "finagle", "node", "nginx", "rust"} <= speak
    assert not {"spray", "socko", "express"} & speak  # their frameworks have no h2c
    assert scenarios.load("quick")["hello"].path_for(SERVERS["express"]) == "/hello"  # HTTP/1.1 scenarios unchanged


def test_each_run_speaks_its_protocol_and_each_protocol_is_warmed_up():
    h2 = scenarios.load("quick")["h2-hello"]
    assert [h2.protocol_of(r) for r in h2.runs] == ["h1", "h2c", "h2c", "h2c"]
    assert [r.spec("http://x/hello").streams for r in h2.runs] == [None, 1, 10, 100]
    assert pattern(h2, h2.runs[0]) != pattern(h2, h2.runs[1]) == pattern(h2, h2.runs[3])
    assert [r.label for r in warmed_runs(h2)] == ["h1-c16", "c16-m1"]  # HTTP/1.1 then h2c, each warmed


def test_a_bad_protocol_is_refused_with_the_values_it_may_take(tmp_path):
    path = tmp_path / "scenarios.toml"
    path.write_text(
        '[x]\ntool = "h2load"\nprotocol = "h3"\ntargets = [{ route = "hello", path = "/hello" }]\n'
        "profile.quick = { runs = [{ concurrency = 1, duration_s = 1 }] }\n"
    )
    with pytest.raises(scenarios.ScenarioError, match=r"\[x\]: protocol = 'h3' must be one of h1, h2c"):
        scenarios.load("quick", path)
    path.write_text(
        path.read_text()
        .replace('protocol = "h3"\n', "")
        .replace("concurrency = 1,", 'concurrency = 1, protocol = "h2",')
    )
    with pytest.raises(scenarios.ScenarioError, match=r"run 1: protocol = 'h2' must be one of h1, h2c"):
        scenarios.load("quick", path)


def test_the_h2c_port_moves_with_the_server_and_loads_go_to_the_port_of_their_protocol():
    session = Session.__new__(Session)
    session.ports = {"rust": 31086}
    assert session.h2c_port(SERVERS["rust"]) == 32086  # 1000 above, as in the manifest (8086, 9086)
    session.ports = {}
    assert session.h2c_port(SERVERS["rust"]) == 9086 and session.h2c_port(SERVERS["express"]) is None
    running = RunningServer(
        name="rust",
        host="127.0.0.1",
        port=8086,
        cpus=[0],
        pid=1,
        log="",
        started_at=0,
        startup_s=0,
        runtime="local",
        h2c_port=9086,
    )
    assert running.url("h2c") == "http://127.0.0.1:9086" and running.url("h1") == running.url() == running.base_url
    running.h2c_port = None
    with pytest.raises(RuntimeFailure, match="rust was started without an h2c port"):
        running.url("h2c")


SCENARIOS = """
[settings.quick]
repeat = 2
warmup = { duration_s = 1, tolerance = 1.0, window = 2, max_runs = 2 }

[h2-hello]
description = "h2c with h2load, short"
tool = "h2load"
protocol = "h2c"
in_bench = false
targets = [{ route = "hello", path = "/hello" }]
profile.quick = { runs = [
  { label = "h1-c4", protocol = "h1", concurrency = 4, threads = 1, duration_s = 1 },
  { label = "c4-m1", concurrency = 4, threads = 1, streams = 1, duration_s = 1 },
  { label = "c4-m10", concurrency = 4, threads = 1, streams = 10, duration_s = 1 },
  { label = "c4-m100", concurrency = 4, threads = 1, streams = 100, duration_s = 1 },
] }
"""
WITH_SCENARIOS = (
    "import pathlib, sys; from harness import cli; from harness.config import scenarios; "
    "scenarios.SCENARIO_FILE = pathlib.Path(sys.argv.pop(1)); sys.exit(cli.main(sys.argv[1:]))"
)
PORTS = {"rust": 21086, "nginx": 21000}  # h2c 1000 above (22086, 22000), below the ephemeral ports (32768-)
ENGINE, WHY = engine.engine_answers()


@pytest.mark.integration
@pytest.mark.parametrize("runtime", ["local", "docker"])
def test_nginx_and_rust_are_verified_over_h2c_and_measured_beside_their_http1_baseline(tmp_path, runtime):
    if runtime == "docker" and not ENGINE:
        reason = f"the Docker runtime's h2c test needs a Docker engine: {WHY}"
        pytest.fail(reason, pytrace=False) if os.environ.get("CI") == "true" else pytest.skip(reason)
    (tmp_path / "scenarios.toml").write_text(SCENARIOS)
    run_id = f"test-h2-{runtime}-{os.getpid()}"
    env = {k: v for k, v in os.environ.items() if k not in ("SERVERS", "PORTS", "REPEAT", "ORDER", "PROFILE", "TWIN")}
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            WITH_SCENARIOS,
            str(tmp_path / "scenarios.toml"),
            "--runtime",
            runtime,
            "--servers",
            "nginx rust express",
            "--ports",
            " ".join(f"{n}={p}" for n, p in PORTS.items()),
            "--run-id",
            run_id,
            "run",
            "h2-hello",
        ],
        cwd=LOADGEN,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    output = proc.stdout + proc.stderr
    print(output)
    assert proc.returncode == 0, output
    assert "express: serves none of the routes of h2-hello over h2c; skipped" in output
    run = results.load(RESULTS / run_id / "results.json")
    assert run.conditions["not_measured"] == {"express h2-hello": "it speaks no h2c (its manifest gives no h2c_port)"}
    assert run.conditions["runtime"] == runtime
    for name in ("nginx", "rust"):
        v = run.verification[name]
        assert v.ok and v.checks > 30, v  # HTTP/1.1 and h2c checks together
    assert "contract OK over HTTP/1.1 and h2c" in output
    records = {(r.server, r.run): r for r in run.records}
    assert set(records) == {(s, run_) for s in PORTS for run_ in ("h1-c4", "c4-m1", "c4-m10", "c4-m100")}
    for (server, label), r in records.items():
        protocol = "h1" if label == "h1-c4" else "h2c"
        assert r.load["protocol"] == protocol and r.tool == "h2load"
        assert len(r.attempts) == 2 and all(a.measured and a.rps > 0 for a in r.attempts), r.attempts
        assert r.errors.total == 0, (server, label, r.errors)
        output_text = (RESULTS / run_id / r.attempts[0].raw[0]).read_text()
        port = PORTS[server] + (1000 if protocol == "h2c" else 0)
        assert f"127.0.0.1:{port}/hello" in r.attempts[0].commands[0]
        assert f"Application protocol: {'h2c' if protocol == 'h2c' else 'http/1.1'}" in output_text
        assert r.attempts[0].details["h2load"]["protocol"] == ("h2c" if protocol == "h2c" else "http/1.1")
        assert r.latency_ms["p99"] is not None  # exact, from h2load's per-request log
    summary = (RESULTS / run_id / "summary.md").read_text()
    assert "| server | h1-c4 | c4-m1 | c4-m10 | c4-m100 | h2c best ÷ h1 |" in summary
    for server in PORTS:
        assert port_owner("127.0.0.1", PORTS[server]) is None and port_owner("127.0.0.1", PORTS[server] + 1000) is None


def test_the_a_a_twin_gets_an_h2c_port_of_its_own_that_moves_with_its_port():
    """make bench's twin of node must not take node's h2c port (it did: node-twin could not start)."""
    taken = {p for s in SERVERS.values() for p in (s.port, s.h2c_port) if p}
    double = twin(SERVERS["node"], taken)
    assert (double.port, double.h2c_port) == (8180, 9180)
    assert twin(SERVERS["node"], taken | {9180}).h2c_port == 9181  # both free, the same distance apart
    assert twin(SERVERS["express"], taken).h2c_port is None


def test_the_a_a_twin_moves_with_its_servers_ports_override():
    """PORTS="node=9680": node-twin beside it (it stayed at 8180, where PORTS may have put another server), clear of
    every port the run gives."""
    from harness.cli import with_twin

    def twin_ports(ports: dict[str, int]) -> tuple[int, int | None]:
        servers = dict(SERVERS)
        chosen = with_twin(servers, [servers["node"]], "node", ports, announce=False)
        assert [s.name for s in chosen] == ["node", "node-twin"] and servers["node-twin"] is chosen[1]
        return chosen[1].port, chosen[1].h2c_port

    assert twin_ports({"node": 9680}) == (9780, 10780)
    assert twin_ports({"node": 9680, "rust": 9780}) == (9781, 10781)  # rust has 9780 and its h2c 10780
    assert twin_ports({"rust": 8180}) == (8181, 9181)  # PORTS gave rust the twin's usual port
