"""Every server of the repository, built, started on loopback, checked against the contract; each tool run briefly
against nginx, node, express and rust; the CLI end to end, including Ctrl-C. Needs `make build` first (make test does it).

Ports are the defaults + 10000 so the tests do not collide with servers a developer left up with `make up`."""
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from harness import contract, httpclient
from harness.cpus import plan
from harness.manifest import discover
from harness.runner import measure
from harness.runtime import RuntimeError_
from harness.runtime.local import LocalRuntime, port_owner
from harness.session import Session
from harness.tools import LoadSpec

SERVERS = discover()
OFFSET = 10000
PORTS = {name: s.port + OFFSET for name, s in SERVERS.items()}
UPSTREAM_DOC = (Path(__file__).resolve().parents[2] / "nginx" / "static" / "weather.json").read_bytes()
CORE_SERVERS = ["nginx", "node", "express", "rust"]
LOADGEN = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def session():
    with Session(LocalRuntime(), plan(), SERVERS, PORTS) as s:
        yield s


@pytest.mark.parametrize("name", list(SERVERS))
def test_server_meets_the_contract(session, name):
    running = session.ensure(SERVERS[name])
    try:
        report = contract.verify(name, running.host, running.port, SERVERS[name].routes, UPSTREAM_DOC)
        assert report.ok, "\n".join(report.failures)
        assert report.checks > 40
    finally:
        session.release(name)


@pytest.mark.parametrize("name", [n for n, s in SERVERS.items() if s.needs_upstream])
def test_weather_answers_502_json_when_the_upstream_is_down(name):
    server = SERVERS[name]
    runtime = LocalRuntime()
    running = runtime.start(server, list(plan().server), PORTS[name], {"UPSTREAM_URL": "http://127.0.0.1:1/weather.json"})
    try:
        response = httpclient.get(running.host, running.port, "/weather/Montpellier", timeout=30)
        assert response.status == 502
        assert contract.media_type(response.header("content-type"))[0] == "application/json"
        assert "error" in json.loads(response.body)
        assert httpclient.get(running.host, running.port, "/id").text == name  # still serving
    finally:
        runtime.stop(running)
    assert port_owner("127.0.0.1", PORTS[name]) is None, "the server outlived stop()"


LOADS = {
    "ab": LoadSpec(url="", concurrency=20, requests=2000),
    "wrk": LoadSpec(url="", concurrency=20, threads=1, duration_s=2),
    "httperf": LoadSpec(url="", concurrency=10, rate=100, calls_per_connection=200),
}


@pytest.mark.parametrize("tool", list(LOADS))
@pytest.mark.parametrize("name", CORE_SERVERS)
def test_each_tool_measures_each_core_server_without_errors(session, tmp_path, name, tool):
    running = session.ensure(SERVERS[name])
    spec = LOADS[tool].__class__(**{**LOADS[tool].__dict__, "url": running.base_url + "/hello"})
    outcome = measure(session.runtime, tool, spec, list(session.plan.loadgen), tmp_path, "t", "t",
                      server_pids=lambda: session.runtime.pids(running), server_cores=len(running.cpus))
    assert outcome.failure is None
    m = outcome.measurement
    assert m.errors.total == 0
    assert m.requests == (2000 if tool == "ab" else 10 * 200 if tool == "httperf" else m.requests) and m.requests > 0
    assert m.rps > 0
    assert outcome.samples["server"]["cpu_s"] > 0 and outcome.samples["loadgen"]["cpu_s"] > 0
    assert outcome.raw[0].read_text()


def test_a_busy_port_is_reported_with_its_owner():
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", 0))
        squatter.listen()
        port = squatter.getsockname()[1]
        with pytest.raises(RuntimeError_, match=f"port {port} is in use by pid {os.getpid()}"):
            LocalRuntime().start(SERVERS["rust"], [0], port, {})


def harness(*args, **env):
    ports = " ".join(f"{n}={p}" for n, p in PORTS.items())
    return [sys.executable, "-m", "harness", "--ports", ports, *args], {**os.environ, "REPEAT": "1", **env}


def test_cli_run_writes_results_for_every_server_and_scenario(tmp_path):
    argv, env = harness("--servers", "rust nginx", "--run-id", f"test-{os.getpid()}", "run", "backend tweets")
    proc = subprocess.run(argv, cwd=LOADGEN, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    results = LOADGEN.parent / "results" / f"test-{os.getpid()}"
    data = json.loads((results / "results.json").read_text())
    assert data["conditions"]["runtime"] == "local" and data["conditions"]["cpus"]["server"]
    assert data["verification"]["rust"]["ok"]
    got = {(r["server"], r["scenario"], r["run"]) for r in data["records"]}
    assert got == {("rust", "backend", "close"), ("rust", "backend", "keepalive"), ("rust", "tweets", "c100"),
                   ("nginx", "backend", "close"), ("nginx", "backend", "keepalive")}
    for record in data["records"]:
        assert record["errors"]["total"] == 0 and record["rps"] > 0
        assert all((results / raw).exists() for a in record["attempts"] for raw in a["raw"])
    assert port_owner("127.0.0.1", PORTS["rust"]) is None and port_owner("127.0.0.1", PORTS["nginx"]) is None


def test_ctrl_c_stops_servers_and_tools_and_keeps_results():
    run_id = f"test-interrupt-{os.getpid()}"
    argv, env = harness("--servers", "rust", "--run-id", run_id, "run", "hello")
    proc = subprocess.Popen(argv, cwd=LOADGEN, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and port_owner("127.0.0.1", PORTS["rust"]) is None:
        time.sleep(0.1)
    time.sleep(2)  # into the warm-up
    proc.send_signal(signal.SIGINT)
    output, _ = proc.communicate(timeout=60)
    assert proc.returncode == 130, output
    assert "interrupted" in output
    assert port_owner("127.0.0.1", PORTS["rust"]) is None and port_owner("127.0.0.1", PORTS["nginx"]) is None
    assert not [p for p in psutil.process_iter(["name"]) if p.info["name"] == "wrk"], "a wrk outlived Ctrl-C"
    assert json.loads((LOADGEN.parent / "results" / run_id / "results.json").read_text())["run_id"] == run_id


def test_unknown_server_is_a_clear_error():
    argv, env = harness("--servers", "tomcat", "ping")
    proc = subprocess.run(argv, cwd=LOADGEN, env=env, capture_output=True, text=True)
    assert proc.returncode == 2
    assert "unknown server(s) tomcat" in proc.stdout
