"""The end of every runtime's start: waiting until the server answers GET /id, its CPU set read back, and the server
stopped on any failure (Ctrl-C included)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Protocol

from harness.basics import httpclient
from harness.basics.machine import wait_until
from harness.config.manifest import Server
from harness.runtime.protocol import RunningServer, RuntimeFailure


class Starting(Protocol):
    """What await_start asks of the runtime that starts a server (every Runtime, and the Docker runtimes' shared
    base): why the server died, the end of its log, and stopping it."""

    def death(self, running: RunningServer) -> str | None: ...

    def log_tail(self, running: RunningServer, lines: int = 15) -> str: ...

    def stop(self, running: RunningServer) -> None: ...


def await_start(
    runtime: Starting,
    server: Server,
    running: RunningServer,
    began: float,
    read_cpus: Callable[[], list[int]] | None = None,
    listed: Callable[[RunningServer], None] | None = None,
) -> RunningServer:
    """The end of every runtime's `start`: `listed(running)` first (the server is in the state while it starts), then
    until the server answers GET /id (`wait_ready`), then its CPU set read back (`read_cpus()`, where the runtime
    can); on any failure, Ctrl-C and a full disk included, the server is stopped. `began`: when the start began
    (time.monotonic()), for `startup_s`."""
    try:
        if listed:
            listed(running)
        wait_ready(server, running, lambda: runtime.death(running), lambda: runtime.log_tail(running))
        if read_cpus:
            running.cpus = read_cpus()
    except BaseException:
        runtime.stop(running)
        raise
    running.startup_s = round(time.monotonic() - began, 3)
    return running


def wait_ready(
    server: Server, running: RunningServer, death: Callable[[], str | None], log_tail: Callable[[], str]
) -> None:
    """Until the server answers GET /id with its name (an outside server: its `ready_path` with a 200 and a body).
    `death()` says why it died (None while alive); `log_tail()` gives the end of its log for the error message."""
    path = server.ready_path or "/id"

    def answers() -> bool:
        why = death()
        if why:
            raise RuntimeFailure(f"{server.name} {why} while starting; its log:\n{log_tail()}")
        try:
            response = httpclient.get(running.host, running.port, path, timeout=2)
        except (OSError, httpclient.HttpError):
            return False
        if server.ready_path:
            return response.status == 200 and bool(response.body)
        return response.status == 200 and response.text == server.identity

    if not wait_until(answers, server.startup_timeout_s, interval_s=0.05, interruptible=True):
        raise RuntimeFailure(
            f"{server.name} did not answer GET {path} "
            f"{'with a body' if server.ready_path else 'with its name'} within {server.startup_timeout_s:g} s; "
            f"its log:\n{log_tail()}"
        )
