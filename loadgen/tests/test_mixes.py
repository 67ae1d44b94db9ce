"""Request mixes (docs/mixes.md): the mix as data and its bad inputs, oha-mix's per-endpoint figures read from oha's
recorded per-request database (each p99 the raw requests' own, never a mean of others), the shares against the
weights, and on loopback a responder that delays one route by a known amount."""

from __future__ import annotations

import json
import socket
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import jsonschema
import pytest
from ports import free_port

from harness.basics.distribution import Distribution
from harness.basics.formats import fmt_ms
from harness.config import scenarios
from harness.config.manifest import Server
from harness.config.mix_targets import MixTarget
from harness.judging import endpoint_ranking, flags
from harness.report import mix_tables
from harness.results import mix
from harness.results.aggregate import Measured, aggregate
from harness.results.flag_kinds import EXCLUDING
from harness.results.records import Attempt, Flag, Record, Run, load
from harness.stats import intervals as stats
from harness.tools import TOOLS, LoadSpec, find_binary, oha_mix
from harness.tools.oha_mix import repetitions
from harness.tools.output import Errors

FIXTURES = Path(__file__).parent / "fixtures" / "oha_mix"  # two real attempts: 300 and 600 req/s, /v1/tweets 3 ms
RESPONDER = Path(__file__).parent / "responders" / "keepalive.py"
SCHEMA = Path(__file__).parents[1] / "results.schema.json"
OHA_MIX = TOOLS["oha-mix"]
WEIGHTS = [("/hello", 70.0), ("/v1/tweets", 20.0), ("/backend", 10.0)]


@pytest.fixture(autouse=True)
def keep_the_recorded_databases(monkeypatch):
    """The fixtures' databases are parsed where they are: kept as KEEP_REQUEST_DB=1 keeps them (a run deletes each)."""
    monkeypatch.setattr(oha_mix, "_keep", True)


def _raw_us(folder: Path) -> dict[str, list[int]]:
    """Each path's latencies (µs) straight from oha's database, no harness code in between."""
    with sqlite3.connect(folder / "mix-requests.db") as db:
        rows = db.execute("SELECT url, duration FROM oha").fetchall()
    out: dict[str, list[int]] = {}
    for url, seconds in rows:
        out.setdefault(url, []).append(round(seconds * 1e6))
    return out


def _nearest_rank_ms(values_us: list[int], percentile: float) -> float:
    ordered = sorted(values_us)
    return ordered[max(int(percentile * len(ordered) / 100 + 0.5), 1) - 1] / 1000


def _attempt(n: int, folder: Path) -> Attempt:
    m = OHA_MIX.parse((folder / "output.txt").read_text(), folder)
    return Attempt(
        attempt=n,
        started_at="",
        tool_processes=1,
        commands=[],
        raw=[],
        failed=None,
        samples={},
        requests=m.requests,
        good_requests=m.good_requests,
        errors=m.errors,
        duration_s=m.duration_s,
        rps=m.rps,
        latency_ms=m.latency_ms,
        details=m.details,
        latency_histogram=m.distribution.encode(),
    )


# -- the mix as data -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("profile", scenarios.PROFILES)
def test_the_mixes_weigh_routes_to_a_whole_and_stay_out_of_make_bench(profile):
    loaded = scenarios.load(profile)
    for name in ("mix-api", "mix-blend"):
        scenario = loaded[name]
        assert scenario.tool == "oha-mix" and not scenario.in_bench and len(scenario.mix) == 4
        assert sum(t.weight for t in scenario.mix) == 100
        assert all(r.load["mix"] == tuple((t.path, t.weight) for t in scenario.mix) for r in scenario.runs)
    assert {r.label for r in loaded["mix-api"].runs} == {"keepalive", "close", "rate-1000"}


def test_a_path_repeated_in_proportion_to_its_weight_in_the_shortest_list():
    assert repetitions((("/a", 70.0), ("/b", 20.0), ("/c", 8.0), ("/d", 2.0))) == [
        ("/a", 35),
        ("/b", 10),
        ("/c", 4),
        ("/d", 1),
    ]
    assert repetitions((("/a", 33.3), ("/b", 66.7))) == [("/a", 333), ("/b", 667)]


def test_a_server_takes_part_in_a_mix_only_when_it_serves_every_route_so_each_is_verified():
    scenario = scenarios.load("quick")["mix-api"]
    every = Server(
        name="full", folder=Path("."), port=1, run=(), routes=("id", "hello", "tweets", "backend", "fibonacci")
    )
    lacking = Server(name="part", folder=Path("."), port=1, run=(), routes=("id", "hello", "tweets", "backend"))
    assert scenario.path_for(every) == "/hello" and scenario.path_for(lacking) is None


@pytest.mark.parametrize(
    ("targets", "says"),
    [
        ('{ route = "nope", path = "/x", weight = 100 }', "[m] targets[0] route = 'nope' is not a route"),
        ('{ route = "hello", path = "/hello", weight = 0 }', "[m] targets[0] weight = 0 must be a positive number"),
        (
            '{ route = "hello", path = "/hello", weight = "70" }',
            "[m] targets[0] weight = '70' must be a positive number",
        ),
        ('{ route = "hello", path = "/hello", weight = -5 }', "[m] targets[0] weight = -5 must be a positive number"),
        (
            '{ route = "hello", path = "/hello", weight = 70 }, { route = "tweets", path = "/v1/tweets", weight = 20 }',
            "[m] targets: the weights sum to 90, not 100",
        ),
        (
            '{ route = "hello", path = "/hello", weight = 99.95 }, { route = "tweets", path = "/v1/tweets", weight = 0.05 }',
            "[m] targets[0] weight = 99.95 must be a multiple of 0.1",
        ),
    ],
)
def test_bad_mix_input_is_one_line_naming_the_scenario_and_key(tmp_path, targets, says):
    path = tmp_path / "scenarios.toml"
    path.write_text(
        f'[m]\ntool = "oha-mix"\ntargets = [{targets}]\n'
        "profile.quick = { runs = [{ concurrency = 4, duration_s = 1 }] }\n"
    )
    with pytest.raises(scenarios.ScenarioError) as caught:
        scenarios.load("quick", path)
    assert says in str(caught.value) and "\n" not in str(caught.value)


# -- oha's recorded per-request output ---------------------------------------------------------------------------


def test_oha_mix_command_repeats_paths_by_weight_and_keeps_every_request(tmp_path):
    spec = LoadSpec(url="http://127.0.0.1:1/hello", concurrency=4, duration_s=2, mix=(("/a", 75.0), ("/b", 25.0)))
    argv = OHA_MIX.command(spec, tmp_path)
    assert "--urls-from-file" in argv and "--disable-keepalive" in argv and argv[-1] == str(tmp_path / "mix-urls.txt")
    assert argv[argv.index("--db-url") + 1] == str(tmp_path / "mix-requests.db")
    assert (tmp_path / "mix-urls.txt").read_text().splitlines() == ["http://127.0.0.1:1/a"] * 3 + [
        "http://127.0.0.1:1/b"
    ]
    assert "--disable-keepalive" not in OHA_MIX.command(LoadSpec(**{**spec.__dict__, "keepalive": True}), tmp_path)


def test_each_endpoints_percentiles_are_its_own_requests_from_the_raw_output():
    folder = FIXTURES / "attempt1"
    m = OHA_MIX.parse((folder / "output.txt").read_text(), folder)
    raw = _raw_us(folder)
    assert m.requests == 300 and sum(e["requests"] for e in m.details["endpoints"].values()) == 300
    for path, values in raw.items():
        own = Distribution.decode(m.details["endpoints"][path]["latency_histogram"])
        assert own.count == len(values)
        for percentile in (50, 90, 99, 99.9):
            assert own.percentile_ms(percentile) == _nearest_rank_ms(values, percentile)
    # the whole is every answer's own latency too, not oha's nine quantile levels
    assert m.latency_ms["p99"] == _nearest_rank_ms([v for vs in raw.values() for v in vs], 99)


def test_a_records_endpoint_p99_pools_its_attempts_requests_never_averages_their_p99s():
    attempts = [_attempt(1, FIXTURES / "attempt1"), _attempt(2, FIXTURES / "attempt2")]
    endpoints = mix.endpoints(attempts, WEIGHTS)
    pooled = {path: _raw_us(FIXTURES / "attempt1")[path] + _raw_us(FIXTURES / "attempt2")[path] for path, _ in WEIGHTS}
    for path, _ in WEIGHTS:
        assert endpoints[path]["requests"] == len(pooled[path]) and endpoints[path]["errors"] == 0
        assert endpoints[path]["latency_ms"]["p99"] == _nearest_rank_ms(pooled[path], 99)
    per_attempt = [
        Distribution.decode(a.details["endpoints"]["/backend"]["latency_histogram"]).percentile_ms(99) for a in attempts
    ]
    assert endpoints["/backend"]["latency_ms"]["p99"] != sum(per_attempt) / 2
    # the delayed route (3 ms in the responder) sits apart from the others inside the same mix
    assert endpoints["/v1/tweets"]["latency_ms"]["p50"] > 3 > endpoints["/hello"]["latency_ms"]["p99"]


def test_shares_sum_to_the_whole_and_a_share_beyond_its_tolerance_is_flagged():
    attempts = [_attempt(1, FIXTURES / "attempt1"), _attempt(2, FIXTURES / "attempt2")]
    endpoints = mix.endpoints(attempts, WEIGHTS)
    assert sum(e["requests"] for e in endpoints.values()) == 900
    assert sum(e["share_pct"] for e in endpoints.values()) == pytest.approx(100, abs=0.01)
    assert all(e["share_within_tolerance"] for e in endpoints.values()) and mix.shares_flag(endpoints) is None
    # 4 binomial standard errors: 70 % of 900 requests may be off by 4·sqrt(.7·.3/900) = 6.1 points
    assert endpoints["/hello"]["share_tolerance_pct"] == pytest.approx(6.11, abs=0.01)
    skewed = mix.endpoints(attempts, [("/hello", 50.0), ("/v1/tweets", 40.0), ("/backend", 10.0)])
    flag = mix.shares_flag(skewed)
    assert flag.name == "mix-shares" and "/hello" in flag.reason and "/backend" not in flag.reason


def test_a_mix_record_with_endpoints_is_what_the_published_schema_allows():
    schema = json.loads(SCHEMA.read_text())
    endpoints = mix.endpoints([_attempt(1, FIXTURES / "attempt1")], WEIGHTS)
    validator = jsonschema.Draft202012Validator(
        {**schema["$defs"]["record"]["properties"]["endpoints"], "$defs": schema["$defs"]}
    )
    validator.validate(endpoints)
    with pytest.raises(jsonschema.ValidationError):
        validator.validate({"/hello": {**endpoints["/hello"], "weight": 0}})


# -- on loopback: one route delayed by a known amount ------------------------------------------------------------


@pytest.mark.integration
@pytest.mark.skipif(not find_binary(OHA_MIX), reason="oha is not built (make setup-oha)")
def test_a_route_delayed_by_a_known_amount_shows_it_at_p50_and_leaves_the_others_alone(tmp_path):
    port, delay_ms = free_port(), 40.0
    responder = subprocess.Popen([sys.executable, str(RESPONDER), str(port), str(delay_ms), "/slow"])
    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.05)
        spec = LoadSpec(
            url=f"http://127.0.0.1:{port}/",
            concurrency=16,
            duration_s=3,
            keepalive=True,
            rate=150,
            mix=(("/fast", 60.0), ("/other", 25.0), ("/slow", 15.0)),
        )
        done = subprocess.run(OHA_MIX.command(spec, tmp_path), capture_output=True, text=True, timeout=60)
        m = OHA_MIX.parse(done.stdout + done.stderr, tmp_path)
    finally:
        responder.terminate()
        responder.wait()
    attempt = Attempt(
        attempt=1,
        started_at="",
        tool_processes=1,
        commands=[],
        raw=[],
        failed=None,
        samples={},
        requests=m.requests,
        good_requests=m.good_requests,
        errors=Errors(),
        duration_s=m.duration_s,
        rps=m.rps,
        latency_ms=m.latency_ms,
        details=m.details,
    )
    endpoints = mix.endpoints([attempt], list(spec.mix))
    assert m.errors.total == 0 and sum(e["requests"] for e in endpoints.values()) == m.requests
    assert endpoints["/slow"]["latency_ms"]["p50"] == pytest.approx(delay_ms, rel=0.05)
    for path in ("/fast", "/other"):  # answered at once, never held behind the slow route's requests
        assert endpoints[path]["latency_ms"]["p50"] < delay_ms / 10
    assert all(e["share_within_tolerance"] for e in endpoints.values())


# -- the report ----------------------------------------------------------------------------------------------------


def test_the_report_shows_each_endpoint_beside_the_same_path_measured_alone():
    attempts = [_attempt(1, FIXTURES / "attempt1"), _attempt(2, FIXTURES / "attempt2")]
    endpoints = mix.endpoints(attempts, WEIGHTS)
    whole = Distribution.merged(Distribution.decode(a.latency_histogram) for a in attempts)
    mixed = {
        "server": "node",
        "scenario": "mix-api",
        "run": "keepalive",
        "path": "/hello",
        "attempts": [],
        "load": {"keepalive": True},
        "rps": 100.0,
        "endpoints": endpoints,
        "requests": 900,
        "latency_histogram": whole.encode(),
    }
    alone = {
        "server": "node",
        "scenario": "hello",
        "run": "c100",
        "path": "/hello",
        "attempts": [],
        "rps": 9000.0,
        "latency_ms": {"p50": 0.4, "p99": 1.25},
    }
    other = {**alone, "server": "rust", "latency_ms": {"p50": 9.0, "p99": 9.0}}
    run = Run.from_dict({"schema": 5, "records": [mixed, alone, other]})
    lines = mix_tables.markdown(run, "mix-api")
    rows = {line.split(" | ")[0][2:]: line for line in lines if " | node | " in line}
    assert set(rows) == {"/hello", "/v1/tweets", "/backend", mix_tables.WHOLE}
    assert "| 0.400 / 1.25 (hello · c100) |" in rows["/hello"] and rows["/backend"].split(" | ")[5] == "-"
    assert f"| {fmt_ms(endpoints['/hello']['latency_ms']['p99'])} |" in rows["/hello"]
    every = [v for folder in ("attempt1", "attempt2") for vs in _raw_us(FIXTURES / folder).values() for v in vs]
    cells = [c.strip() for c in rows[mix_tables.WHOLE].strip("|").split("|")]  # requests and errors last
    assert cells[3:5] == [fmt_ms(whole.percentile_ms(50)), fmt_ms(_nearest_rank_ms(every, 99))]
    assert cells[-2:] == ["900", "0"]
    assert mix_tables.markdown(run, "hello") == [] and "endpoints inside the mix" in mix_tables.html(run, "mix-api")


def test_a_mix_record_carries_pooled_endpoints_and_validates_against_the_schema():
    targets = tuple(
        MixTarget(route, path, weight) for (path, weight), route in zip(WEIGHTS, ("hello", "tweets", "backend"))
    )
    run = scenarios.LoadRun("rate", {"concurrency": 8, "rate": 300.0, "mix": tuple(WEIGHTS)})
    scenario = scenarios.Scenario(
        "mix-x", "", "oha-mix", tuple((t.route, t.path) for t in targets), (run,), None, mix=targets
    )
    attempts = [_attempt(1, FIXTURES / "attempt1"), _attempt(2, FIXTURES / "attempt2")]
    record = aggregate(Measured("node", "/hello", "local"), scenario, run, attempts, None)
    assert record.endpoints == mix.endpoints(attempts, WEIGHTS) and "endpoints" not in record.details
    assert record.requests == 900 and record.latency_histogram
    written = record.to_dict()
    schema = json.loads(SCHEMA.read_text())
    jsonschema.Draft202012Validator({**schema["$defs"]["record"], "$defs": schema["$defs"]}).validate(written)
    assert Record.from_dict(written).endpoints == record.endpoints


# -- ranking per endpoint ------------------------------------------------------------------------------------------

RECORDED = Path(__file__).parent / "fixtures" / "mix_api_20261126" / "results.json"  # see its README.md


@pytest.fixture
def recorded() -> Run:
    run = load(RECORDED)
    flags.evaluate(run)
    return run


def _mix_run(run: Run, label: str) -> list[Record]:
    return [r for r in run.records if r.scenario == "mix-api" and r.run == label]


def _places(run: Run, label: str, path: str) -> list[tuple[str, str]]:
    return [(s.record.server, s.label) for s in endpoint_ranking.rank(_mix_run(run, label), path)]


def test_each_path_ranks_the_servers_by_its_p99_with_the_intervals_of_every_record(recorded):
    """The recorded mix (rust, node, akka; 4 attempts each): each path's p99 is the median of the attempts' own p99 of
    that path with the order-statistic interval every record's req/s has (min–max, 87.5 % with 4 attempts); a server
    is above another only where its interval lies wholly below the other's."""
    keepalive = _mix_run(recorded, "keepalive")
    rust = next(r for r in keepalive if r.server == "rust")
    found = endpoint_ranking.summary(rust, "/hello")
    assert found and found["n"] == 4 and found["ci"]["method"] == rust.summary.rps["ci"]["method"]
    assert found["ci"]["level"] == rust.summary.rps["ci"]["level"] == 0.875
    assert (round(found["ci"]["low"], 2), round(found["ci"]["high"], 2)) == (8.9, 9.62)
    # akka 3.63–6.92 ms wholly below node 8.02–8.87, wholly below rust 8.90–9.62: the blend reverses the whole's
    # order on /hello (rust first by req/s there)
    assert _places(recorded, "keepalive", "/hello") == [("akka", "1"), ("node", "2"), ("rust", "3")]
    assert _places(recorded, "keepalive", "/backend") == [("akka", "1"), ("node", "2–3"), ("rust", "2–3")]
    assert _places(recorded, "close", "/hello") == [("rust", "1"), ("node", "2"), ("akka", "3")]
    assert {label for _, label in _places(recorded, "rate-1000", "/hello")} == {"1–3"}  # 1,000 req/s each: tied
    for label in ("keepalive", "close", "rate-1000"):
        for path in endpoint_ranking.paths(_mix_run(recorded, label)):
            standings = endpoint_ranking.rank(_mix_run(recorded, label), path)
            for b in standings:
                for a in standings:
                    if stats.interval(b.p99)[1] < stats.interval(a.p99)[0]:  # wholly below: surely above
                        assert b.rank < a.rank and b.worst < a.worst, (label, path, b.record.server, a.record.server)


def test_a_record_kept_out_of_the_ranking_is_kept_out_of_its_paths_too(recorded):
    akka = next(r for r in _mix_run(recorded, "keepalive") if r.server == "akka")
    akka.flags.append(Flag(sorted(EXCLUDING)[0], "kept out for the test"))
    assert _places(recorded, "keepalive", "/hello") == [("node", "1"), ("rust", "2")]
    lines = mix_tables.markdown(recorded, "mix-api")
    assert any(line.startswith("| /hello | - | akka |") for line in lines)


def test_the_report_shows_each_paths_ranking_beside_the_same_route_measured_alone(recorded):
    """rust's /hello: p99 9.25 ms inside the keep-alive mix (third of three), 1.25 ms alone (hello c100, wrk)."""
    lines = mix_tables.markdown(recorded, "mix-api")
    table = lines[lines.index("**mix-api · keepalive**") :]
    row = next(line for line in table if line.startswith("| /hello | 3 | rust |"))
    assert "| 0.710 | 9.25 | 0.351 / 1.25 (hello · c100) | 9.15 (8.90 – 9.62, 87.5 %) |" in row  # p50, p99, alone
    whole = [line for line in table if line.startswith(f"| {mix_tables.WHOLE} |")][:3]
    assert [line.split(" | ")[1:3] for line in whole] == [["1–2", "rust"], ["1–2", "akka"], ["3", "node"]]
    assert "<b>mix-api · close</b>" in mix_tables.html(recorded, "mix-api")
