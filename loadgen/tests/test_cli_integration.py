"""The harness's command line end to end against real servers on loopback: results written, clear errors, Ctrl-C.
Ports are the operating system's choice (ports.py): no collision with servers a developer left up with `make up`."""

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
from ports import free_port

from harness.basics.paths import RESULTS
from harness.config.manifest import discover
from harness.runtime import RuntimeFailure
from harness.runtime.local import LocalRuntime, port_owner

pytestmark = pytest.mark.integration  # real servers, load tools or the harness's command line on loopback

SERVERS = discover()
PORTS = {name: free_port() for name in SERVERS}
LOADGEN = Path(__file__).resolve().parents[1]


def test_a_busy_port_is_reported_with_its_owner():
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", 0))
        squatter.listen()
        port = squatter.getsockname()[1]
        with pytest.raises(RuntimeFailure, match=f"port {port} is in use by pid {os.getpid()}"):
            LocalRuntime().start(SERVERS["rust"], [0], port, {})


def test_a_port_held_by_a_client_connection_says_so_and_names_the_ephemeral_range():
    """A port the kernel lent to an outgoing connection cannot be bound either: said as such, not 'another process'."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        with socket.create_connection(listener.getsockname()) as client:
            accepted, _ = listener.accept()
            with accepted:
                port = client.getsockname()[1]
                with pytest.raises(
                    RuntimeFailure,
                    match=rf"port {port} is in use by pid {os.getpid()} \(.*\), as the "
                    r"local end of a connection \(the kernel's ephemeral ports \d+-\d+",
                ):
                    LocalRuntime().start(SERVERS["rust"], [0], port, {})


def harness(*args, **env):
    ports = " ".join(f"{n}={p}" for n, p in PORTS.items())
    return [sys.executable, "-m", "harness", "--ports", ports, *args], {
        **os.environ,
        "RUNTIME": "local",
        "REPEAT": "1",
        **env,
    }


def test_cli_run_writes_results_for_every_server_and_scenario(tmp_path):
    argv, env = harness("--servers", "rust nginx", "--run-id", f"test-{os.getpid()}", "run", "backend tweets")
    proc = subprocess.run(argv, cwd=LOADGEN, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    results = RESULTS / f"test-{os.getpid()}"
    data = json.loads((results / "results.json").read_text())
    assert data["conditions"]["runtime"] == "local" and data["conditions"]["cpus"]["server"]
    idle = data["conditions"]["cpu_idle"]  # polled where this machine lets the harness ask it (root, the device)
    asked = env.get("CPU_IDLE") or "poll"
    held = asked == "poll" and os.geteuid() == 0 and os.path.exists("/dev/cpu_dma_latency")
    assert (idle["asked"], idle["in_force"]) == (asked, "poll" if held else "machine"), idle
    assert data["conditions"]["cpu_meter"].startswith("on:" if env.get("CPU_METER") == "1" else "off (CPU_METER=0)")
    assert data["verification"]["rust"]["ok"]
    got = {(r["server"], r["scenario"], r["run"]) for r in data["records"]}
    assert got == {
        ("rust", "backend", "close"),
        ("rust", "backend", "keepalive"),
        ("rust", "tweets", "c100"),
        ("nginx", "backend", "close"),
        ("nginx", "backend", "keepalive"),
    }
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
    assert json.loads((RESULTS / run_id / "results.json").read_text())["run_id"] == run_id


def test_interleaved_rounds_put_the_idle_server_to_sleep_and_ctrl_c_wakes_and_stops_it():
    run_id = f"test-interleaved-{os.getpid()}"
    argv, env = harness("--servers", "rust node", "--run-id", run_id, "run", "hello", REPEAT="2")
    proc = subprocess.Popen(argv, cwd=LOADGEN, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    seen_asleep = None
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not seen_asleep:
        for name in ("rust", "node"):
            owner = port_listener(PORTS[name])
            if owner and owner.status() == psutil.STATUS_STOPPED:
                seen_asleep = name
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    output, _ = proc.communicate(timeout=60)
    assert seen_asleep, "no server slept while the other was measured\n" + output
    assert "order: interleaved" in output and proc.returncode == 130, output
    assert port_owner("127.0.0.1", PORTS["rust"]) is None and port_owner("127.0.0.1", PORTS["node"]) is None
    order = json.loads((RESULTS / run_id / "results.json").read_text())["conditions"]["order"]
    assert order["mode"] == "interleaved"


def port_listener(port: int):
    for conn in psutil.net_connections("tcp"):
        if conn.status == psutil.CONN_LISTEN and conn.laddr.port == port and conn.pid:
            try:
                return psutil.Process(conn.pid)
            except psutil.Error:
                return None
    return None


def test_unknown_server_is_a_clear_error():
    argv, env = harness("--servers", "tomcat", "ping")
    proc = subprocess.run(argv, cwd=LOADGEN, env=env, capture_output=True, text=True)
    assert proc.returncode == 2
    assert "unknown server(s) tomcat" in proc.stdout


def test_a_server_that_dies_while_starting_is_reported_with_its_log(tmp_path):
    from harness.config.manifest import Server

    dying = Server(name="dies", folder=tmp_path, port=0, routes=("id",), run=("sh", "-c", "echo boom; exit 3"))
    port = free_port()
    with pytest.raises(RuntimeFailure, match=r"dies exited with code 3 while starting; its log:\n\s+boom"):
        LocalRuntime().start(dying, [0], port, {})
