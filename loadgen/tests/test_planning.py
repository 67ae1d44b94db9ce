"""CPU plans, scenario data, manifests, load splitting: the decisions taken before anything runs."""

import pytest

from harness.basics.cpus import CpuPlanError, plan
from harness.config import scenarios
from harness.config.manifest import ManifestError, build_steps, discover, select, upstream_of
from harness.tools import LoadSpec
from harness.tools.availability import tool_processes
from harness.tools.load_plan import divide
from harness.tools.output import Errors, Measurement, merge


def test_two_cores_server_on_one_loadgen_and_upstream_on_the_other():
    p = plan((0, 1))
    assert (p.server, p.loadgen, p.upstream) == ((0,), (1,), (1,))


@pytest.mark.parametrize(
    "cores, server, upstream, loadgen",
    [
        (4, (0,), (1,), (2, 3)),
        (8, (0, 1), (2,), (3, 4, 5, 6, 7)),
        (16, (0, 1, 2, 3), (4,), tuple(range(5, 16))),
    ],
)
def test_bigger_machines_give_the_server_more_cores_and_the_upstream_its_own(cores, server, upstream, loadgen):
    p = plan(tuple(range(cores)))
    assert (p.server, p.upstream, p.loadgen) == (server, upstream, loadgen)


def test_cpu_overrides_are_checked():
    assert plan((0, 1, 2, 3), {"server": "2-3", "loadgen": "0,1"}).server == (2, 3)
    with pytest.raises(CpuPlanError, match="not available"):
        plan((0, 1), {"server": "5"})
    with pytest.raises(CpuPlanError, match="must not share"):
        plan((0, 1), {"server": "0", "loadgen": "0"})
    with pytest.raises(CpuPlanError, match="at least 2"):
        plan((0,))


def test_both_profiles_load_and_keep_the_seed_parameters():
    seed = scenarios.load("seed")
    low = seed["low-compute"].runs[0].load
    assert (low["requests"], low["concurrency"], low["timeout_s"], low["continue_on_error"]) == (
        20000,
        20000,
        10000,
        True,
    )
    assert [r.label for r in seed["weather"].runs] == [
        "c1-t1",
        "c4-t4",
        "c8-t8",
        "c16-t8",
        "c32-t8",
        "c64-t8",
        "c128-t8",
        "c128-t16",
        "c256-t32",
    ]
    assert seed["tweets"].runs[0].load == {"concurrency": 100, "calls_per_connection": 10000, "rate": 10000.0}
    quick = scenarios.load("quick")
    assert set(quick) == set(seed)
    assert quick["high-compute"].targets[0] == ("fibonacci", "/fibonacci?param=35")


def test_the_runtime_overhead_scenario_is_measured_only_when_named():
    quick = scenarios.load("quick")
    servers = discover()
    assert "runtime-overhead" not in [s.name for s in scenarios.select(quick, None)]  # not part of `make bench`
    assert [s.name for s in scenarios.select(quick, ["runtime-overhead"])] == ["runtime-overhead"]
    overhead = quick["runtime-overhead"]
    assert overhead.path_for(servers["nginx"]) == "/weather.json" and overhead.path_for(servers["rust"]) == "/hello"


def test_bad_scenario_values_are_refused(tmp_path):
    bad = tmp_path / "s.toml"
    bad.write_text(
        '[x]\ntool = "ab"\ntargets = [{ route = "hello", path = "/hello" }]\n'
        "profile.quick = { runs = [{ requests = -5, concurrency = 10 }] }\n"
    )
    with pytest.raises(scenarios.ScenarioError, match="requests = -5 must be positive"):
        scenarios.load("quick", bad)
    with pytest.raises(scenarios.ScenarioError, match="unknown profile"):
        scenarios.load("fast")
    with pytest.raises(scenarios.ScenarioError, match="REPEAT"):
        scenarios.settings("quick", 0)


def test_manifests_are_discovered_and_unknown_servers_refused():
    servers = discover()
    assert {"nginx", "node", "express", "rust", "akka", "spray", "finagle", "play", "pekko", "socko"} <= set(servers)
    assert servers["express"].folder == servers["node"].folder
    with pytest.raises(ManifestError, match="unknown server"):
        select(servers, ["tomcat"])


def test_a_manifest_with_an_unknown_route_is_refused(tmp_path):
    (tmp_path / "x").mkdir()
    (tmp_path / "x" / "manifest.toml").write_text(
        '[[server]]\nname="x"\nport=1\nroutes=["hello","graphql"]\nrun=["x"]\n'
    )
    with pytest.raises(ManifestError, match="unknown routes"):
        discover(tmp_path)


def test_a_shared_build_runs_once_for_its_servers_and_others_once_per_folder():
    servers = discover()
    steps = build_steps(select(servers, ["akka", "node", "express", "finagle", "rust"]))
    assert [(s.servers, s.cwd.name) for s in steps] == [
        (("akka", "finagle"), servers["akka"].folder.parent.name),
        (("node",), "node"),
        (("rust",), "rust"),
    ]
    assert steps[0].command == "sh jvm-contract/build.sh akka,finagle"
    assert [s.command for s in build_steps(select(servers, ["spray"]))] == [
        servers["spray"].build.replace("{folders}", "spray")
    ]


def write_manifest(folder, body: str) -> None:
    folder.mkdir()
    (folder / "manifest.toml").write_text('[[server]]\nrun=["x"]\n' + body)


def test_roles_come_from_the_manifests():
    servers = discover()
    assert upstream_of(servers).name == "nginx" and servers["nginx"].upstream_document.is_file()
    assert [s.name for s in servers.values() if s.has_role("ceiling")] == ["nginx"]


@pytest.mark.parametrize(
    "manifests, message",
    [
        ({"a": 'name="a"\nport=1\nroutes=["hello"]\nroles=["leader"]\n'}, "'roles' must be a list of"),
        ({"a": 'name="a"\nport=1\nroutes=["weather.json"]\nroles=["upstream"]\n'}, "names its `upstream_document`"),
        (
            {"a": 'name="a"\nport=1\nroutes=["hello"]\nroles=["upstream"]\nupstream_document="w.json"\n'},
            "must serve the route 'weather.json'",
        ),
        (
            {
                n: f'name="{n}"\nport=1\nroutes=["weather.json"]\nroles=["upstream"]\nupstream_document="w.json"\n'
                for n in ("a", "b")
            },
            "several servers have the role 'upstream'",
        ),
    ],
)
def test_bad_roles_are_refused(tmp_path, manifests, message):
    for folder, body in manifests.items():
        write_manifest(tmp_path / folder, body)
    with pytest.raises(ManifestError, match=message):
        discover(tmp_path)


def test_loads_above_the_open_file_limit_are_split():
    assert tool_processes("ab", 20000, limit=20000) == 2
    assert tool_processes("ab", 1000, limit=20000) == 1
    assert tool_processes("httperf", 2500, limit=20000) == 3  # select() stops at 1024
    parts = divide(LoadSpec(url="u", concurrency=20001, requests=40002), 2)
    assert [(p.concurrency, p.requests) for p in parts] == [(10001, 20002), (10000, 20000)]  # whole rounds kept


def test_merged_parts_pool_their_distributions():
    fast = Measurement(
        100, Errors(), 1.0, 100.0, {"p50": 1.0, "p90": 1.0, "p99": 1.0, "max": 1.0}, [(p, 1.0) for p in range(1, 101)]
    )
    slow = Measurement(
        100,
        Errors(read=3),
        2.0,
        50.0,
        {"p50": 9.0, "p90": 9.0, "p99": 9.0, "max": 9.0},
        [(p, 9.0) for p in range(1, 101)],
    )
    merged = merge([fast, slow])
    assert merged.requests == 200 and merged.errors.read == 3
    assert merged.rps == 100.0  # 200 requests over the longer part's 2 s
    assert merged.latency_ms == {"p50": 1.0, "p90": 9.0, "p99": 9.0, "max": 9.0}
