"""Every variable the Makefile exports (and those the harness reads beside them), each with its bad values (issue 34,
"Every variable, every bad value"): the real command line (`python -m harness`, as `make` runs it) says one line
naming the variable and the value and what to do, exits with status 2, and starts nothing: no server, no lock, no
run folder, no traceback. An empty value is an unset one (the Makefile's way to unset a variable): accepted.

The command is `run hello` on rust: a regression would start rust on its test port below (the range of this file)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest
from ports import free_port

from harness.basics.machine import port_owner
from harness.basics.paths import REPO
from harness.config.manifest import SERVERS_DIR_VAR
from harness.results.store import RESULTS
from harness.runtime import State

pytestmark = pytest.mark.integration  # real servers, load tools or the harness's command line on loopback

LOADGEN = REPO / "loadgen"
RUST_PORT, NGINX_PORT = free_port(), free_port()  # the operating system's: a regression would start rust there
PORTS = f"rust={RUST_PORT} nginx={NGINX_PORT}"
BASE = {"RUNTIME": "local", "SERVERS": "rust", "PORTS": PORTS}
COMMAND = ["run", "hello"]
DEFAULT_SERVER_CPU = str(min(os.sched_getaffinity(0)))  # where the CPU plan puts the server on this machine
OUTSIDE_CPU = str(max(os.sched_getaffinity(0)) + 1)
EMPTY, BLANK = "", "  "

# variable: [(bad value, other variables set with it)]; every value here must be refused
BAD: dict[str, list[tuple[str, dict[str, str]]]] = {
    "SERVERS": [(BLANK, {}), ("nosuch", {}), ("rust,nosuch", {}), ("-1", {})],
    "PROFILE": [(BLANK, {}), ("fast", {}), ("1", {})],
    "RUNTIME": [(BLANK, {}), ("podman", {}), ("0", {})],
    "PORTS": [
        (BLANK, {}),
        ("garbage", {}),
        ("rust=", {}),
        ("rust=abc", {}),
        ("rust=-1", {}),
        ("rust=0", {}),
        ("rust=70000", {}),
        ("nosuch=19788", {}),
        ("rust=65000", {}),
        (f"rust={RUST_PORT} rust={RUST_PORT + 3}", {}),
    ],
    "REPEAT": [(BLANK, {}), ("abc", {}), ("-1", {}), ("0", {}), ("1.5", {}), ("99999999999", {})],
    "ORDER": [(BLANK, {}), ("random", {}), ("1", {})],
    "ROUNDS": [(BLANK, {}), ("abc", {}), ("-1", {}), ("0", {})],
    "CPUS_SERVER": [
        (BLANK, {}),
        (",", {}),
        ("abc", {}),
        ("-1", {}),
        ("3-1", {}),
        (OUTSIDE_CPU, {}),
        ("0", {"CPUS_LOADGEN": "0"}),
    ],
    "CPUS_LOADGEN": [(BLANK, {}), ("x", {}), (OUTSIDE_CPU, {}), ("1", {"CPUS_SERVER": "0-1"})],
    "CPUS_UPSTREAM": [(BLANK, {}), ("x", {}), (OUTSIDE_CPU, {}), ("0", {"CPUS_SERVER": "0"}), (DEFAULT_SERVER_CPU, {})],
    "SLO_P99_MS": [(BLANK, {}), ("fast", {}), ("-5", {}), ("0", {}), ("inf", {}), ("nan", {})],
    "HOSTS": [
        (BLANK, {}),
        ("garbage", {}),
        ("server=", {}),
        ("nosuch=ssh://root@10.0.0.1", {}),
        ("server=ssh://root@10.0.0.1", {}),
        ("server=tcp://10.0.0.1:2375 loadgen=ssh://root@10.0.0.2", {}),
        ("server=ssh://root@10.0.0.1,cpus=-1 loadgen=ssh://root@10.0.0.2", {}),
    ],
    "HOSTS_INSECURE_TCP": [(BLANK, {}), ("yes", {}), ("2", {})],
    "TWIN": [(BLANK, {}), ("nosuch", {})],
    "BENCH_MEM_LIMIT_RUST": [(BLANK, {}), ("lots", {}), ("-1", {}), ("0", {}), ("1k", {})],
    "BENCH_MEM_LIMIT_NOSUCH": [("512m", {})],
    "LOADGEN_PROCESSES": [(BLANK, {}), ("abc", {}), ("0", {}), ("-1", {}), ("1.5", {})],
    "ASSUME_CPUS": [(BLANK, {}), ("abc", {}), ("1", {}), ("-2", {})],
    "ASSUME_SMT": [(BLANK, {}), ("abc", {}), ("0", {})],
    "FORMAT": [(BLANK, {}), ("xml", {}), ("1", {})],
    "CPU_IDLE": [(BLANK, {}), ("off", {}), ("halt", {}), ("1", {})],
}
CASES = [(name, value, extra) for name, values in BAD.items() for value, extra in values]
VARIABLES = sorted({name.removesuffix("_RUST").removesuffix("_NOSUCH") for name in BAD})  # BENCH_MEM_LIMIT_ once


def clean_environment(**values: str) -> dict[str, str]:
    """This process's environment without the developer's own harness variables, plus `values`."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in BAD
        and not k.startswith("BENCH_MEM_LIMIT_")
        and k not in (SERVERS_DIR_VAR, "DOCKER_TLS_VERIFY", "DOCKER_CERT_PATH")
    }
    return {**env, "COLUMNS": "80", **values}


def listening() -> list[int]:
    ports = (RUST_PORT, NGINX_PORT, RUST_PORT + 1000, NGINX_PORT + 1000)  # and their h2c ports
    return [port for port in ports if port_owner("127.0.0.1", port)]


def results_folders() -> set[str]:
    return {p.name for p in RESULTS.iterdir()} if RESULTS.is_dir() else set()


@pytest.mark.parametrize(
    "name, value, extra", CASES, ids=[f"{n}={v!r}{' ' + str(e) if e else ''}" for n, v, e in CASES]
)
def test_a_bad_value_is_one_line_and_starts_nothing(name, value, extra):
    state = State().path
    state_before, folders_before = state.read_bytes() if state.exists() else None, results_folders()
    done = subprocess.run(
        [sys.executable, "-m", "harness", *COMMAND],
        cwd=LOADGEN,
        env=clean_environment(**{**BASE, **extra, name: value}),
        capture_output=True,
        text=True,
        timeout=120,
    )
    lines = (done.stdout + done.stderr).strip().splitlines()
    assert done.returncode == 2, lines
    assert "Traceback" not in done.stdout + done.stderr, done.stderr
    assert len(lines) == 1 and lines[0].startswith("error: "), lines  # said nothing else: started nothing
    assert name in lines[0] and (repr(value) in lines[0] or value.strip() in lines[0]), lines[0]
    assert all(other in lines[0] for other in extra), lines[0]  # overlapping CPUs: both variables named
    assert not listening() and results_folders() == folders_before
    assert (state.read_bytes() if state.exists() else None) == state_before


def test_an_empty_value_is_an_unset_one():
    """`make list TWIN= PORTS= ...`: every variable empty is every variable at its default."""
    done = subprocess.run(
        [sys.executable, "-m", "harness", "list"],
        cwd=LOADGEN,
        env=clean_environment(**{name: EMPTY for name in BAD}),
        capture_output=True,
        text=True,
        timeout=120,
    )
    # an error is a line starting "error:" (basics.messages); a scenario's description may name errors it counts
    said = done.stdout + done.stderr
    assert done.returncode == 0 and not re.search(r"^error:", said, re.MULTILINE), said


def test_the_counts_of_variables_and_values_tried():
    """The closing note of issue 34 gives these counts; they change only with the table."""
    print(json.dumps({"variables": len(VARIABLES), "bad values": len(CASES)}))
    assert (len(VARIABLES), len(CASES)) == (20, 92)


def test_under_hosts_a_server_gets_its_bench_mem_limit(monkeypatch):
    """BENCH_MEM_LIMIT_RUST=512m under HOSTS: rust's container on its host gets 512m, as under one host (HOSTS
    started every server with 3g, whatever the variable said). No engine is asked: only the `docker run` made."""
    from harness.config import environment
    from harness.config.manifest import discover
    from harness.containers.service import Place
    from harness.containers.several_hosts import HostsRuntime

    servers = discover()
    config = environment.read({"BENCH_MEM_LIMIT_RUST": "512m"}, servers)
    runtime = HostsRuntime.__new__(HostsRuntime)  # without __init__: it would ask the hosts' engines
    runtime.memory_limits = config.memory_limits
    ran = []
    monkeypatch.setattr(runtime, "docker", lambda place, *args, **kw: ran.append(args), raising=False)
    monkeypatch.setattr(runtime, "_static_volumes", lambda server, place: [], raising=False)
    runtime._start_server(
        servers["rust"], Place(("--host", "ssh://x"), "server", "ssh://x", "10.0.0.1"), [0, 1], 19786, {}
    )
    options = list(ran[0])
    assert options[options.index("--memory") + 1] == "512m", options


def test_a_moved_server_keeps_the_upstream_off_its_cpus():
    """CPUS_SERVER=1 CPUS_LOADGEN=0 on two CPUs: the upstream's default (the CPU after the server's share) was the
    server's own CPU 1; it shares the load generator's instead, as the 2-CPU default plan does."""
    from harness.basics.cpus import plan

    moved = plan((0, 1), {"server": "1", "loadgen": "0"})
    assert moved.upstream == (0,) and not set(moved.upstream) & set(moved.server)
