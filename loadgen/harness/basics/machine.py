"""Facts about the machine the harness runs on, and helpers for its processes: the open-file limit, who holds a port,
pinning a child to CPUs, a process's start time, waiting for a condition.

A leaf: the runtimes, the preflight checks and the run's conditions all read these, and it imports none of them."""

from __future__ import annotations

import os
import resource
import socket
import subprocess
import time
from collections.abc import Callable, Iterable
from pathlib import Path

import psutil

from harness.basics import interrupt
from harness.basics.paths import REPO


def nofile_limit() -> int:
    return resource.getrlimit(resource.RLIMIT_NOFILE)[1]


def port_owner(host: str, port: int) -> str | None:
    """Who listens on host:port ('pid 123 (nginx)'), or None when the port is free. A port can also be held by a
    client socket's local end: the kernel hands out its ephemeral range (ip_local_port_range) to outgoing
    connections, and a server cannot bind a port one of them holds; said as such, with the range to stay out of."""
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
            return None
        except OSError:
            pass
    connections = psutil.net_connections("tcp")
    for conn in connections:
        if conn.status == psutil.CONN_LISTEN and conn.laddr and conn.laddr.port == port and conn.pid:
            return _named(conn.pid)
    client = next((c for c in connections if c.status != psutil.CONN_LISTEN and c.laddr and c.laddr.port == port), None)
    if client is not None:
        low, high = ephemeral_ports()
        holder = _named(client.pid) if client.pid else "a process"
        return (
            f"{holder}, as the local end of a connection (the kernel's ephemeral ports {low}-{high} are lent to "
            f"outgoing connections: choose a port outside them)"
        )
    return "another process"


def _named(pid: int) -> str:
    try:
        return f"pid {pid} ({psutil.Process(pid).name()})"
    except psutil.Error:
        return f"pid {pid}"


def ephemeral_ports() -> tuple[int, int]:
    """The range the kernel draws outgoing connections' local ports from (Linux's default when unreadable)."""
    try:
        low, high = Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()
        return int(low), int(high)
    except (OSError, ValueError):
        return 32768, 60999


def pinned(argv: list[str], cpus: Iterable[int]) -> list[str]:
    """`argv` run pinned to `cpus` from its first instruction (a JVM sizes its pools from the CPUs it may use at
    start): through taskset, which sets the affinity and execs, so the pid is the program's. Not a preexec_fn: Python
    documents those as unsafe beside threads (the samplers'), and a Ctrl-C that lands in its at-fork handlers is
    printed as ignored and lost."""
    return ["taskset", "-c", ",".join(str(c) for c in sorted(cpus)), *argv]


def allow_open_files() -> None:
    """The soft open-file limit raised to the hard one, for this process and every child it starts (ab and wrk hold a
    descriptor per connection; the servers one per client)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def _stat(pid: int) -> list[str] | None:
    """/proc/<pid>/stat's fields from the state on (field 3; the name before it may hold spaces); None when gone."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split() if pid and pid > 0 else None
    except OSError:
        return None


def kernel_start(pid: int) -> int | None:
    """When `pid` started, in clock ticks since boot (field 22 of /proc/<pid>/stat), zombies included; None when gone.
    The kernel's own count: no step of the wall clock (date -s, NTP, a VM's migration) moves it, where psutil's
    create_time adds the boot time /proc/stat derives from the wall clock."""
    fields = _stat(pid)
    return int(fields[19]) if fields else None


def wall_clock(ticks: int) -> float:
    """A kernel start time as psutil's create_time gives it (seconds since the epoch): for records of older harnesses."""
    return psutil.boot_time() + ticks / CLOCK_TICKS


def started_as(
    ticks: int | None, created: float | None = None, started_at: float | None = None
) -> Callable[[int], bool]:
    """The test a process's kernel start time must pass to be the process recorded: the same tick; for a record of
    an older harness (no ticks), its wall-clock create_time to 10 ms, or else a start by `started_at`."""
    if ticks is not None:
        return lambda start: start == ticks
    if created is not None:
        return lambda start: abs(wall_clock(start) - created) < 0.01
    return lambda start: started_at is not None and wall_clock(start) <= started_at + 1


def still_runs(pid: int, is_it: Callable[[int], bool] | None = None) -> bool:
    """Whether `pid` is a live process (not a zombie) and, given `is_it(kernel_start)`, still the one we started: a
    pid the kernel recycled for another process is not ours. The one test of "is this still our process"."""
    fields = _stat(pid)
    if not fields:
        return False
    return fields[0] not in ("Z", "X") and (is_it is None or is_it(int(fields[19])))


def timestamp(at: float | None = None) -> str:
    """A moment as results and conditions write it: local time, ISO 8601 with its offset."""
    return time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(at))


def process_create_time(pid: int) -> float | None:
    """psutil's start time of `pid` (None when it is gone): what RunningServer.pid_created records, for reading only
    (the identity is `kernel_start`)."""
    try:
        return psutil.Process(pid).create_time() if pid else None
    except psutil.Error:
        return None


def shell_output(command: str, cwd: Path = REPO) -> str:
    """A shell command's output (stdout then stderr), or 'unknown (why)' when it could not run."""
    try:
        proc = subprocess.run(command, shell=True, cwd=cwd, capture_output=True, text=True, timeout=30)
        return (proc.stdout + proc.stderr).strip()
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"unknown ({exc})"


def wait_until(
    predicate: Callable[[], object], timeout_s: float, interval_s: float = 0.1, interruptible: bool = False
) -> bool:
    """Whether `predicate` became true within `timeout_s`. `interruptible`: a Ctrl-C whose exception was lost still
    ends the wait (harness.basics.interrupt); clean-up waits are not."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        if interruptible:
            interrupt.check()
        time.sleep(interval_s)
    return bool(predicate())
