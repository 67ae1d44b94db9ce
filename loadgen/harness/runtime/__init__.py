"""Runtimes start and stop servers and run load tools, pinned to CPUs. `local` runs host processes."""
from __future__ import annotations

import json
import os
import resource
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Protocol

from harness.manifest import REPO, Server

STATE_DIR = REPO / ".run"
DEFAULT_UPSTREAM = "http://127.0.0.1:8000/weather.json"


class RuntimeError_(Exception):
    """A runtime could not do what was asked; the message says what to do."""


@dataclass
class RunningServer:
    name: str
    host: str
    port: int
    cpus: list[int]
    pid: int  # local: the process group leader; docker: the container's main process
    log: str
    started_at: float
    startup_s: float  # from start to the first correct answer on /id
    runtime: str
    container: str | None = None
    # the process's start time as the kernel reports it (psutil): with `pid`, identifies it. Wall-clock time is no
    # substitute: /proc's boot time drifts from time.time() (clock adjustments), and a recycled pid must not match
    pid_created: float | None = None

    def is_process(self, pid_created: float) -> bool:
        """Whether a process that started at `pid_created` (psutil's create_time) is this server's main process."""
        if self.pid_created is None:  # state written by an older harness
            return pid_created <= self.started_at + 1
        return abs(pid_created - self.pid_created) < 0.01

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}"


class Runtime(Protocol):
    name: str

    def start(self, server: Server, cpus: list[int], port: int, env: dict[str, str]) -> RunningServer: ...

    def stop(self, running: RunningServer) -> None: ...

    def alive(self, running: RunningServer) -> bool: ...

    def pin(self, running: RunningServer, cpus: list[int]) -> None:
        """Move a running server to other CPUs (nginx: upstream cores, or server cores while it is measured)."""

    def pids(self, running: RunningServer) -> list[int]:
        """Every process of the server, for sampling."""

    def tool_process(self, argv: list[str], cpus: list[int], output: Path):
        """Start a load tool pinned to `cpus`, stdout+stderr to `output`; returns a Popen."""

    def check_tools(self, tools: set[str]) -> None:
        """Raise when a load tool the run needs is not where this runtime runs it."""

    def version(self, server: Server) -> str:
        """The server's `version` command, run where the server runs (the host, or its image)."""

    def tool_versions(self) -> dict[str, str]:
        """ab, wrk and httperf as this runtime runs them."""

    def describe(self, running: RunningServer) -> dict:
        """Where the server runs, read back from the system (CPUs it may run on; container, image, limits)."""

    def conditions(self) -> dict:
        """The runtime's own conditions (engine, compose, the load generator's placement), for the run's record."""


class State:
    """Which servers are up (`make up` leaves them running for `make ping` and the test-* targets)."""

    def __init__(self, path: Path = STATE_DIR / "state.json"):
        self.path = path

    def load(self) -> dict[str, RunningServer]:
        if not self.path.exists():
            return {}
        data = json.loads(self.path.read_text())
        return {name: RunningServer(**entry) for name, entry in data.get("servers", {}).items()}

    def save(self, servers: dict[str, RunningServer]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps({"servers": {n: asdict(s) for n, s in servers.items()}}, indent=2))
        tmp.replace(self.path)

    def put(self, running: RunningServer) -> None:
        servers = self.load()
        servers[running.name] = running
        self.save(servers)

    def drop(self, name: str) -> None:
        servers = self.load()
        servers.pop(name, None)
        self.save(servers)


def pinned_child_setup(cpus: list[int]):
    """preexec_fn for children: pin to `cpus` and allow as many open files as the hard limit permits."""

    def setup() -> None:
        os.sched_setaffinity(0, cpus)
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))

    return setup


def indent(text: str) -> str:
    """Lines of a log or of a command's output, indented under an error message."""
    return "\n".join("    " + line for line in text.splitlines())


def process_create_time(pid: int) -> float | None:
    """psutil's start time of `pid` (None when it is gone): what RunningServer.pid_created records."""
    import psutil

    try:
        return psutil.Process(pid).create_time() if pid else None
    except psutil.Error:
        return None


def nofile_limit() -> int:
    return resource.getrlimit(resource.RLIMIT_NOFILE)[1]


def wait_until(predicate, timeout_s: float, interval_s: float = 0.1) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval_s)
    return predicate()


def wait_ready(server: Server, running: RunningServer, death, log_tail) -> None:
    """Until the server answers GET /id with its name. `death()` says why it died (None while alive); `log_tail()`
    gives the end of its log for the error message."""
    from harness import httpclient

    def answers() -> bool:
        why = death()
        if why:
            raise RuntimeError_(f"{server.name} {why} while starting; its log:\n{log_tail()}")
        try:
            response = httpclient.get(running.host, running.port, "/id", timeout=2)
        except (OSError, httpclient.HttpError):
            return False
        return response.status == 200 and response.text == server.name

    if not wait_until(answers, server.startup_timeout_s, interval_s=0.05):
        raise RuntimeError_(f"{server.name} did not answer GET /id with its name within {server.startup_timeout_s:g} s; "
                            f"its log:\n{log_tail()}")


def get_runtime(name: str) -> Runtime:
    """`local`, `docker`, or `auto` (the default): docker when a Docker engine answers and Compose is installed, else
    local; auto says which it chose and why."""
    name = (name or "auto").strip().lower()
    if name == "auto":
        from harness.console import say
        from harness.runtime.docker import compose_command, engine_answers

        answers, why = engine_answers()
        if answers:
            try:
                compose_command()
            except RuntimeError_ as exc:
                answers, why = False, f"{why}, but {exc}"
        name = "docker" if answers else "local"
        say(f"runtime: {name} (RUNTIME=auto: {why}; RUNTIME=local or RUNTIME=docker chooses)")
    if name == "local":
        from harness.runtime.local import LocalRuntime

        return LocalRuntime()
    if name == "docker":
        from harness.runtime.docker import DockerRuntime

        return DockerRuntime()
    raise RuntimeError_(f"unknown runtime {name!r}: use RUNTIME=auto (the default), docker or local")
