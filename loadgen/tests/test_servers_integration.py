"""Every server of the repository, built, started on loopback, checked against the contract; each tool run briefly
against nginx, node, express and rust. Needs `make build` first (make test does it).

Ports are the defaults + 10000 so the tests do not collide with servers a developer left up with `make up`."""

import json
from pathlib import Path

import pytest

from harness.basics import httpclient
from harness.basics.cpus import plan
from harness.config.manifest import discover
from harness.conformance import contract_table
from harness.conformance import verification as contract
from harness.measuring.tool_processes import Beside, Naming, measure
from harness.runtime.local import LocalRuntime, port_owner
from harness.servers.session import Session
from harness.tools import TOOLS, LoadSpec
from harness.tools.load_plan import plan_load

pytestmark = pytest.mark.integration  # real servers, load tools or the harness's command line on loopback

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
        assert report.checks > (20 if SERVERS[name].has_role("calibrated") else 40)  # calibrated: /id and /hello only
    finally:
        session.release(name)


@pytest.mark.parametrize("name", [n for n, s in SERVERS.items() if s.needs_upstream])
def test_weather_answers_502_json_when_the_upstream_is_down(name):
    server = SERVERS[name]
    runtime = LocalRuntime()
    running = runtime.start(
        server, list(plan().server), PORTS[name], {"UPSTREAM_URL": "http://127.0.0.1:1/weather.json"}
    )
    try:
        response = httpclient.get(running.host, running.port, "/weather/Montpellier", timeout=30)
        assert response.status == 502
        assert contract_table.media_type(response.header("content-type"))[0] == "application/json"
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
    load = plan_load(tool, spec, session.plan.loadgen)
    outcome = measure(session.runtime, load, Naming(tmp_path, "t", "t"), Beside(running, len(running.cpus)))
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


def union_percentile(parts, pct):
    """The pct-th percentile of the parts' requests together, each part's 1 % slices standing for its requests:
    every slice's latency repeated for its requests (an independent reading of what tools/output.merge pools)."""
    latencies = []
    for m in parts:
        per_slice = m.requests // len(m.quantiles)
        latencies.extend(ms for _, ms in m.quantiles for _ in range(per_slice))
    latencies.sort()
    return latencies[max(0, -(-len(latencies) * pct // 100) - 1)]


def test_a_load_split_into_two_processes_measures_like_one(session, tmp_path):
    """The same ab load on rust, as 1 process and as 2 (LOADGEN_PROCESSES=2 on this machine's one load-generator
    core), alternately: both processes ran, pinned; the rates agree within the machine's noise; the merged percentiles
    are those of the two parts' requests together."""
    running = session.ensure(SERVERS["rust"])
    spec = LoadSpec(url=running.base_url + "/hello", concurrency=20, requests=20000)
    rates = {1: [], 2: []}
    for round_no in range(3):
        for processes in (1, 2):
            load = plan_load("ab", spec, session.plan.loadgen, override=processes)
            outcome = measure(
                session.runtime,
                load,
                Naming(tmp_path / f"p{processes}-{round_no}", "t", "t"),
                Beside(running, len(running.cpus)),
            )
            assert outcome.failure is None and outcome.measurement.requests == 20000
            rates[processes].append(outcome.measurement.rps)
            core = ",".join(map(str, session.plan.loadgen))
            assert [c[:3] for c in outcome.commands] == [["taskset", "-c", core]] * processes
            assert len(outcome.parts_cpu_s) == processes and all(cpu > 0 for cpu in outcome.parts_cpu_s)
            assert sum(outcome.parts_cpu_s) == pytest.approx(outcome.samples["loadgen"]["cpu_s"], abs=0.01)
            if processes == 2:
                parts = [TOOLS["ab"].parse(path.read_text(), path.parent) for path in outcome.raw]
                assert [p.requests for p in parts] == [10000, 10000]
                for key, pct in (("p50", 50), ("p90", 90), ("p99", 99)):
                    # to the µs up to 32 ms, to 4 significant digits above (the histogram's resolution)
                    assert outcome.measurement.latency_ms[key] == pytest.approx(
                        union_percentile(parts, pct), rel=1 / 16384, abs=0
                    ), key
                assert outcome.measurement.distribution.count == 20000
    one, two = sorted(rates[1])[1], sorted(rates[2])[1]
    assert 0.6 < two / one < 1.6, rates  # the same load: within this machine's noise, not a different regime
