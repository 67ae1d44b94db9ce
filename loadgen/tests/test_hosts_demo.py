"""HOSTS end to end, against the namespaced three-host topology (`make hosts-demo`): skipped unless it is up and a
local Docker engine holds the images, failed instead under CI=true (CI runs it after the Docker test: .ci/hosts.sh). Traffic goes only to the
namespaces that topology created (10.213.77.0/24 through bench-h0), never elsewhere.

Through the CLI, as a user would: build (images sent to the hosts), ping, a wrk and an ab scenario with server,
load generator and upstream each in its own namespace, and a short `bench` with its A/A twin; then the records, the recorded hosts, addresses, CPU plans
and path, every container's least privilege as each host's engine applied it, and that nothing is left on any host,
also after Ctrl-C in the middle of a load."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness.config.host_roles import parse, probe
from harness.config.manifest import REPO
from harness.containers.engine import engine_answers
from harness.containers.transfer import image_id, send_image
from harness.results.store import RESULTS

pytestmark = pytest.mark.integration  # real servers, load tools or the harness's command line on loopback

LOADGEN_DIR = Path(__file__).resolve().parents[1]
DEMO_SCRIPT = REPO / "docker" / "hosts-demo.sh"
IMAGE = "bench/server-rust:latest"
ADDRESS = {"server": "10.213.77.2", "loadgen": "10.213.77.3", "upstream": "10.213.77.4"}
PORTS = "nginx=28000 rust=28086"


def demo_is_up() -> bool:
    route = subprocess.run(["ip", "route", "get", ADDRESS["server"]], capture_output=True, text=True)
    return route.returncode == 0 and "dev bench-h0" in route.stdout


def skip_or_fail(reason: str) -> None:
    """No demo or no local engine: the test is skipped, but fails under CI (CI=true: .ci/hosts.sh has brought both up)."""
    if os.environ.get("CI") == "true":
        pytest.fail(reason, pytrace=False)
    pytest.skip(reason)


@pytest.fixture(scope="module", autouse=True)
def demo_up():
    if not demo_is_up():
        skip_or_fail("the hosts-demo topology is not up (make hosts-demo)")


def demo_hosts() -> str:
    """The HOSTS value `make hosts-demo` prints (with each role's CPUs of this machine)."""
    out = subprocess.run([str(DEMO_SCRIPT), "line"], capture_output=True, text=True, check=True).stdout.strip()
    assert out.startswith("server=ssh://root@10.213.77.2,cpus="), out
    return out


def engine_socket(role: str) -> list[str]:
    """A host's engine through its unix socket: what is left there is checked without the harness's own path."""
    return ["docker", "--host", f"unix:///run/bench-hosts/{role}/docker.sock"]


def left_on_hosts() -> dict[str, list[str]]:
    left = {}
    for role in ADDRESS:
        names = subprocess.run(
            [*engine_socket(role), "ps", "-a", "--format", "{{.Names}}"], capture_output=True, text=True
        ).stdout.split()
        # every volume: nginx's static files (labelled) and the loadgen's anonymous one (gone with it: rm -v)
        volumes = subprocess.run(
            [*engine_socket(role), "volume", "ls", "-q"], capture_output=True, text=True
        ).stdout.split()
        if names or volumes:
            left[role] = names + volumes
    return left


def cli(*args: str, env: dict | None = None, timeout: float = 900) -> subprocess.CompletedProcess:
    full = {
        **os.environ,
        "HOSTS": demo_hosts(),
        "PORTS": PORTS,
        "REPEAT": "1",
        "PROFILE": "quick",
        "SERVERS": "rust",
        **(env or {}),
    }
    proc = subprocess.run(
        [sys.executable, "-m", "harness", *args],
        cwd=LOADGEN_DIR,
        env=full,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    print(proc.stdout, proc.stderr)
    return proc


def cli_watching(
    *args: str, argv: list[str] | None = None, env: dict | None = None
) -> tuple[subprocess.CompletedProcess, dict[str, dict]]:
    """`cli` (or `argv`, the harness's command line), and `docker inspect` of every container of this checkout on each
    host as soon as it runs (keyed role/name), with its main process's status as the kernel gives it then (key
    "status"). `env`: variables besides (or instead of) the test's."""
    full = {
        **os.environ,
        "HOSTS": demo_hosts(),
        "PORTS": PORTS,
        "REPEAT": "1",
        "PROFILE": "quick",
        "SERVERS": "rust",
        **(env or {}),
    }
    harness = subprocess.Popen(
        argv or [sys.executable, "-m", "harness", *args],
        cwd=LOADGEN_DIR,
        env={k: v for k, v in full.items() if v is not None},
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    seen: dict[str, dict] = {}
    while harness.poll() is None:
        for role in ADDRESS:
            ids = subprocess.run(
                [*engine_socket(role), "ps", "-q", "--filter", f"label=bench.checkout={REPO}"],
                capture_output=True,
                text=True,
            ).stdout.split()
            known = {info["Id"][:12] for info in seen.values()}
            new = [i for i in ids if i[:12] not in known]
            if not new:
                continue
            found = subprocess.run([*engine_socket(role), "inspect", *new], capture_output=True, text=True).stdout
            for info in json.loads(found or "[]"):
                if info["State"]["Running"]:
                    try:
                        with open(f"/proc/{info['State']['Pid']}/status") as status:
                            info["status"] = {k: v.strip() for k, v in (line.split(":", 1) for line in status)}
                    except OSError:
                        continue  # gone already: asked again while it runs, if it does
                    seen[f"{role}/{info['Name'].lstrip('/')}"] = info
        time.sleep(0.3)
    out, err = harness.communicate(timeout=900)
    print(out, err)
    return subprocess.CompletedProcess(harness.args, harness.returncode, out, err), seen


def assert_least_privilege(key: str, info: dict) -> None:
    """No capability, none to gain, the engine's default seccomp profile, a read-only root, not root: as the engine
    applied it, and as the kernel applied it to the container's main process."""
    host, config, status = info["HostConfig"], info["Config"], info["status"]
    assert not host["CapAdd"] and "ALL" in (host["CapDrop"] or []), (key, host["CapAdd"], host["CapDrop"])
    options = host["SecurityOpt"] or []
    assert "no-new-privileges:true" in options and not any(o.startswith("seccomp") for o in options), (key, options)
    assert host["ReadonlyRootfs"] is True and not host["Privileged"], key
    assert config["User"] not in ("", "0", "root") and not config["User"].startswith(("0:", "root:")), (
        key,
        config["User"],
    )
    assert int(status["CapEff"], 16) == 0 and status["NoNewPrivs"] == "1", (key, status["CapEff"], status["NoNewPrivs"])
    assert status["Seccomp"] == "2" and int(status["Uid"].split()[0]) != 0, (key, status["Seccomp"], status["Uid"])


def test_each_demo_host_answers_with_its_own_engine():
    engines = probe(parse(demo_hosts(), environ={}))
    assert sorted(e.name for e in engines.values()) == ["bench-h-loadgen", "bench-h-server", "bench-h-upstream"]


@pytest.fixture(scope="module")
def local_engine():
    ok, why = engine_answers()
    if not ok:
        skip_or_fail(f"HOSTS builds the images here: {why}")


def test_build_ping_and_two_scenarios_across_three_hosts(local_engine):
    assert left_on_hosts() == {}
    assert cli("build").returncode == 0  # SERVERS=rust: rust's image to the server host, the loadgen image to its host
    for role, image in (("server", "bench/server-rust:latest"), ("loadgen", "bench/loadgen:bookworm")):
        assert image_id(image, parse(demo_hosts(), environ={})[role]) == image_id(image, None), (role, image)

    ping = cli("ping")
    assert ping.returncode == 0 and "rust: contract OK" in ping.stdout
    assert left_on_hosts() == {}

    run_id = f"test-hosts-{os.getpid()}"
    # wrk (a script copied in), ab (side files copied back); every container inspected while it runs
    proc, containers = cli_watching("--run-id", run_id, "run", "hello,low-compute")
    assert proc.returncode == 0, proc.stderr
    assert left_on_hosts() == {}, "containers or volumes left on the hosts after the run"
    assert {"server/bench-rust", "loadgen/bench-loadgen"} <= set(containers), sorted(containers)
    for key, info in containers.items():
        assert_least_privilege(key, info)
    # the loadgen's one writable place besides /tmp: the anonymous volume the repository files are copied into
    loadgen = containers["loadgen/bench-loadgen"]
    assert [(m["Type"], m["Destination"], m["RW"]) for m in loadgen["Mounts"]] == [("volume", "/bench", True)]
    raw = RESULTS / run_id / "raw"
    writable = [str(d) for d in [raw, *raw.rglob("*")] if d.is_dir() and d.stat().st_mode & 0o002]
    assert raw.is_dir() and not writable, f"world-writable folders: {writable}"
    results = json.loads((RESULTS / run_id / "results.json").read_text())

    records = {r["scenario"]: r for r in results["records"]}
    assert set(records) == {"hello", "low-compute"}
    for record in records.values():
        assert record["server"] == "rust" and record["requests"] > 0 and not record["failed"]
        attempt = record["attempts"][0]
        # the load crossed the veth links: every tool addressed the server's namespace
        assert all(f"http://{ADDRESS['server']}:28086/" in c for c in attempt["commands"]), attempt["commands"]
        for role in ("server", "loadgen"):  # CPU from each host's engine counters
            assert attempt["samples"][role]["cpu_s"] > 0, (role, attempt["samples"])
    assert records["hello"]["errors"]["total"] == 0
    ab_side_files = list((RESULTS / run_id / "raw").glob("**/percentiles.csv"))
    assert ab_side_files, "ab's percentile file was not copied back from the loadgen container"

    conditions = results["conditions"]
    assert conditions["runtime"] == "hosts"
    hosts = conditions["runtime_details"]["hosts"]
    plan = parse(demo_hosts(), environ={})
    for role, address in ADDRESS.items():
        assert hosts[role]["address"] == address
        assert hosts[role]["host_name"] == f"bench-h-{role}"
        assert hosts[role]["endpoint"] == f"ssh://root@{address}"
        assert hosts[role]["cpus"] == list(plan[role].cpus)
        assert hosts[role]["kernel"]
    path = conditions["runtime_details"]["path_loadgen_to_server"]
    assert (path["from"], path["to"]) == (ADDRESS["loadgen"], ADDRESS["server"])
    assert 0 < path["rtt_avg_ms"] < 10 and path["mtu"] == 1500
    placement = results["servers"]["rust"]["placement"]
    assert (placement["host"], placement["address"]) == ("server", ADDRESS["server"])
    assert placement["cpuset"] == ",".join(map(str, plan["server"].cpus)) and placement["network_mode"] == "host"
    summary = (RESULTS / run_id / "summary.md").read_text()
    assert f"**server host**: bench-h-server at {ADDRESS['server']}" in summary
    assert f"**loadgen to server**: {ADDRESS['loadgen']} to {ADDRESS['server']}" in summary


def test_an_image_is_sent_once_and_then_found_equal(local_engine):
    server = parse(demo_hosts(), environ={})["server"]
    if not image_id(IMAGE, None):
        pytest.skip(f"the local Docker engine has no {IMAGE} (make docker-images SERVERS=rust)")
    subprocess.run([*engine_socket("server"), "image", "rm", "--force", IMAGE], capture_output=True)
    assert image_id(IMAGE, server) is None
    assert send_image(IMAGE, server) is True
    assert image_id(IMAGE, server) == image_id(IMAGE, None)
    assert send_image(IMAGE, server) is False  # the same id there: nothing sent


def test_ctrl_c_during_a_load_leaves_nothing_on_any_host(local_engine):
    env = {**os.environ, "HOSTS": demo_hosts(), "PORTS": PORTS, "REPEAT": "1", "PROFILE": "quick", "SERVERS": "rust"}
    harness = subprocess.Popen(
        [sys.executable, "-m", "harness", "--run-id", f"test-hosts-int-{os.getpid()}", "run", "hello"],
        cwd=LOADGEN_DIR,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and harness.poll() is None:
        # the loadgen container exists once the first load (the warm-up) is about to run
        names = subprocess.run(
            [*engine_socket("loadgen"), "ps", "--format", "{{.Names}}"], capture_output=True, text=True
        ).stdout.split()
        if "bench-loadgen" in names:
            time.sleep(1.5)  # into the load
            break
        time.sleep(0.2)
    assert harness.poll() is None, harness.stdout.read()
    harness.send_signal(signal.SIGINT)
    out, _ = harness.communicate(timeout=180)
    print(out)
    assert harness.returncode == 130, out
    assert "interrupted" in out
    assert left_on_hosts() == {}, "containers or volumes left on the hosts after Ctrl-C"


def test_bench_across_three_hosts_measures_the_a_a_twin_and_reports_it(local_engine, short_bench):
    """`make bench` with HOSTS measures its A/A twin (TWIN=rust): rust's image once more on the server's host, in a
    container of its own on its own port, the same in every limit, and the report has its A/A result."""
    from harness.report import model
    from harness.results import records as results

    assert left_on_hosts() == {}
    run_id = f"test-hosts-twin-{os.getpid()}"
    proc, containers = cli_watching(argv=short_bench("--run-id", run_id, "bench"), env={"TWIN": "rust", "REPEAT": None})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "A/A control: rust is measured twice, as rust and rust-twin (port 28186)" in proc.stdout
    assert left_on_hosts() == {}, "containers or volumes left on the hosts after the run"
    rust, double = containers.get("server/bench-rust"), containers.get("server/bench-rust-twin")
    assert rust and double, sorted(containers)
    assert double["Image"] == rust["Image"] and double["Config"]["Cmd"] == rust["Config"]["Cmd"]
    for key in (
        "CpusetCpus",
        "NanoCpus",
        "Memory",
        "Ulimits",
        "CapDrop",
        "SecurityOpt",
        "ReadonlyRootfs",
        "Tmpfs",
        "PidsLimit",
        "NetworkMode",
    ):
        assert double["HostConfig"][key] == rust["HostConfig"][key], key
    env_of = [dict(e.split("=", 1) for e in c["Config"]["Env"]) for c in (rust, double)]
    assert {k for k in env_of[0].keys() | env_of[1].keys() if env_of[0].get(k) != env_of[1].get(k)} == {
        "PORT",
        "H2C_PORT",
    }
    assert env_of[1]["PORT"] == "28186" and env_of[1]["HOST"] == ADDRESS["server"]
    assert_least_privilege("server/bench-rust-twin", double)

    run = results.load(RESULTS / run_id / "results.json")
    assert run.conditions["runtime"] == "hosts" and run.twin_of("rust-twin") == "rust"
    assert run.servers["rust-twin"]["placement"]["host"] == "server"
    records = [r for r in run.records if r.requests]
    assert {(r.server, r.scenario) for r in records} == {("rust", "hello"), ("rust-twin", "hello")}
    assert all(
        f"http://{ADDRESS['server']}:28186/" in c
        for r in records
        if r.server == "rust-twin"
        for a in r.attempts
        for c in a.commands
    )
    result = model.aa_result(model.build(run))
    assert result and (result["server"], result["twin"], result["groups"]) == ("rust", "rust-twin", 1), result
