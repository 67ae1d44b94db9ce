"""What every runtime and its callers share: the runtime's interface (`Runtime`), a running server's record
(`RunningServer`), which servers are up (`State`), and waiting for a started server to answer."""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Protocol

from harness import httpclient
from harness.host import wait_until
from harness.manifest import REPO, Server

STATE_DIR = REPO / ".run"


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
    """Every capability a runtime has: callers call these, they never probe for one."""

    name: str
    # whether load tools are this process's children, so that RUSAGE_CHILDREN counts their CPU time exactly
    tools_are_children: bool

    def build_images(self, servers: list[Server], force: bool = False) -> None:
        """After `make build`: whatever this runtime runs the servers from, made from their artifacts."""

    def prepare(self) -> None:
        """Before ports are checked and the first server starts: whatever a killed run left behind cleared away.
        Idempotent."""

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


def indent(text: str) -> str:
    """Lines of a log or of a command's output, indented under an error message."""
    return "\n".join("    " + line for line in text.splitlines())


def wait_ready(server: Server, running: RunningServer, death, log_tail) -> None:
    """Until the server answers GET /id with its name. `death()` says why it died (None while alive); `log_tail()`
    gives the end of its log for the error message."""

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
