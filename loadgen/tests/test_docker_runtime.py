"""The Docker runtime: unit tests of the compose file and the runtime's plumbing (always run), and the integration test
of the docker path (skipped, with the reason, when no Docker engine answers; failed instead under CI=true): base images
built offline when missing, images built from the artifacts of `make build`, nginx + rust + node up through the CLI
with RUNTIME=docker, their contract checked, every container's least privilege read back from the engine and the
kernel (the loadgen's while a command runs tools in it), a few seconds of ab, wrk and httperf each (no world-writable
folder under raw/), down; no container left, the server images removed (the base images bench/*:bookworm stay). Then
no healthcheck in a server container, and a short `bench` that measures its A/A twin. CI runs it from .ci/docker.sh."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from harness import containers as dk
from harness.basics.cpus import plan
from harness.basics.machine import nofile_limit
from harness.config.manifest import REPO, discover, twin
from harness.containers import by_hand as docker_cli
from harness.containers import compose, engine, images, service
from harness.containers import one_host as docker_runtime
from harness.containers.one_host import DockerRuntime
from harness.runtime import RuntimeFailure, State
from harness.servers.runtime_choice import get_runtime

LOADGEN_DIR = Path(__file__).resolve().parents[1]
SERVERS = ["nginx", "rust", "node"]
# away from the default ports, so a local run on this machine is not in the way
PORTS = "nginx=28000 rust=28086 node=28080"


# ------------------------------------------------------------------------------------------------------ unit tests


def test_compose_file_has_one_host_network_service_per_server_and_no_bridge():
    servers = discover()
    text = compose.render_compose(servers)
    services = re.findall(r"^  ([a-z0-9_.-]+):$", text.split("\nservices:\n", 1)[1], flags=re.M)
    assert services == ["loadgen", "nginx", *[n for n in servers if n != "nginx"]]
    assert "networks:" not in text and "ports:" not in text  # no bridge network, nothing published
    assert text.count("network_mode: host") == 1 and text.count("<<: *limits") == 3  # loadgen, server, upstream
    for name in servers:
        block = text.split(f"\n  {name}:\n", 1)[1].split("\n\n", 1)[0]
        assert f"container_name: bench-{name}" in block
        assert "<<: *server" in block or "<<: *upstream" in block
        # by hand the upstream is started first; nothing waits on a check run inside a container
        assert ("depends_on: [nginx]" in block) == (servers[name].needs_upstream and name != "nginx")
    # no healthcheck: each would run a process in a server's container, on its CPUs, during the measurements, unsampled
    assert "healthcheck" not in text.replace("No healthcheck:", "") and "service_healthy" not in text


def test_compose_file_takes_every_cpu_value_from_the_harness():
    text = compose.render_compose(discover())
    assert re.findall(r"^\s+cpuset: \"\$\{(\w+):\?", text, flags=re.M) == [
        "BENCH_SERVER_CPUSET",
        "BENCH_UPSTREAM_CPUSET",
        "BENCH_LOADGEN_CPUSET",
    ]
    assert re.findall(r"^\s+cpus: \"\$\{(\w+):\?", text, flags=re.M) == ["BENCH_SERVER_CPUS", "BENCH_UPSTREAM_CPUS"]
    assert 'nofile: {soft: "${BENCH_NOFILE:-20000}", hard: "${BENCH_NOFILE:-20000}"}' in text
    assert not re.search(r"cpus: \"?\d", text) and not re.search(r"cpuset: \"?\d", text)


def test_every_container_runs_with_least_privilege():
    servers = discover()
    text = compose.render_compose(servers)
    limits = text.split("\nx-limits: &limits\n", 1)[1].split("\n\n", 1)[0]  # every service merges it
    for line in (
        "cap_drop: [ALL]",
        'security_opt: ["no-new-privileges:true"]',
        "read_only: true",
        'tmpfs: ["/tmp:rw,exec,nosuid,nodev,size=64m,mode=1777"]',
        f"pids_limit: {service.PIDS_LIMIT}",
    ):
        assert f"\n  {line}" in limits
    blocks = {name: text.split(f"\n  {name}:\n", 1)[1].split("\n\n", 1)[0] for name in [images.LOADGEN, *servers]}
    for name, block in blocks.items():  # none overrides what it merged (the loadgen sets only its user)
        keys = set(
            re.findall(
                r"^    (cap_drop|cap_add|read_only|tmpfs|pids_limit|privileged|security_opt|user):", block, flags=re.M
            )
        )
        assert keys == ({"user"} if name == images.LOADGEN else set()), (name, keys)
    # the engine's default seccomp profile everywhere: x-limits' security_opt is the only one
    assert "seccomp=" not in text and text.count("security_opt:") == 1 and "privileged:" not in text
    # RUN_DIR is on the tmpfs, and each server's memory limit is its own variable
    assert all('RUN_DIR: "/tmp/run"' in blocks[name] for name in servers)
    assert all(
        f'mem_limit: "${{{compose.memory_var(server)}:-{service.SERVER_MEMORY}}}"' in blocks[name]
        for name, server in servers.items()
    )
    assert compose.memory_var(servers["rust"]) == "BENCH_MEM_LIMIT_RUST"


def test_compose_env_follows_the_cpu_plan():
    env = compose.compose_env(plan((0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11)))
    assert (env["BENCH_SERVER_CPUSET"], env["BENCH_SERVER_CPUS"], env["BENCH_SERVER_CORES"]) == ("0,1,2,3", "4", "4")
    assert (env["BENCH_UPSTREAM_CPUSET"], env["BENCH_LOADGEN_CPUSET"]) == ("4", "5,6,7,8,9,10,11")
    assert env["BENCH_NOFILE"] == str(nofile_limit())
    two = compose.compose_env(plan((0, 1)))
    assert (two["BENCH_SERVER_CPUSET"], two["BENCH_LOADGEN_CPUSET"], two["BENCH_UPSTREAM_CPUSET"]) == ("0", "1", "1")


def test_families_and_image_names():
    servers = discover()
    assert {n: images.family(s) for n, s in servers.items()} == {
        "akka": "jvm",
        "finagle": "jvm",
        "nginx": "nginx",
        "node": "node",
        "express": "node",
        "pekko": "jvm",
        "play": "jvm",
        "rust": "native",
        "socko": "jvm",
        "spray": "jvm",
        "calibrated": "native",
    }
    assert images.server_image(servers["rust"]) == "bench/server-rust:latest"
    # an A/A twin runs its server's image (the same bytes) and its server's compose service, on its own port
    double = twin(servers["nginx"], {8000, 9000})
    assert (double.name, images.server_image(double), images.family(double)) == (
        "nginx-twin",
        "bench/server-nginx:latest",
        "nginx",
    )
    assert (compose.service_of(double), compose.port_var(double)) == ("nginx", "BENCH_PORT_NGINX")
    assert images.app_dir(servers["express"]) == "/srv/node"
    assert images.static_mounts(servers["nginx"]) == ["static"]


def test_tool_paths_map_into_the_loadgen_container():
    from harness.results.store import RESULTS

    assert service.container_path(str(RESULTS / "r1/raw/x/percentiles.csv")) == "/results/r1/raw/x/percentiles.csv"
    assert (
        service.container_path(str(REPO / "loadgen/harness/tools/wrk_report.lua"))
        == "/bench/loadgen/harness/tools/wrk_report.lua"
    )
    assert service.container_path("http://127.0.0.1:8000/") == "http://127.0.0.1:8000/"
    assert service.container_path(str(REPO) + "x/y") == str(REPO) + "x/y"


def test_the_runtime_changes_nothing_until_it_first_starts_or_stops_a_container(monkeypatch):
    done = []
    monkeypatch.setattr(docker_runtime, "engine_answers", lambda: (True, "an engine (test)"))
    monkeypatch.setattr(docker_runtime, "compose_command", lambda: ["docker", "compose"])
    monkeypatch.setattr(docker_runtime, "ensure_compose_file", lambda servers: done.append("compose file") or False)
    monkeypatch.setattr(DockerRuntime, "_remove_unknown_containers", lambda self: done.append("leftovers removed"))
    cpu_plan = plan((0, 1, 2, 3))
    runtime = DockerRuntime(cpu_plan)
    assert runtime.plan is cpu_plan and not done  # the session's plan; no file written, no container removed
    runtime.prepare()
    runtime.prepare()
    assert done == ["compose file", "leftovers removed"]


@pytest.mark.integration
def test_auto_chooses_local_without_an_engine_and_says_why(monkeypatch, capsys):
    monkeypatch.setattr(
        dk, "engine_answers", lambda timeout=10: (False, "no Docker engine answers `docker info` (test)")
    )
    runtime = get_runtime("auto", plan((0, 1)))
    assert runtime.name == "local"
    assert "runtime: local (RUNTIME=auto: no Docker engine answers" in capsys.readouterr().out
    with pytest.raises(RuntimeFailure, match="unknown runtime"):
        get_runtime("podman", plan((0, 1)))


# -------------------------------------------------------------------------------------------------- integration

ENGINE, WHY = engine.engine_answers()


def skip_or_fail(reason: str) -> None:
    """No engine: the test is skipped, but fails under CI (CI=true: .ci/docker.sh has started one)."""
    if os.environ.get("CI") == "true":
        pytest.fail(reason, pytrace=False)
    pytest.skip(reason)


def _compose_available() -> str | None:
    try:
        engine.compose_command()
        return None
    except RuntimeFailure as exc:
        return str(exc)


def _docker(*args: str) -> str:
    return subprocess.run(["docker", *args], capture_output=True, text=True, check=True).stdout


def _cli(*args: str, env: dict | None = None, timeout: float = 900) -> subprocess.CompletedProcess:
    full_env = {**os.environ, "RUNTIME": "docker", "PORTS": PORTS, "REPEAT": "1", "PROFILE": "quick", **(env or {})}
    full_env.pop("SERVERS", None)
    proc = subprocess.run(
        [sys.executable, "-m", "harness", *args],
        cwd=LOADGEN_DIR,
        env=full_env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    print(proc.stdout, proc.stderr)
    return proc


def _status(pid: int) -> dict[str, str]:
    """/proc/<pid>/status: how the kernel applied the container's privileges to its main process."""
    with open(f"/proc/{pid}/status") as status:
        return {k: v.strip() for k, v in (line.split(":", 1) for line in status)}


def _cli_watching(container: str, *args: str) -> tuple[subprocess.CompletedProcess, dict | None]:
    """`_cli`, and `docker inspect` of `container` as soon as the command has started it (None if it never ran), with
    its main process's status then (key "status": the container is gone when the command ends)."""
    full_env = {**os.environ, "RUNTIME": "docker", "PORTS": PORTS, "REPEAT": "1", "PROFILE": "quick"}
    full_env.pop("SERVERS", None)
    child = subprocess.Popen(
        [sys.executable, "-m", "harness", *args],
        cwd=LOADGEN_DIR,
        env=full_env,
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    seen = None
    while seen is None and child.poll() is None:
        found = subprocess.run(["docker", "inspect", container], capture_output=True, text=True)
        info = json.loads(found.stdout)[0] if found.returncode == 0 else None
        if info and info["State"]["Running"]:
            try:
                seen = {**info, "status": _status(info["State"]["Pid"])}
            except OSError:
                pass  # ended between the two: asked again
        else:
            time.sleep(0.2)
    out, err = child.communicate(timeout=900)
    print(out, err)
    return subprocess.CompletedProcess(child.args, child.returncode, out, err), seen


def assert_least_privilege(info: dict) -> None:
    """A container as the engine applied it: no capability, none to gain, the engine's default seccomp profile (where
    the engine has one), a read-only root, not root; and so its main process, as the kernel sees it."""
    name, host, config = info["Name"], info["HostConfig"], info["Config"]
    assert not host["CapAdd"] and "ALL" in (host["CapDrop"] or []), (name, host["CapAdd"], host["CapDrop"])
    options = host["SecurityOpt"] or []
    assert "no-new-privileges:true" in options and not any(o.startswith("seccomp") for o in options), (name, options)
    assert host["ReadonlyRootfs"] is True and not host["Privileged"], name
    assert config["User"] not in ("", "0", "root") and not config["User"].startswith(("0:", "root:")), (
        name,
        config["User"],
    )
    fields = info.get("status") or _status(info["State"]["Pid"])
    assert int(fields["CapEff"], 16) == 0 and fields["NoNewPrivs"] == "1", (name, fields["CapEff"])
    if "name=seccomp" in _docker("info", "--format", "{{json .SecurityOptions}}"):
        assert fields["Seccomp"] == "2", (name, fields["Seccomp"])  # a filter: the engine's default profile
    assert int(fields["Uid"].split()[0]) != 0, (name, fields["Uid"])


def assert_nothing_world_writable(folder: Path) -> None:
    assert folder.is_dir(), folder
    writable = [str(d) for d in [folder, *folder.rglob("*")] if d.is_dir() and d.stat().st_mode & 0o002]
    assert not writable, f"world-writable folders: {writable}"


def _project_containers() -> list[str]:
    return _docker(
        "ps", "-a", "--filter", f"label=com.docker.compose.project={compose.PROJECT}", "--format", "{{.Names}}"
    ).split() + [
        n for n in _docker("ps", "-a", "--format", "{{.Names}}").split() if n == compose.container_name(images.LOADGEN)
    ]


@pytest.fixture(scope="module")
def docker_images():
    if not ENGINE:
        skip_or_fail(f"the Docker runtime's integration test needs a Docker engine: {WHY}")
    reason = _compose_available()
    if reason:
        skip_or_fail(reason)
    alive = [name for name, entry in State().load().items() if psutil.pid_exists(entry.pid)]
    if alive:
        pytest.skip(f"servers are up ({', '.join(alive)}; .run/state.json is shared): make down first")
    servers = discover()
    families = {images.family(servers[n]) for n in SERVERS} | {images.LOADGEN}
    if any(engine.image_labels(images.runtime_image(f)) is None for f in families):
        if os.getuid() != 0 and engine.image_labels("bench/base:bookworm") is None:
            pytest.skip("the base images are missing and building them (debootstrap) needs root: sudo make base-images")
        proc = subprocess.run([str(images.DOCKER_DIR / "base-images.sh")], env={**os.environ, "OFFLINE": "1"})
        assert proc.returncode == 0, "docker/base-images.sh failed (OFFLINE=1)"
    for name in SERVERS:
        for artifact in servers[name].artifacts:
            if not (servers[name].folder / artifact).exists():
                pytest.skip(f"{name}'s artifact {artifact} is missing: make build")
    before = set(_docker("images", "-q", "--no-trunc").split())
    images.build_images([servers[n] for n in SERVERS])
    yield servers
    _cli("down")
    docker_cli.main(["down"])
    server_images = [f"bench/server-{n}:latest" for n in SERVERS]
    subprocess.run(["docker", "rmi", *server_images], capture_output=True)
    leftover = set(_docker("images", "-q", "--no-trunc").split()) - before
    assert not leftover, f"images left behind by the test: {leftover}"


@pytest.mark.integration
def test_docker_runtime_end_to_end(docker_images):
    servers = docker_images
    cpu_plan = plan()

    # up: through the CLI, every server in its container with the cpuset of the plan, read back
    proc = _cli("--servers", " ".join(SERVERS), "up")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    state = State().load()
    assert set(SERVERS) <= set(state)
    for name in SERVERS:
        entry, info = state[name], json.loads(_docker("inspect", f"bench-{name}"))[0]
        assert entry.runtime == "docker" and entry.container == f"bench-{name}"
        expected = list(cpu_plan.upstream if name == "nginx" else cpu_plan.server)
        assert entry.cpus == expected and info["HostConfig"]["CpusetCpus"] == ",".join(map(str, expected))
        assert info["HostConfig"]["NanoCpus"] == len(expected) * 10**9
        assert info["HostConfig"]["NetworkMode"] == "host"
        assert info["HostConfig"]["Memory"] > 0
        assert {"Name": "nofile", "Soft": nofile_limit(), "Hard": nofile_limit()} in info["HostConfig"]["Ulimits"]
        assert info["Config"]["User"] == "bench" and info["State"]["Pid"] == entry.pid
        # least privilege: no capability, no privilege to gain, a read-only root but for /tmp, a process limit
        assert info["HostConfig"]["CapDrop"] == ["ALL"] and not info["HostConfig"]["CapAdd"]
        assert info["HostConfig"]["SecurityOpt"] == ["no-new-privileges:true"]
        assert info["HostConfig"]["ReadonlyRootfs"] is True and list(info["HostConfig"]["Tmpfs"]) == ["/tmp"]
        assert info["HostConfig"]["PidsLimit"] == service.PIDS_LIMIT
        with open(f"/proc/{entry.pid}/status") as status:
            fields = dict(line.split(":", 1) for line in status)
        assert int(fields["CapEff"], 16) == 0 and fields["NoNewPrivs"].strip() == "1"  # as the kernel applies it
        # no check runs in the container (its image has none either): readiness is the harness's GET /id, from here
        assert info["Config"].get("Healthcheck") is None and "Health" not in info["State"], info["Config"]
        assert psutil.Process(entry.pid).uids().real != 0  # not root
        assert entry.port == int(dict(p.split("=") for p in PORTS.split())[name])
        assert_least_privilege(info)

    # ping: the contract, byte for byte, against the containers
    proc = _cli("--servers", " ".join(SERVERS), "ping")
    assert proc.returncode == 0, proc.stdout

    # a few seconds of each tool, in the loadgen container, on rust and nginx
    from harness.results.store import RESULTS

    # (and the tools the project builds, run from the repository the loadgen container mounts: oha, Gatling on its JRE)
    for scenario, tool in (
        ("hello", "wrk"),
        ("backend", "ab"),
        ("tweets", "httperf"),
        ("latency", "oha"),
        ("gatling-backend", "gatling"),
    ):
        run_id = f"docker-test-{scenario}-{os.getpid()}"  # a run id names one run: never reused
        # the loadgen container, inspected while the command runs its tools in it (it is removed at the end)
        proc, loadgen = _cli_watching(
            compose.container_name(images.LOADGEN), "--servers", "rust", "--run-id", run_id, "run", scenario
        )
        assert proc.returncode == 0, proc.stdout
        assert loadgen is not None, "the loadgen container was never seen running"
        assert_least_privilege(loadgen)
        assert loadgen["Config"]["User"] == compose.compose_env(cpu_plan)["BENCH_LOADGEN_USER"]
        assert_nothing_world_writable(RESULTS / run_id / "raw")  # the tools' side-file folders: the loadgen user's
        results = json.loads((RESULTS / run_id / "results.json").read_text())
        assert results["conditions"]["runtime"] == "docker"
        assert results["servers"]["rust"]["cpus"] == list(cpu_plan.server)
        records = [r for r in results["records"] if r["tool"] == tool]
        assert records and all(r["requests"] > 0 and not r["failed"] and r["errors"]["total"] == 0 for r in records)
        if tool == "wrk":  # seconds long: the sampler saw the tool itself (not the docker client: ~0 CPU)
            assert all(r["samples"]["loadgen"]["cpu_util"] > 0.05 for r in records)
        if tool == "oha":  # seven steps offered at shares of the wrk warm-up's rate, and a capacity from them
            assert len(records) == 7 and all(r["details"]["offered_rps"] > 0 for r in records)
            assert results["servers"]["rust"]["capacity"]["latency"]["slo_p99_ms"] == 10.0
        if tool == "gatling":
            assert [r["run"] for r in records] == ["ramp", "at-once", "constant"]
            assert all(r["details"]["gatling"]["ko"] == 0 for r in records)
        assert compose.container_name(images.LOADGEN) not in _docker("ps", "--format", "{{.Names}}").split()

    # down: nothing left
    proc = _cli("down")
    assert proc.returncode == 0, proc.stdout
    assert not _project_containers()
    assert not State().load()

    # by hand, compose honours depends_on: nginx is started with rust (the harness itself orders the starts, waits for
    # GET /id and passes --no-deps)
    runtime = DockerRuntime(cpu_plan)
    ports = dict(p.split("=") for p in PORTS.split())
    overrides = {
        compose.port_var(servers["nginx"]): ports["nginx"],
        compose.port_var(servers["rust"]): ports["rust"],
        "BENCH_UPSTREAM_URL": f"http://127.0.0.1:{ports['nginx']}/weather.json",
    }
    try:
        runtime.compose_run("up", "-d", "rust", overrides=overrides, timeout=300)
        assert json.loads(_docker("inspect", "bench-nginx"))[0]["State"]["Running"]
        assert json.loads(_docker("inspect", "bench-rust"))[0]["State"]["Running"]
    finally:
        runtime.compose_run("down", "-t", "15", overrides=overrides, check=False)
    assert not _project_containers()


@pytest.mark.integration
def test_no_check_runs_inside_a_server_container(docker_images):
    """A healthcheck is a process the engine starts in the server's container, on the server's CPUs (every 10 s, it
    was), outside the measurements' samples: none is configured, in the compose file or the image, so the engine runs
    none (it keeps no health state); the harness asks GET /id itself, from the host."""
    proc = _cli("--servers", "nginx rust", "--ports", "nginx=23600 rust=23686", "up")
    try:
        assert proc.returncode == 0, proc.stdout + proc.stderr
        for name in ("bench-nginx", "bench-rust"):
            info = json.loads(_docker("inspect", name))[0]
            assert info["State"]["Running"], name
            assert info["Config"].get("Healthcheck") is None, (name, info["Config"].get("Healthcheck"))
            assert "Health" not in info["State"], (name, info["State"].get("Health"))
    finally:
        assert _cli("--ports", "nginx=23600 rust=23686", "down").returncode == 0
    assert not _project_containers()


def _inspect_while_running(
    argv: list[str], env: dict, containers: list[str]
) -> tuple[subprocess.CompletedProcess, dict[str, dict]]:
    """Runs `argv`, and `docker inspect`s each of `containers` once it runs (with its main process's status then)."""
    child = subprocess.Popen(argv, cwd=LOADGEN_DIR, env=env, text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    seen: dict[str, dict] = {}
    while child.poll() is None:
        for name in (c for c in containers if c not in seen):
            found = subprocess.run(["docker", "inspect", name], capture_output=True, text=True)
            info = json.loads(found.stdout)[0] if found.returncode == 0 else None
            if info and info["State"]["Running"]:
                try:
                    seen[name] = {**info, "status": _status(info["State"]["Pid"])}
                except OSError:
                    pass  # ended between the two: asked again
        time.sleep(0.2)
    out, err = child.communicate(timeout=900)
    print(out, err)
    return subprocess.CompletedProcess(argv, child.returncode, out, err), seen


SAME_IN_TWINS = (
    "CpusetCpus",
    "NanoCpus",
    "Memory",
    "Ulimits",
    "CapDrop",
    "CapAdd",
    "SecurityOpt",
    "ReadonlyRootfs",
    "Tmpfs",
    "PidsLimit",
    "NetworkMode",
    "Binds",
)


@pytest.mark.integration
def test_bench_under_docker_measures_the_a_a_twin_and_reports_it(docker_images, short_bench):
    """`make bench` under RUNTIME=docker measures its A/A twin (TWIN=rust): rust's image and compose service once more,
    in a container of its own on its own port, the same in every limit, and the report has its A/A result. As `make
    bench` does by default, each CPU's speed is read beside every attempt (CPU_METER=1), from this machine."""
    from harness.report import model
    from harness.results import records as results
    from harness.results.store import RESULTS

    run_id = f"docker-test-twin-{os.getpid()}"
    # ports of this test's own (h2c +1000), below the ephemeral ports: 28086's h2c port is test_tool_plugin.py's
    env = {
        **os.environ,
        "RUNTIME": "docker",
        "PORTS": "nginx=23600 rust=23686",
        "TWIN": "rust",
        "SERVERS": "rust",
        "PROFILE": "quick",
        "CPU_METER": "1",
    }
    env.pop("REPEAT", None)
    proc, seen = _inspect_while_running(
        short_bench("--run-id", run_id, "bench"), env, ["bench-rust", "bench-rust-twin"]
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "A/A control: rust is measured twice, as rust and rust-twin (port 23786)" in proc.stdout
    assert set(seen) == {"bench-rust", "bench-rust-twin"}, f"running containers seen: {sorted(seen)}"
    rust, double = seen["bench-rust"], seen["bench-rust-twin"]
    assert double["Image"] == rust["Image"] and double["Config"]["Cmd"] == rust["Config"]["Cmd"]
    for key in SAME_IN_TWINS:
        assert double["HostConfig"][key] == rust["HostConfig"][key], key
    env_of = {name: dict(e.split("=", 1) for e in seen[name]["Config"]["Env"]) for name in seen}
    differ = {
        k
        for k in env_of["bench-rust"].keys() | env_of["bench-rust-twin"].keys()
        if env_of["bench-rust"].get(k) != env_of["bench-rust-twin"].get(k)
    }
    assert differ == {"PORT", "H2C_PORT"} and env_of["bench-rust-twin"]["PORT"] == "23786", differ
    labels = double["Config"]["Labels"]  # so `make down` and a later command find it, as they find rust's
    assert labels["com.docker.compose.project"] == compose.PROJECT
    assert labels["com.docker.compose.project.working_dir"] == str(REPO)
    assert double["Config"].get("Healthcheck") is None
    assert_least_privilege(double)

    run = results.load(RESULTS / run_id / "results.json")
    assert run.conditions["runtime"] == "docker"
    assert run.twin_of("rust-twin") == "rust"
    assert {(r.server, r.scenario) for r in run.records if r.requests} == {("rust", "hello"), ("rust-twin", "hello")}
    taken = [a for r in run.records for a in r.attempts if a.measured]
    assert taken and all(0 < (a.samples[role].cpu_speed or 0) <= 1 for a in taken for role in ("server", "loadgen"))
    result = model.aa_result(model.build(run))
    assert result and (result["server"], result["twin"], result["groups"]) == ("rust", "rust-twin", 1), result
    assert not _project_containers() and not State().load()
