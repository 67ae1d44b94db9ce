"""A terminal that goes away mid-run (issue 43): a closed ssh session or `tmux kill-session` sends SIGHUP and leaves
every later write to the terminal failing (EIO). The harness runs here under a real pseudo-terminal (python's pty),
whose master side the test closes during an attempt: the clean-up must still run to its end (servers and tools
stopped, results.json and the report written) though each message it prints on the way fails. Ports are fixed, like
tests/test_interrupts.py's (its own servers: tests/responders/contract_server.py)."""

from __future__ import annotations

import errno
import io
import os
import pty
import select
import shutil
import sys
import time
from pathlib import Path

import psutil
import pytest
from ports import free_port

from harness.basics import messages
from harness.basics.machine import port_owner, wait_until
from harness.basics.paths import RESULTS
from harness.results import records as results

pytestmark = pytest.mark.integration  # real servers, load tools or the harness's command line on loopback

LOADGEN = Path(__file__).resolve().parents[1]
RESPONDER = Path(__file__).parent / "responders" / "contract_server.py"
PORT = free_port()  # the operating system's choice (ports.py)
SCENARIOS = """
[settings.quick]
repeat = 6
warmup = { duration_s = 1, tolerance = 1.0, window = 3, max_runs = 4, max_s = 30 }

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


def harness_under_a_terminal(tmp_path: Path, run_id: str) -> tuple[int, int]:
    """(pid, the terminal's master fd) of the harness measuring a server of the test's own under a new pty."""
    folder = tmp_path / "servers" / "ttyprobe"
    folder.mkdir(parents=True)
    (folder / "manifest.toml").write_text(
        f'[[server]]\nname = "ttyprobe"\nport = {PORT}\nroutes = ["id", "hello", "backend", "tweets", "factorial", '
        f'"fibonacci"]\nrun = ["{sys.executable}", "{RESPONDER}", "{{port}}", "ttyprobe"]\n'
    )
    (tmp_path / "scenarios.toml").write_text(SCENARIOS)
    argv = [
        sys.executable,
        "-c",
        WITH_SCENARIOS,
        str(tmp_path / "scenarios.toml"),
        "--runtime",
        "local",
        "--servers",
        "ttyprobe",
        "--profile",
        "quick",
        "--run-id",
        run_id,
        "run",
        "hello",
    ]
    env = {k: v for k, v in os.environ.items() if k not in ("SERVERS", "PORTS", "REPEAT", "ORDER", "PROFILE", "TWIN")}
    env["BENCH_SERVERS_DIR"] = str(tmp_path / "servers")
    pid, master = pty.fork()  # the child: a new session whose controlling terminal is the pty
    if pid == 0:
        os.chdir(LOADGEN)
        os.execve(sys.executable, argv, env)
    return pid, master


def read_until(master: int, text: str, timeout_s: float) -> str:
    said = b""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and text.encode() not in said:
        if select.select([master], [], [], 0.1)[0]:
            try:
                said += os.read(master, 65536)
            except OSError:  # the child ended and the terminal with it
                break
    assert text.encode() in said, said.decode(errors="replace")
    return said.decode(errors="replace")


def exit_status(pid: int, timeout_s: float) -> int | None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        time.sleep(0.1)
    return None


def test_a_terminal_closed_during_an_attempt_leaves_nothing_running_and_the_run_reported(tmp_path):
    run_id = f"test-dropped-terminal-{os.getpid()}"
    pid, master = harness_under_a_terminal(tmp_path, run_id)
    try:
        said = read_until(master, "c4 #1", 120)  # the first attempt's progress: the load tool is running
        time.sleep(0.5)
    finally:
        os.close(master)  # the terminal goes: SIGHUP to the harness, and every later write to it fails
    status = exit_status(pid, 60)
    if status is None:
        os.kill(pid, 9)
        pytest.fail(f"the harness did not end within 60 s of its terminal's end; it said:\n{said}")
    assert status in (129, 130), status
    assert wait_until(lambda: port_owner("127.0.0.1", PORT) is None, 5), f"the server's port {PORT} is still held"
    for proc in psutil.process_iter(["cmdline"]):
        cmdline = " ".join(proc.info["cmdline"] or [])
        assert not (str(RESPONDER) in cmdline and "ttyprobe" in cmdline), f"the server is left: {cmdline}"
        assert f":{PORT}/" not in cmdline, f"the load tool is left: {cmdline}"
    run = RESULTS / run_id
    try:
        conditions = results.load(run / "results.json").conditions
        assert conditions.get("finished_at") and conditions.get("ended") == "interrupted (SIGHUP)", conditions
        assert (run / "report.html").is_file() and (run / "summary.md").is_file()
    finally:
        shutil.rmtree(run, ignore_errors=True)


class Unwritable(io.TextIOBase):
    """A terminal that has gone: every write fails as a hung-up tty's does."""

    def write(self, text: str) -> int:
        raise OSError(errno.EIO, "Input/output error")

    def flush(self) -> None:
        raise OSError(errno.EIO, "Input/output error")


def test_every_message_after_the_terminal_went_is_dropped_without_an_error(monkeypatch):
    monkeypatch.setattr(sys, "stdout", Unwritable())
    monkeypatch.setattr(messages.terminal, "lost", False)
    messages.say("stopping ttyprobe")
    messages.warn("a port is still held")
    messages.fail("what failed in this run")
    messages.console.print(messages.console.width * "-")
    assert messages.terminal.lost
