"""Every server of the repository, built, started on loopback, checked against the contract; each tool run briefly
against nginx, node, express and rust. Needs `make build` first (make test does it).

Ports are the defaults + 10000 so the tests do not collide with servers a developer left up with `make up`."""
import json
from pathlib import Path

import pytest

from harness.basics import httpclient
from harness.basics.cpus import plan
from harness.config.manifest import discover
from harness.measuring import verification as contract
from harness.measuring.runner import measure
from harness.measuring.session import Session
from harness.runtime.local import LocalRuntime, port_owner
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
                      server=running, server_cores=len(running.cpus))
    assert outcome.failure is None
    m = outcome.measurement
    assert m.errors.total == 0
    counted = {"ab": 2000, "httperf": 10 * 200}  # the loads given by count: every request answered
    if tool in counted:
        assert m.requests == counted[tool]
    else:  # wrk runs for its 2 s: what it completed in them, at the rate it reports
        assert 1.9 <= m.duration_s <= 2.5 and m.requests > 100
        assert m.requests == pytest.approx(m.rps * m.duration_s, rel=0.01)
    assert m.rps > 0
    # the kernel counts CPU time in 10 ms ticks: nginx can serve httperf's 2,000 requests within one tick and read
    # 0.0 (CI, a fast day); the server is sampled (a figure, not None), the busier load generator used some
    assert outcome.samples["server"]["cpu_s"] is not None and outcome.samples["server"]["cpu_s"] >= 0
    assert outcome.samples["loadgen"]["cpu_s"] > 0
    assert outcome.raw[0].read_text()
