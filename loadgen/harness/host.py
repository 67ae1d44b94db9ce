"""Facts about the machine the harness runs on, and helpers for its processes: the open-file limit, who holds a port,
pinning a child to CPUs, a process's start time, a server's version as this host reports it, waiting for a condition.

A leaf: the runtimes, the preflight checks and the run's conditions all read these, and it imports none of them."""
from __future__ import annotations

import os
import resource
import socket
import subprocess
import time

import psutil

from harness.manifest import REPO, Server


def nofile_limit() -> int:
    return resource.getrlimit(resource.RLIMIT_NOFILE)[1]


def port_owner(host: str, port: int) -> str | None:
    """Who listens on host:port ('pid 123 (nginx)'), or None when the port is free."""
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
            return None
        except OSError:
            pass
    for conn in psutil.net_connections("tcp"):
        if conn.status == psutil.CONN_LISTEN and conn.laddr and conn.laddr.port == port and conn.pid:
            try:
                return f"pid {conn.pid} ({psutil.Process(conn.pid).name()})"
            except psutil.Error:
                return f"pid {conn.pid}"
    return "another process"


def pinned_child_setup(cpus: list[int]):
    """preexec_fn for children: pin to `cpus` and allow as many open files as the hard limit permits."""

    def setup() -> None:
        os.sched_setaffinity(0, cpus)
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))

    return setup


def process_create_time(pid: int) -> float | None:
    """psutil's start time of `pid` (None when it is gone): what RunningServer.pid_created records."""
    try:
        return psutil.Process(pid).create_time() if pid else None
    except psutil.Error:
        return None


def shell_output(command: str, cwd=REPO) -> str:
    """A shell command's output (stdout then stderr), or 'unknown (why)' when it could not run."""
    try:
        proc = subprocess.run(command, shell=True, cwd=cwd, capture_output=True, text=True, timeout=30)
        return (proc.stdout + proc.stderr).strip()
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"unknown ({exc})"


def server_version(server: Server) -> str:
    """The output of the server's `version` command, run on this host in its folder."""
    return " ".join(shell_output(server.version, server.folder).split()) if server.version else "unknown"


def wait_until(predicate, timeout_s: float, interval_s: float = 0.1) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval_s)
    return predicate()
