"""Idle servers frozen between their turns (interleaved rounds) by a harness that is not root (issue 34): under Docker
the containers' processes run as the image's user, which such a harness may not signal; the engine's freezer needs
no such right. Real processes: a server process owned by root, paused by a harness process that has dropped to
`nobody` (a forked child: the same interpreter, no other Python needed); only the Docker CLI is a stand-in (there is
no engine here)."""

from __future__ import annotations

import os
import subprocess
import time

import nobody
import psutil
import pytest

from harness.containers import engine_runtime
from harness.containers.one_host import DockerRuntime
from harness.runtime.local import LocalRuntime
from harness.runtime.protocol import RunningServer

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="drops from root to nobody to be a non-root harness")


def _server_process() -> tuple[subprocess.Popen, RunningServer]:
    proc = subprocess.Popen(["sleep", "60"])
    created = psutil.Process(proc.pid).create_time()
    return proc, RunningServer(
        name="nginx",
        host="127.0.0.1",
        port=19220,
        cpus=[0],
        pid=proc.pid,
        log="",
        started_at=created,
        startup_s=0.0,
        runtime="docker",
        container="bench-nginx",
        pid_created=created,
    )


def _as_nobody(action) -> dict:
    """`action()` as `nobody`, which must not raise: what it printed and returned."""
    said = nobody.as_nobody(action)
    assert "error" not in said, said
    return said


def _stopped(pid: int) -> bool:
    time.sleep(0.2)
    return psutil.Process(pid).status() == psutil.STATUS_STOPPED


def test_docker_freezes_an_idle_server_through_the_engine_without_rights_over_its_processes(monkeypatch):
    calls = []
    monkeypatch.setattr(
        engine_runtime,
        "run_cli",
        lambda argv, **kw: calls.append(argv) or subprocess.CompletedProcess(argv, 0, b"", b""),
    )
    runtime = DockerRuntime.__new__(DockerRuntime)
    engine_runtime.EngineRuntime.__init__(runtime)
    proc, running = _server_process()

    def freeze_and_thaw() -> list:
        runtime.pause(running, True)
        runtime.pause(running, False)
        return calls  # the child's

    try:
        said = _as_nobody(freeze_and_thaw)
    finally:
        proc.kill()
        proc.wait()
    assert said["returned"] == [["docker", "pause", "bench-nginx"], ["docker", "unpause", "bench-nginx"]], said


def test_a_server_the_harness_may_not_signal_is_said_not_frozen(monkeypatch):
    proc, running = _server_process()
    running.runtime = "local"
    try:
        said = _as_nobody(lambda: LocalRuntime().pause(running, True))
        assert not _stopped(proc.pid)
        assert "could not freeze nginx" in said["printed"], said
    finally:
        proc.kill()
        proc.wait()
