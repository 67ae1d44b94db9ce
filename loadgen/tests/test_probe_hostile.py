"""The probe against a hostile server (tests/responders/hostile.py): whatever a server answers, every case ends
within the case's deadline with an outcome, `make probe` ends, and Ctrl-C stops it at once (issue 72)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from harness.basics.paths import RESULTS
from harness.conformance import suite
from harness.conformance.wire import Reader, Timing

sys.path.insert(0, str(Path(__file__).parent / "responders"))
import hostile  # noqa: E402
from ports import free_port

pytestmark = pytest.mark.integration  # real servers, load tools or the harness's command line on loopback

LOADGEN = Path(__file__).resolve().parents[1]
RESPONDER = Path(__file__).parent / "responders" / "hostile.py"
SAMPLE = ["LE-01", "CL-01", "TE-01", "CN-06", "MF-04", "DS-01", "RC-01", "RC-09"]
# what the reader makes of each mode's answer
OUTCOME = {
    "negative-chunk": ("bad-framing",),
    "non-hex-chunk": ("bad-framing",),
    "enormous-chunk": ("bad-framing",),
    "long-content-length": ("bad-framing",),
    "endless-responses": ("too-big", "too-many"),  # 1 MiB, or past 32 responses first on a slow machine
    "never-finishes": ("none",),
    "huge-headers": ("too-big",),
}


@pytest.mark.parametrize("mode", sorted(hostile.MODES))
def test_every_hostile_answer_is_an_outcome_within_the_case_deadline(mode):
    server = hostile.serve([mode])
    timing = Timing(answer_s=1.0, settle_s=0.3, case_s=2.0)
    cases = [c for c in suite.CASES if c.id in SAMPLE]
    try:
        started = time.monotonic()
        results = suite.run("127.0.0.1", server.server_address[1], cases, timing)
        took = time.monotonic() - started
    finally:
        server.shutdown()
        server.server_close()
    assert took < timing.case_s + 1.5, took  # the eight cases run at once: one deadline, not eight
    for case in results:
        assert case["verdict"] in ("fail", "warn-lenient", "warn-strict", "pass"), case
        if not case["id"].startswith("RC-"):
            assert case["got"] in OUTCOME[mode], (case["id"], case["got"][:200])


def test_a_stop_ends_a_read_within_a_poll(tmp_path):
    server = hostile.serve(["never-finishes"])
    stop = threading.Event()
    try:
        with socket.create_connection(server.server_address) as sock:
            reader = Reader(sock, Timing(answer_s=30, case_s=30), time.monotonic(), 0, stop)
            assert reader.write(b"GET /hello HTTP/1.1\r\nHost: probe\r\n\r\n")
            threading.Timer(0.5, stop.set).start()
            started = time.monotonic()
            reader.read()
            assert time.monotonic() - started < 0.5 + 0.3
    finally:
        server.shutdown()
        server.server_close()


def _manifest(folder: Path, port: int, modes: list[str]) -> None:
    folder.mkdir(parents=True)
    argv = ", ".join(f'"{a}"' for a in [sys.executable, str(RESPONDER), "{port}", *modes])
    (folder / "manifest.toml").write_text(
        f'[[server]]\nname = "hostile"\nport = {port}\nroutes = ["id", "hello"]\nbuild = "true"\nrun = [{argv}]\n'
    )


def _probe(tmp_path: Path, run_id: str) -> subprocess.Popen[str]:
    env = {**os.environ, "BENCH_SERVERS_DIR": str(tmp_path / "servers"), "TWIN": ""}
    command = ["-m", "harness", "--runtime", "local", "--servers", "hostile", "--run-id", run_id, "probe"]
    return subprocess.Popen(
        [sys.executable, *command], cwd=LOADGEN, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )


def test_make_probe_against_a_hostile_server_ends_with_every_case_judged(tmp_path):
    port = free_port()
    _manifest(tmp_path / "servers" / "hostile", port, [])
    run_id = f"test-hostile-{os.getpid()}"
    started = time.monotonic()
    proc = _probe(tmp_path, run_id)
    output, _ = proc.communicate(timeout=120)
    took = time.monotonic() - started
    if "another harness command is running" in output:
        pytest.skip("another harness command holds the lock")
    try:
        assert proc.returncode == 0, output
        assert took < 30 + 10, took  # 30 s for the probe, the rest starting and stopping the server
        entry = json.loads((RESULTS / run_id / "results.json").read_text())["compliance"]["hostile"]
        assert len(entry["cases"]) == len(suite.CASES)
        assert all(c["verdict"] in ("pass", "warn-lenient", "warn-strict", "fail") for c in entry["cases"])
        assert {c["got"] for c in entry["cases"]} & {"bad-framing", "too-big"}
    finally:
        shutil.rmtree(RESULTS / run_id, ignore_errors=True)


def test_ctrl_c_stops_a_probe_of_a_server_that_never_finishes_within_two_seconds(tmp_path):
    port = free_port()
    _manifest(tmp_path / "servers" / "hostile", port, ["never-finishes"])
    run_id = f"test-hostile-int-{os.getpid()}"
    proc = _probe(tmp_path, run_id)
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:  # until the probe is under way: the server answers its start check
            time.sleep(0.2)
            with socket.socket() as sock:
                if sock.connect_ex(("127.0.0.1", port)) == 0:
                    break
        time.sleep(2.0)  # cases in flight, each waiting on an answer that never finishes
        assert proc.poll() is None, proc.stdout.read() if proc.stdout else ""
        proc.send_signal(signal.SIGINT)
        started = time.monotonic()
        output, _ = proc.communicate(timeout=10)
        assert time.monotonic() - started < 2.0, output
        if "another harness command is running" in output:
            pytest.skip("another harness command holds the lock")
        with socket.socket() as sock:  # and the server it started is stopped
            assert sock.connect_ex(("127.0.0.1", port)) != 0
    finally:
        if proc.poll() is None:
            proc.kill()
        shutil.rmtree(RESULTS / run_id, ignore_errors=True)
