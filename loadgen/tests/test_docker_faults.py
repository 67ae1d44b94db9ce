"""A container killed for memory (issue 14) is recorded as such, from what the engine says (State.OOMKilled), not as a
mystery exit; the other servers are measured and nothing is left behind. finagle pre-touches its 1 GiB heap at
start, so under a 256 MiB limit (BENCH_MEM_LIMIT_FINAGLE, read by docker-compose.yml) the kernel kills it for
memory as it starts: a real OOM kill, reported through the same death reason as one during a load.

Skipped, with the reason, when no Docker engine answers (failed instead under CI=true). It starts containers on
fixed ports (27xxx): run it under the integration lock, like tests/test_docker_runtime.py."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import psutil
import pytest

from harness.basics.machine import port_owner
from harness.config.manifest import discover
from harness.containers import compose, engine
from harness.results import records as results
from harness.results.store import RESULTS
from harness.runtime import RuntimeFailure, State

pytestmark = pytest.mark.integration  # real servers, load tools or the harness's command line on loopback

LOADGEN_DIR = Path(__file__).resolve().parents[1]
PORTS = {"finagle": 27084, "rust": 27086, "nginx": 27000}  # below the ephemeral ports; no other test uses them
ENGINE, WHY = engine.engine_answers()


def skip_or_fail(reason: str) -> None:
    """No engine: the test is skipped, but fails under CI (CI=true: .ci/docker.sh has started one)."""
    if os.environ.get("CI") == "true":
        pytest.fail(reason, pytrace=False)
    pytest.skip(reason)


def _skip_reason() -> str | None:
    """Why the test cannot run here; an engine that does not answer (or no Compose) is skip_or_fail's."""
    if not ENGINE:
        skip_or_fail(f"the Docker runtime's fault tests need a Docker engine: {WHY}")
    try:
        engine.compose_command()
    except RuntimeFailure as exc:
        skip_or_fail(str(exc))
    servers = discover()
    missing = [
        f"{name}'s {a}" for name in PORTS for a in servers[name].artifacts if not (servers[name].folder / a).exists()
    ]
    if missing:
        return f"{', '.join(missing)} missing: make build"
    alive = [name for name, entry in State().load().items() if psutil.pid_exists(entry.pid)]
    if alive:
        return f"servers are up ({', '.join(alive)}; .run/state.json is shared): make down first"
    return None


def _containers() -> list[str]:
    """The project's containers, the loadgen's included (running or not)."""
    proc = subprocess.run(
        [
            "docker",
            "ps",
            "-a",
            "--filter",
            f"label=com.docker.compose.project={compose.PROJECT}",
            "--format",
            "{{.Names}}",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    return proc.stdout.split()


def test_a_container_killed_for_memory_is_recorded_as_killed_for_memory():
    reason = _skip_reason()
    if reason:
        pytest.skip(reason)
    run_id = f"test-docker-oom-{os.getpid()}"
    env = {
        **os.environ,
        "RUNTIME": "docker",
        "REPEAT": "1",
        "PROFILE": "quick",
        "PORTS": " ".join(f"{n}={p}" for n, p in PORTS.items()),
        compose.memory_var(discover()["finagle"]): "256m",
    }
    proc = subprocess.run(
        [sys.executable, "-m", "harness", "--servers", "finagle rust", "--run-id", run_id, "run", "hello"],
        cwd=LOADGEN_DIR,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    output = proc.stdout + proc.stderr
    print(output)

    assert proc.returncode == 1, output  # not every server was measured
    assert "error: finagle killed for memory (OOMKilled) while starting; its log:" in output
    assert "Traceback" not in output
    run = results.load(RESULTS / run_id / "results.json")
    finagle = run.servers["finagle"]
    assert finagle["started"] is False and "killed for memory (OOMKilled)" in finagle["error"]
    assert not [r for r in run.records if r.server == "finagle"]
    measured = [r for r in run.records if r.server == "rust"]
    assert measured and all(r.rps > 0 and not r.failed for r in measured)  # the other server was measured
    assert run.servers["rust"]["placement"]["memory_bytes"] == 3 * 2**30  # the small limit was finagle's alone

    assert not _containers(), "containers left behind"
    assert not any(port_owner("127.0.0.1", port) for port in PORTS.values()), "a listener left behind"
    assert not set(State().load()) & set(PORTS), "servers left in the harness's state"
