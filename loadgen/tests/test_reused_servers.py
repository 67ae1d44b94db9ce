"""Servers `make up` left running are reused by later commands only when they run as this run's plan says: on its CPUs,
its ports, from the artifacts as they are now (issue 34). One that differs is restarted, with one line saying why,
and stays up afterwards as `make up` left it. Real nginx processes under the local runtime, on ports 19210-19211."""

from __future__ import annotations

import dataclasses
import os
import shutil
import time

import psutil
import pytest

from harness.basics.cpus import CpuPlan
from harness.config.manifest import REPO, Server, discover
from harness.runtime import State
from harness.runtime.local import LocalRuntime
from harness.servers.session import Session

PLAN_A = CpuPlan(server=(0,), loadgen=(1,), upstream=(1,))
PLAN_B = CpuPlan(server=(1,), loadgen=(0,), upstream=(0,))  # nginx is the upstream: CPU 1, then CPU 0
PORTS = {"nginx": 19210}

pytestmark = pytest.mark.skipif(not {0, 1} <= os.sched_getaffinity(0), reason="needs CPUs 0 and 1")


@pytest.fixture
def nginx(tmp_path):
    """nginx from a copy of its folder (its artifacts can then be rebuilt, as a `make build` would), and `make down`
    of whatever the test left up."""
    folder = tmp_path / "nginx"
    shutil.copytree(REPO / "nginx", folder)
    server = dataclasses.replace(discover()["nginx"], folder=folder)
    yield server
    with Session(LocalRuntime(), PLAN_A, {"nginx": server}, PORTS) as down:
        down.stop("nginx")


def make_up(server: Server, plan: CpuPlan, ports=None):
    with Session(LocalRuntime(), plan, {server.name: server}, ports or PORTS, keep=True) as up:
        return up.ensure(server)


def later_command(server: Server, plan: CpuPlan, ports=None):
    """A command after `make up` (make test-hello): it uses the server, and stops only what it started."""
    with Session(LocalRuntime(), plan, {server.name: server}, ports or PORTS) as run:
        running = run.ensure(server)
        assert LocalRuntime().alive(running)
        return running


def assert_restarted(first, second, capsys, why: str) -> None:
    assert second.pid != first.pid, "the server left up was reused as it was"
    assert not psutil.pid_exists(first.pid) or psutil.Process(first.pid).status() == psutil.STATUS_ZOMBIE
    lines = [line for line in capsys.readouterr().out.splitlines() if "restarting" in line]
    assert len(lines) == 1 and why in lines[0], lines
    after = State().load()["nginx"]  # still up after the command, as `make up` left it
    assert after.pid == second.pid and LocalRuntime().alive(after)


def test_a_server_left_up_on_the_same_plan_is_reused(nginx, capsys):
    first = make_up(nginx, PLAN_A)
    second = later_command(nginx, PLAN_A)
    assert second.pid == first.pid
    assert "restarting" not in capsys.readouterr().out


def test_a_server_left_up_on_other_cpus_is_restarted_on_this_runs(nginx, capsys):
    first = make_up(nginx, PLAN_A)
    assert os.sched_getaffinity(first.pid) == {1}
    second = later_command(nginx, PLAN_B)
    assert second.cpus == [0] and os.sched_getaffinity(second.pid) == {0}
    assert_restarted(first, second, capsys, "CPU 1")


def test_a_server_left_up_before_a_rebuild_is_restarted_on_the_new_artifacts(nginx, capsys):
    first = make_up(nginx, PLAN_A)
    hello = nginx.folder / "static" / "hello"
    hello.write_bytes(hello.read_bytes())  # rebuilt: the same bytes, a new file
    os.utime(hello, ns=(time.time_ns() + 10**9, time.time_ns() + 10**9))
    second = later_command(nginx, PLAN_A)
    assert_restarted(first, second, capsys, "artifacts")


def test_a_server_left_up_on_another_port_is_restarted_on_this_runs(nginx, capsys):
    first = make_up(nginx, PLAN_A)
    second = later_command(nginx, PLAN_A, {"nginx": 19211})
    assert second.port == 19211
    assert_restarted(first, second, capsys, "port 19210")


def test_a_server_left_up_with_another_upstream_is_restarted_with_this_runs(nginx, capsys):
    """A server that fetches /weather from the upstream, left up with the upstream on 19210; a run that moves the
    upstream to 19211 restarts both (nginx, which ignores UPSTREAM_URL, stands in for such a server)."""
    fetcher = dataclasses.replace(
        nginx, name="fetcher", roles=(), routes=(*nginx.routes, "weather"), h2c_port=None, twin_of="nginx"
    )  # it answers /id as nginx
    servers = {"nginx": nginx, "fetcher": fetcher}
    before, after = {"nginx": 19210, "fetcher": 19212}, {"nginx": 19211, "fetcher": 19212}
    with Session(LocalRuntime(), PLAN_A, servers, before, keep=True) as up:
        first = up.ensure(fetcher)
    assert first.upstream_url == "http://127.0.0.1:19210/weather.json"
    try:
        with Session(LocalRuntime(), PLAN_A, servers, after) as run:
            second = run.ensure(fetcher)
        assert second.pid != first.pid and second.upstream_url == "http://127.0.0.1:19211/weather.json"
        lines = [line for line in capsys.readouterr().out.splitlines() if "restarting" in line]
        assert any(
            line.startswith("fetcher is up fetching its upstream from http://127.0.0.1:19210") for line in lines
        ), lines
    finally:
        with Session(LocalRuntime(), PLAN_A, servers, after) as down:
            down.stop("fetcher")
