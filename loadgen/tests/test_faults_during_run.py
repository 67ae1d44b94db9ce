"""Faults in the middle of a run, on real servers on loopback (docs/measuring.md): a server
killed with SIGKILL during an attempt (local and Docker runtimes; rust dies, finagle, a JVM server, is measured), and a
server that hangs (SIGSTOP) for longer than its load may take. The harness runs as the command line in a subprocess,
reading this test's own scenarios (short loads). Every test ends with no process, container or listener left on its
ports. Servers start on fixed ports: run this file under the integration lock (tests/test_cli_integration.py)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from harness.basics.machine import port_owner, wait_until
from harness.basics.paths import RESULTS
from harness.config.manifest import discover
from harness.containers import engine
from harness.measuring.deadlines import DEADLINE_CEILING_S, DEADLINE_FLOOR_S, INTERRUPT_GRACE_S, deadline_s
from harness.results import records as results
from harness.runtime import State
from harness.runtime.local import LocalRuntime
from harness.runtime.protocol import exit_reason
from harness.tools import TOOLS, LoadSpec

pytestmark = pytest.mark.integration  # real servers, load tools or the harness's command line on loopback

LOADGEN = Path(__file__).resolve().parents[1]
FIXTURES = Path(__file__).parent / "fixtures"
LOCAL_PORTS = {"rust": 31086, "finagle": 31084, "nginx": 31000}  # away from the defaults and from other tests'
# below 31768: the h2c ports (1000 above) must stay under the ephemeral range (32768-60999), where a client
# socket of an earlier test (TIME_WAIT) would keep them from being bound
DOCKER_PORTS = {"rust": 30186, "finagle": 30184, "nginx": 30100}
SCENARIOS = """
[settings.quick]
repeat = 3
warmup = { duration_s = 1, tolerance = 1.0, max_runs = 2, window = 2 }

[hello]
description = "GET /hello with wrk: 2 s attempts"
tool = "wrk"
targets = [{ route = "hello", path = "/hello" }]
profile.quick = { runs = [{ threads = 1, concurrency = 10, duration_s = 2 }] }

[hang]
description = "GET /hello with ab -k, counted (1 s at the warm-up's rate), a socket timeout longer than any test"
tool = "ab"
targets = [{ route = "hello", path = "/hello" }]
profile.quick = { runs = [{ concurrency = 10, duration_s = 1, keepalive = true, timeout_s = 10000 }] }
"""
# The command line, reading the scenario file given first (the harness looks its scenario file up when it loads it)
WITH_SCENARIOS = (
    "import pathlib, sys; from harness import cli; from harness.config import scenarios; "
    "scenarios.SCENARIO_FILE = pathlib.Path(sys.argv.pop(1)); sys.exit(cli.main(sys.argv[1:]))"
)


@pytest.fixture
def scenario_file(tmp_path):
    path = tmp_path / "scenarios.toml"
    path.write_text(SCENARIOS)
    return path


def start_harness(
    scenario_file: Path, runtime: str, ports: dict[str, int], servers: str, scenario: str, run_id: str, repeat: int
) -> subprocess.Popen:
    up = [name for name, entry in State().load().items() if name in servers.split() and psutil.pid_exists(entry.pid)]
    if up:
        pytest.skip(f"{', '.join(up)} listed as up in .run/state.json (shared with `make up`): make down first")
    argv = [
        sys.executable,
        "-c",
        WITH_SCENARIOS,
        str(scenario_file),
        "--runtime",
        runtime,
        "--servers",
        servers,
        "--ports",
        " ".join(f"{n}={p}" for n, p in ports.items()),
        "--profile",
        "quick",
        "--repeat",
        str(repeat),
        "--run-id",
        run_id,
        "run",
        scenario,
    ]
    env = {k: v for k, v in os.environ.items() if k not in ("SERVERS", "PORTS", "REPEAT", "ORDER", "PROFILE")}
    return subprocess.Popen(argv, cwd=LOADGEN, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def wait_for(path: Path, proc: subprocess.Popen, timeout_s: float) -> None:
    """Until `path` exists (a tool's output: its load has started); fails with the harness's output otherwise."""
    wait_until(lambda: path.exists() or proc.poll() is not None, timeout_s, interval_s=0.02)
    if not path.exists():
        pytest.fail(f"{path} did not appear within {timeout_s:g} s; the harness said:\n{interrupt(proc)}")


def server_process(name: str, port: int) -> psutil.Process:
    """The server's process as the harness recorded it (the container's main process under Docker)."""
    entry = State().load()[name]
    assert entry.port == port, f"{name} in .run/state.json is not this test's (port {entry.port})"
    return psutil.Process(entry.pid)


def assert_nothing_left(ports: dict[str, int]) -> None:
    for name, port in ports.items():
        assert port_owner("127.0.0.1", port) is None, f"{name}'s port {port} is still held"
    for proc in psutil.process_iter(["cmdline"]):
        cmdline = " ".join(proc.info["cmdline"] or [])
        assert not any(f":{port}/" in cmdline for port in ports.values()), f"a load tool is left: {cmdline}"


def finish(proc: subprocess.Popen, timeout_s: float) -> str:
    try:
        return proc.communicate(timeout=timeout_s)[0]
    except subprocess.TimeoutExpired:
        pytest.fail(f"the harness did not end within {timeout_s:g} s:\n{interrupt(proc)}")


def interrupt(proc: subprocess.Popen) -> str:
    """Ctrl-C: the harness stops every server and tool it started; its output."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
    return proc.communicate(timeout=120)[0]


# ---------------------------------------------------------------------------------------------------------- unit


def test_exit_reasons_name_the_signal():
    assert exit_reason(-9) == "killed by signal 9 (SIGKILL)"
    assert exit_reason(1) == "exited with code 1"
    assert exit_reason(137) == "killed by signal 9 (SIGKILL) (exit code 137)"  # a container's init, a shell


def test_an_interrupted_ab_that_completed_nothing_is_read_as_such():
    """ab interrupted at the deadline before any answer prints a summary without its rate (fixture: a hung rust)."""
    output = (FIXTURES / "ab_interrupted" / "output.txt").read_text()
    measured = TOOLS["ab"].parse(output, FIXTURES / "ab_interrupted")
    assert (measured.requests, measured.rps, measured.errors.total, measured.duration_s) == (0, 0.0, 0, 20.001)


def test_a_counted_load_has_a_deadline_from_its_expected_rate_with_a_floor_and_a_ceiling():
    spec = LoadSpec(url="http://127.0.0.1:1/", concurrency=10, requests=1000)
    assert deadline_s(spec, expected_rps=10) == 500  # 5 x the 100 s it should take
    assert deadline_s(spec, expected_rps=1e6) == DEADLINE_FLOOR_S
    assert deadline_s(spec, expected_rps=None) == deadline_s(spec, expected_rps=1e-3) == DEADLINE_CEILING_S
    assert deadline_s(LoadSpec(url="http://127.0.0.1:1/", concurrency=10, duration_s=2), None) == 62


# ------------------------------------------------------------------------------------------- real servers (lock)


def test_the_local_runtime_says_how_its_server_died():
    runtime, rust = LocalRuntime(), discover()["rust"]
    running = runtime.start(rust, [0], LOCAL_PORTS["rust"], {})
    try:
        assert runtime.death(running) is None
        os.kill(running.pid, signal.SIGSTOP)
        assert runtime.death(running) is None  # stopped is not dead
        os.kill(running.pid, signal.SIGKILL)
        assert wait_until(lambda: runtime.death(running) is not None, 5)
        assert runtime.death(running) == "killed by signal 9 (SIGKILL)"
        assert "rust-server listening on http://127.0.0.1:31086" in runtime.log_tail(running)
    finally:
        runtime.stop(running)
    assert not psutil.pid_exists(running.pid) and port_owner("127.0.0.1", LOCAL_PORTS["rust"]) is None


def crash_rust_during_its_first_attempt(scenario_file: Path, runtime: str, ports: dict[str, int]) -> None:
    run_id = f"test-crash-{runtime}-{os.getpid()}"
    proc = start_harness(scenario_file, runtime, ports, "rust finagle", "hello", run_id, repeat=3)
    try:
        wait_for(RESULTS / run_id / "raw" / "rust-hello-c10-1" / "output.txt", proc, 300)
        rust = server_process("rust", ports["rust"])
        time.sleep(0.5)  # well into the attempt
        rust.kill()
        output = finish(proc, 300)
    finally:
        interrupt(proc)
    print(output)

    assert proc.returncode == 1, output
    assert "order: interleaved" in output  # finagle slept (SIGSTOP) during rust's turns: a death must not upset that
    assert "rust died during hello c10 attempt 1 (" in output and "killed by signal 9 (SIGKILL)" in output
    assert "what failed in this run:" in output.split("results: ")[-1]  # the summary comes last
    assert "its remaining scenarios were skipped" in output.split("what failed in this run:")[-1]
    run = results.load(RESULTS / run_id / "results.json")
    rust_record, finagle_record = (next(r for r in run.records if r.server == name) for name in ("rust", "finagle"))
    [died] = rust_record.attempts  # attempts 2 and 3 were skipped
    assert "the server died during this load" in died.failed and "killed by signal 9 (SIGKILL)" in died.failed
    assert rust_record.failed and "failed" in {f.name for f in rust_record.flags}
    [death] = run.servers["rust"]["deaths"]
    assert death["when"] == "during hello c10 attempt 1" and "killed by signal 9 (SIGKILL)" in death["reason"]
    assert "rust-server listening on" in death["log_tail"]
    assert len(finagle_record.attempts) == 3 and all(a.measured for a in finagle_record.attempts)
    assert not finagle_record.failed and finagle_record.rps > 0
    assert "deaths" not in run.servers["finagle"]
    assert_nothing_left(ports)


def test_a_server_killed_during_an_attempt_costs_its_record_not_the_run(scenario_file):
    crash_rust_during_its_first_attempt(scenario_file, "local", LOCAL_PORTS)


ENGINE, WHY = engine.engine_answers()


@pytest.mark.skipif(not ENGINE, reason=f"the Docker runtime's test needs a Docker engine: {WHY}")
def test_a_container_killed_during_an_attempt_costs_its_record_not_the_run(scenario_file):
    try:
        engine.compose_command()
    except Exception as exc:  # noqa: BLE001
        pytest.skip(str(exc))
    crash_rust_during_its_first_attempt(scenario_file, "docker", DOCKER_PORTS)
    names = subprocess.run(
        ["docker", "ps", "-a", "--format", "{{.Names}}"], capture_output=True, text=True, check=True
    ).stdout.split()
    assert not {"bench-rust", "bench-finagle", "bench-loadgen"} & set(names), names


def test_a_server_that_hangs_ends_its_attempt_at_the_deadline_and_the_run_goes_on(scenario_file):
    run_id = f"test-hang-{os.getpid()}"
    raw = RESULTS / run_id / "raw"
    proc = start_harness(scenario_file, "local", LOCAL_PORTS, "rust", "hang", run_id, repeat=2)
    rust = None
    try:
        wait_for(raw / "rust-hang-c10-1" / "output.txt", proc, 120)
        rust = server_process("rust", LOCAL_PORTS["rust"])
        rust.suspend()
        hung_at = time.monotonic()
        # ab waits for answers for 10000 s: only the harness's deadline ends this attempt; then attempt 2 starts
        wait_for(raw / "rust-hang-c10-2" / "output.txt", proc, DEADLINE_FLOOR_S + INTERRUPT_GRACE_S + 60)
        hung_for = time.monotonic() - hung_at
        rust.resume()
        output = finish(proc, 120)
    finally:
        if rust and rust.is_running():
            rust.resume()
        interrupt(proc)
    print(output)

    assert proc.returncode == 0, output
    [record] = results.load(RESULTS / run_id / "results.json").records
    first, second = record.attempts
    requests = int(re.search(r" -n (\d+) ", first.commands[0]).group(1))
    bound = deadline_s(LoadSpec(url="", concurrency=10, requests=requests), first.sized_from_rps)
    assert hung_for <= bound + INTERRUPT_GRACE_S + 5, f"the hung attempt took {hung_for:.0f} s (deadline {bound:.0f} s)"
    assert first.stopped and "stopped by the harness at this load's deadline (20 s)" in first.stopped
    assert first.stopped in output
    assert first.errors.timeout >= 10  # the ten connections left waiting
    if first.requests:  # what ab reported before the hang is kept
        assert not first.failed
    else:  # it hung before its first answer
        assert first.failed == f"no request completed; {first.stopped}"
    assert second.measured and not second.stopped and second.errors.total == 0
    assert "errors" in {f.name for f in record.flags}
    assert_nothing_left({"rust": LOCAL_PORTS["rust"]})
