"""Ctrl-C at any instant, and what an interrupted run keeps (issue "Faults, second pass", items 1 and 2).

The harness runs as the command line in a subprocess of its own process group, with servers of this test's own
(BENCH_SERVERS_DIR: tests/responders/contract_server.py, which keeps the contract) and a scenario file of its own.
SIGINT goes to the whole group, as a terminal's Ctrl-C does (the load tools get it too), at four instants: during a
server's start, the steadiness probe, a warm-up and an attempt. Each must end the command within seconds, with exit
status 130 and its message, the records measured so far kept, and no process or listener left. Ports are fixed: run
under the integration lock, like tests/test_cli_integration.py."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from harness.basics import interrupt
from harness.basics.machine import port_owner, wait_until
from harness.basics.paths import RESULTS
from harness.config.manifest import discover
from harness.measuring.tool_processes import Beside, Naming, measure
from harness.results import records as results
from harness.runtime import RunningServer, local
from harness.tools import LoadSpec
from harness.tools.load_plan import plan_load
from harness.versus import checkout

pytestmark = pytest.mark.integration  # real servers, load tools or the harness's command line on loopback

LOADGEN = Path(__file__).resolve().parents[1]
RESPONDER = Path(__file__).parent / "responders" / "contract_server.py"
PORTS = {"probe": 28201, "slowpoke": 28202}
ROUTES = '["id", "hello", "backend", "tweets", "factorial", "fibonacci"]'
STOP_WITHIN_S = 10  # what "within seconds" means here: the stop of the servers and tools included
SCENARIOS = """
[settings.quick]
repeat = 4
steadiness = { seconds = 30, window_s = 1 }
warmup = { duration_s = 1, tolerance = 0.0001, window = 3, max_runs = 40, max_s = 60 }

[hello]
description = "GET /hello with wrk, 2 s attempts"
tool = "wrk"
targets = [{ route = "hello", path = "/hello" }]
profile.quick = { runs = [{ threads = 1, concurrency = 4, duration_s = 2 }] }
"""
WITH_SCENARIOS = (
    "import pathlib, sys; from harness import cli; from harness.config import scenarios; "
    "scenarios.SCENARIO_FILE = pathlib.Path(sys.argv.pop(1)); sys.exit(cli.main(sys.argv[1:]))"
)


@pytest.fixture
def servers_dir(tmp_path) -> Path:
    """Two servers of the test's own: `probe` starts at once, `slowpoke` listens only after 60 s."""
    for name, delay in (("probe", 0), ("slowpoke", 60)):
        folder = tmp_path / "servers" / name
        folder.mkdir(parents=True)
        (folder / "manifest.toml").write_text(
            f'[[server]]\nname = "{name}"\nport = {PORTS[name]}\nroutes = {ROUTES}\nstartup_timeout_s = 120\n'
            f'run = ["{sys.executable}", "{RESPONDER}", "{{port}}", "{name}", "--start-delay", "{delay}"]\n'
        )
    return tmp_path / "servers"


def start(
    tmp_path: Path, servers_dir: Path, server: str, run_id: str, steadiness: bool = False, settles: bool = False
) -> subprocess.Popen:
    """The harness measuring `server`; its warm-up never settles (a tolerance of 0.01 %) unless `settles`."""
    text = SCENARIOS if steadiness else SCENARIOS.replace("steadiness = ", "# steadiness = ")
    scenario_file = tmp_path / "scenarios.toml"
    scenario_file.write_text(text.replace("tolerance = 0.0001", "tolerance = 1.0") if settles else text)
    argv = [
        sys.executable,
        "-c",
        WITH_SCENARIOS,
        str(scenario_file),
        "--runtime",
        "local",
        "--servers",
        server,
        "--profile",
        "quick",
        "--run-id",
        run_id,
        "run",
        "hello",
    ]
    env = {k: v for k, v in os.environ.items() if k not in ("SERVERS", "PORTS", "REPEAT", "ORDER", "PROFILE", "TWIN")}
    env["BENCH_SERVERS_DIR"] = str(servers_dir)
    env["PYTHONFAULTHANDLER"] = "1"
    return subprocess.Popen(
        argv, cwd=LOADGEN, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True
    )  # its own group: the Ctrl-C below reaches it and its tools only


def ctrl_c(proc: subprocess.Popen) -> tuple[str, float]:
    """SIGINT to the harness's process group, as a terminal sends it; (its output, seconds until it ended)."""
    sent = time.monotonic()
    os.killpg(proc.pid, signal.SIGINT)
    try:
        output = proc.communicate(timeout=120)[0]
    except subprocess.TimeoutExpired:
        # what it hangs in, should it ever: PYTHONFAULTHANDLER (set in start()) prints every thread's stack on SIGABRT
        left = [" ".join(p.cmdline()) for p in psutil.Process(proc.pid).children(recursive=True)]
        proc.send_signal(signal.SIGABRT)
        try:
            stacks = proc.communicate(timeout=10)[0]
        except subprocess.TimeoutExpired:
            proc.kill()
            stacks = proc.communicate()[0]
        pytest.fail(f"the harness did not end within 120 s of Ctrl-C; its children: {left}; it said:\n{stacks}")
    return output, time.monotonic() - sent


def wait_for_line(proc: subprocess.Popen, text: str, timeout_s: float, lines: list[str]) -> None:
    """Reads the harness's output until a line holds `text` (kept in `lines`)."""
    deadline = time.monotonic() + timeout_s
    os.set_blocking(proc.stdout.fileno(), False)
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if line:
            lines.append(line)
            if text in line:
                return
        elif proc.poll() is not None:
            break
        else:
            time.sleep(0.02)
    proc.kill()
    pytest.fail(f"no line with {text!r} within {timeout_s:g} s; the harness said:\n{''.join(lines)}")


def assert_nothing_left() -> None:
    for name, port in PORTS.items():
        assert wait_until(lambda port=port: port_owner("127.0.0.1", port) is None, 5), (
            f"{name}'s port {port} is still held"
        )
    for proc in psutil.process_iter(["cmdline"]):
        cmdline = " ".join(proc.info["cmdline"] or [])
        assert str(RESPONDER) not in cmdline, f"a server is left: {cmdline}"
        assert not any(f":{port}/" in cmdline for port in PORTS.values()), f"a load tool is left: {cmdline}"
        assert "time.monotonic() + float(sys.argv[2])" not in cmdline, f"a steadiness probe is left: {cmdline}"


def interrupted(output: str, took_s: float, proc: subprocess.Popen) -> None:
    print(output)
    assert proc.returncode == 130, output
    assert "interrupted: stopped what this command started; results so far are kept" in output
    assert "Traceback" not in output and "Exception ignored" not in output, output
    assert took_s < STOP_WITHIN_S, f"the harness took {took_s:.1f} s to stop after Ctrl-C"
    assert_nothing_left()


def test_ctrl_c_while_a_server_starts(tmp_path, servers_dir):
    run_id = f"test-int-start-{os.getpid()}"
    proc, lines = start(tmp_path, servers_dir, "slowpoke", run_id), []
    wait_for_line(proc, "order:", 60, lines)  # the campaign is about to start it
    time.sleep(2)  # the harness now waits for slowpoke's GET /id
    output, took = ctrl_c(proc)
    interrupted("".join(lines) + output, took, proc)
    run = results.load(RESULTS / run_id / "results.json")
    assert run.records == [] and run.conditions["ended"] == "interrupted (SIGINT)", run.conditions


@pytest.mark.parametrize("after_s", [0, 1])  # 0: while the probes' interpreters start (a traceback of theirs leaked)
def test_ctrl_c_during_the_steadiness_probe(tmp_path, servers_dir, after_s):
    run_id = f"test-int-probe-{os.getpid()}-{after_s}"
    proc, lines = start(tmp_path, servers_dir, "probe", run_id, steadiness=True), []
    wait_for_line(proc, "machine steadiness probe (before the run", 60, lines)
    time.sleep(after_s)
    output, took = ctrl_c(proc)
    interrupted("".join(lines) + output, took, proc)
    run = results.load(RESULTS / run_id / "results.json")
    assert run.records == [] and "steadiness" not in run.conditions


def test_ctrl_c_during_a_warm_up(tmp_path, servers_dir):
    """The case of the issue: the warm-up never settles (tolerance 0.01 %) and Ctrl-C lands while its tool runs."""
    run_id = f"test-int-warmup-{os.getpid()}"
    proc, lines = start(tmp_path, servers_dir, "probe", run_id), []
    wait_for_line(proc, "contract OK", 60, lines)
    warmup_raw = RESULTS / run_id / "raw" / "warmup"
    assert wait_until(lambda: len(list(warmup_raw.glob("*/output.txt"))) >= 2, 60), "no second warm-up run started"
    time.sleep(0.3)  # inside that run's wrk
    output, took = ctrl_c(proc)
    interrupted("".join(lines) + output, took, proc)
    assert results.load(RESULTS / run_id / "results.json").records == []


def test_ctrl_c_during_an_attempt_keeps_the_attempts_already_done(tmp_path, servers_dir):
    run_id = f"test-int-attempt-{os.getpid()}"
    proc, lines = start(tmp_path, servers_dir, "probe", run_id, settles=True), []
    wait_for_line(proc, "probe hello c4 #2", 120, lines)  # the second attempt's line: two are done
    assert wait_until(lambda: (RESULTS / run_id / "raw" / "probe-hello-c4-3" / "output.txt").exists(), 30)
    time.sleep(0.5)  # inside the third attempt's wrk
    output, took = ctrl_c(proc)
    interrupted("".join(lines) + output, took, proc)
    [record] = results.load(RESULTS / run_id / "results.json").records
    assert [a.attempt for a in record.attempts] == [1, 2] and all(a.measured for a in record.attempts)
    assert record.incomplete == "2 of 4 attempts: the run ended before the rest"
    assert "incomplete" in [f.name for f in record.flags] and not record.ranked
    assert record.rps == (record.attempts[0].rps + record.attempts[1].rps) / 2  # the median of two: their mean


@pytest.fixture
def signal_handlers():
    """The harness's own handlers for the test (as the command line installs them), the earlier ones afterwards."""
    saved = {signum: signal.getsignal(signum) for signum in interrupt.SIGNALS}
    interrupt.reset()
    interrupt.install()
    yield
    for signum, handler in saved.items():
        signal.signal(signum, handler)
    interrupt.reset()


def popen_then_sigint(real_popen):
    """subprocess.Popen with a Ctrl-C arriving just after its fork, before it returns: the instant CI once hit, when
    `make versus` printed "building node@..." and the test's SIGINT came while the build's Popen ran."""

    def popen(*args, **kwargs):
        proc = real_popen(*args, **kwargs)
        os.kill(os.getpid(), signal.SIGINT)
        return proc

    return popen


def test_ctrl_c_during_a_build_s_popen_stops_the_build(tmp_path, monkeypatch, signal_handlers):
    folder = tmp_path / "servers" / "slowbuild"
    folder.mkdir(parents=True)
    pid_file = tmp_path / "sleeper.pid"
    (folder / "manifest.toml").write_text(
        f'[[server]]\nname = "slowbuild"\nport = 28203\nroutes = {ROUTES}\nrun = ["true"]\n'
        f'build = "sleep 60 & echo $! > {pid_file}; wait"\n'
    )
    server = discover(tmp_path / "servers")["slowbuild"]
    monkeypatch.setattr(checkout.subprocess, "Popen", popen_then_sigint(subprocess.Popen))
    with pytest.raises(KeyboardInterrupt):
        checkout.build(server, "slowbuild@test", tmp_path / "build.log")
    strays = [p for p in psutil.Process().children(recursive=True) if "sleep 60" in " ".join(p.cmdline())]
    assert not strays, strays
    if pid_file.exists() and pid_file.read_text().strip():  # the sleep, wherever it went once its shell died
        assert wait_until(lambda: gone(int(pid_file.read_text())), 5)


def gone(pid: int) -> bool:
    """No such process, or only its zombie (killed, not yet reaped by the process it was orphaned to)."""
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def test_ctrl_c_during_a_server_s_popen_stops_the_server(tmp_path, monkeypatch, servers_dir, signal_handlers):
    server = discover(servers_dir)["probe"]
    runtime = local.LocalRuntime()
    monkeypatch.setattr(local.subprocess, "Popen", popen_then_sigint(subprocess.Popen))
    with pytest.raises(KeyboardInterrupt):
        runtime.start(server, [0], PORTS["probe"], {})
    assert not [p for p in psutil.Process().children(recursive=True) if str(RESPONDER) in " ".join(p.cmdline())]
    assert port_owner("127.0.0.1", PORTS["probe"]) is None


def test_ctrl_c_during_a_load_tool_s_popen_stops_the_tool(tmp_path, monkeypatch, signal_handlers):
    port = PORTS["probe"]
    responder = subprocess.Popen([sys.executable, str(RESPONDER), str(port), "probe"])
    try:
        assert wait_until(lambda: port_owner("127.0.0.1", port) is not None, 10)
        server = RunningServer(
            name="probe",
            host="127.0.0.1",
            port=port,
            cpus=[0],
            pid=responder.pid,
            log="",
            started_at=0,
            startup_s=0,
            runtime="local",
        )
        spec = LoadSpec(url=f"http://127.0.0.1:{port}/hello", concurrency=2, threads=1, duration_s=30)
        monkeypatch.setattr(subprocess, "Popen", popen_then_sigint(subprocess.Popen))
        with pytest.raises(KeyboardInterrupt):
            measure(
                local.LocalRuntime(),
                plan_load("wrk", spec, (1,)),
                Naming(tmp_path, "probe-hello", "probe"),
                Beside(server),
            )
        monkeypatch.undo()
        assert not [p for p in psutil.Process().children(recursive=True) if "wrk" in " ".join(p.cmdline())]
    finally:
        responder.terminate()
        responder.wait(5)
