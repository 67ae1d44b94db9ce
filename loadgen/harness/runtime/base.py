"""What every runtime and its callers share: the runtime's interface (`Runtime`), a running server's record
(`RunningServer`), what the harness has running (`State`: servers and load tools, with the command that
started each), and waiting for a started server to answer."""
from __future__ import annotations

import json
import os
import shlex
import signal
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Protocol

import psutil

from harness import httpclient
from harness.host import process_create_time, wait_until
from harness.manifest import REPO, Server
from harness.sampling import ProcessSampler

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
    engine: str | None = None  # hosts runtime: the Docker endpoint of the host it runs on
    h2c_port: int | None = None  # where it speaks cleartext HTTP/2 (started with H2C_PORT); None: HTTP/1.1 only

    def is_process(self, pid_created: float) -> bool:
        """Whether a process that started at `pid_created` (psutil's create_time) is this server's main process."""
        if self.pid_created is None:  # state written by an older harness
            return pid_created <= self.started_at + 1
        return abs(pid_created - self.pid_created) < 0.01

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def url(self, protocol: str | None = None) -> str:
        """The base URL a load of `protocol` goes to: the h2c port for "h2c", else the HTTP/1.1 one."""
        if protocol == "h2c":
            if not self.h2c_port:
                raise RuntimeError_(f"{self.name} was started without an h2c port")
            return f"http://{self.host}:{self.h2c_port}"
        return self.base_url


class Runtime(Protocol):
    """Every capability a runtime has: callers call these, they never probe for one."""

    name: str
    # whether load tools are this process's children, so that RUSAGE_CHILDREN counts their CPU time exactly
    tools_are_children: bool
    # whether the servers and tools run on other machines (HOSTS): then this machine's CPUs, processes and ports are
    # not theirs, and nothing is checked or sampled here
    remote: bool

    def build_images(self, servers: list[Server], force: bool = False) -> None:
        """After `make build`: whatever this runtime runs the servers from, made from their artifacts."""

    def prepare(self) -> None:
        """Before ports are checked and the first server starts: what a killed run left behind that the state does
        not list cleared away (docker: its containers, and the loadgen container with the tools running in it; the
        session stops the servers and tools the state lists). Idempotent."""

    def start(self, server: Server, cpus: list[int], port: int, env: dict[str, str]) -> RunningServer: ...

    def stop(self, running: RunningServer) -> None: ...

    def alive(self, running: RunningServer) -> bool: ...

    def death(self, running: RunningServer) -> str | None:
        """Why the server is gone, as its system says ("killed by signal 9 (SIGKILL)", "exited with code 1", "killed
        for memory (OOMKilled)"); None while it runs (a stopped, SIGSTOP'd server runs). Cheap: called around every
        attempt."""

    def log_tail(self, running: RunningServer, lines: int = 15) -> str:
        """The last `lines` of the server's output, indented for an error message (also once it has died)."""

    def pin(self, running: RunningServer, cpus: list[int]) -> None:
        """Move a running server to other CPUs (nginx: upstream cores, or server cores while it is measured)."""

    def pids(self, running: RunningServer) -> list[int]:
        """Every process of the server, as this machine sees them (none when it runs on another)."""

    def address(self, role: str) -> str:
        """Where the other roles reach the services of `role` (server, upstream): 127.0.0.1 on one machine."""

    def sampler(self, running: RunningServer, cores: int):
        """What samples the server's CPU and memory while a load runs (harness/sampling.py's interface)."""

    def tool_sampler(self, tree, cpus: list[int]):
        """What samples the load tools' CPU; `tree()` gives the pids of the tool processes this command started."""

    def pause(self, running: RunningServer, asleep: bool) -> None:
        """Freeze (asleep) or thaw an idle server (interleaved rounds)."""

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


class OnThisMachine:
    """What the local and the one-machine Docker runtime share: the servers are processes of this machine, reached on
    loopback, sampled with psutil and frozen with SIGSTOP/SIGCONT."""

    remote = False

    def address(self, role: str) -> str:
        return "127.0.0.1"

    def sampler(self, running: RunningServer, cores: int) -> ProcessSampler:
        return ProcessSampler(lambda: self.pids(running), cores)

    def tool_sampler(self, tree, cpus: list[int]) -> ProcessSampler:
        return ProcessSampler(tree, len(cpus))

    def pause(self, running: RunningServer, asleep: bool) -> None:
        for pid in self.pids(running):
            try:
                psutil.Process(pid).suspend() if asleep else psutil.Process(pid).resume()
            except psutil.Error:
                pass  # gone: the next attempt on it fails and says so


def _is_running(pid: int, created: float | None) -> bool:
    """Whether `pid` is still the process that started at `created` (psutil's create_time), and not a zombie."""
    try:
        proc = psutil.Process(pid)
        return (created is not None and abs(proc.create_time() - created) < 0.01
                and proc.status() != psutil.STATUS_ZOMBIE)
    except psutil.Error:
        return False


@dataclass
class Starter:
    """The harness command that started a server or a load tool, and whether it meant to leave it running (`make up`)."""

    pid: int
    pid_created: float | None
    command: str
    keep: bool = False

    @classmethod
    def this_command(cls, keep: bool = False) -> Starter:
        return cls(os.getpid(), process_create_time(os.getpid()), shlex.join(sys.orig_argv), keep)

    def ended(self) -> bool:
        return not _is_running(self.pid, self.pid_created)

    def __str__(self) -> str:
        return f"pid {self.pid} ({self.command})"


@dataclass
class ToolProcess:
    """A load tool listed while it runs (docker: the tool as the host sees it, or its `docker exec` client when the
    tool has not shown up yet; stopping the loadgen container stops it anyway)."""

    pid: int
    pid_created: float | None
    argv: list[str]
    started_by: Starter

    def running(self) -> bool:
        return _is_running(self.pid, self.pid_created)


class State:
    """What the harness has running, in .run/state.json: the servers that are up (`make up` leaves them running for
    `make ping` and the test-* targets) and the load tools while they run, each with the command that started it. A
    command that is killed cannot stop them; the next one finds them here (`leftover_servers`, `leftover_tools`).

    Rewritten through a temporary file and a rename, so a killed harness leaves the old file or the new one, never
    half of one. Not fsynced: after a power cut the processes it lists are gone too."""

    def __init__(self, path: Path = STATE_DIR / "state.json"):
        self.path = path

    def _read(self) -> dict:
        try:
            data = json.loads(self.path.read_text()) if self.path.exists() else {}
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise self.corrupt(f"is not valid JSON ({exc})") from None
        if not isinstance(data, dict):
            raise self.corrupt("does not hold a JSON object")
        return data

    def corrupt(self, what: str) -> RuntimeError_:
        return RuntimeError_(f"{self.path} {what}: it lists the servers and tools the harness started. Stop any still "
                             f"running (`ss -ltnp` shows who holds the servers' ports), then delete it: rm {self.path}")

    def _write(self, data: dict) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(data, indent=2))
        tmp.replace(self.path)

    def load(self) -> dict[str, RunningServer]:
        try:
            return {name: RunningServer(**entry) for name, entry in self._read().get("servers", {}).items()}
        except (TypeError, AttributeError) as exc:
            raise self.corrupt(f"has a server entry this harness cannot read ({exc})") from None

    def put(self, running: RunningServer, keep: bool = False) -> None:
        """`running` listed as started by this command; `keep`: it is meant to outlive the command (`make up`)."""
        data = self._read()
        data.setdefault("servers", {})[running.name] = asdict(running)
        data.setdefault("started_by", {})[running.name] = asdict(Starter.this_command(keep))
        self._write(data)

    def drop(self, name: str) -> None:
        data = self._read()
        for key in ("servers", "started_by"):
            data.get(key, {}).pop(name, None)
        self._write(data)

    def leftover_servers(self) -> dict[str, tuple[RunningServer, Starter]]:
        """Servers whose command ended without stopping them though it did not mean to keep them: it was killed.
        (A server listed by an older harness, with no starter, counts as left up on purpose.)"""
        starters = self._read().get("started_by", {})
        out = {}
        for name, running in self.load().items():
            try:
                starter = Starter(**starters[name]) if name in starters else None
            except TypeError as exc:
                raise self.corrupt(f"has a starter entry this harness cannot read ({exc})") from None
            if starter and not starter.keep and starter.ended():
                out[name] = (running, starter)
        return out

    def add_tool(self, pid: int, argv: list[str]) -> None:
        data = self._read()
        tool = ToolProcess(pid, process_create_time(pid), list(argv), Starter.this_command())
        data.setdefault("tools", []).append(asdict(tool))
        self._write(data)

    def tools(self) -> list[ToolProcess]:
        try:
            return [ToolProcess(**{**t, "started_by": Starter(**t["started_by"])}) for t in self._read().get("tools", [])]
        except (TypeError, AttributeError, KeyError) as exc:
            raise self.corrupt(f"has a tool entry this harness cannot read ({exc!r})") from None

    def leftover_tools(self) -> list[ToolProcess]:
        """Tools whose command ended while they ran (it was killed): they may still be loading a server."""
        return [t for t in self.tools() if t.started_by.ended()]

    def drop_tools(self, starter: Starter | None = None) -> None:
        """Every tool listed by `starter` (default: this command) taken off the list: they have ended."""
        starter = starter or Starter.this_command()
        data = self._read()
        if data.get("tools"):
            data["tools"] = [t for t in data["tools"]
                             if (t["started_by"]["pid"], t["started_by"]["pid_created"]) != (starter.pid, starter.pid_created)]
            self._write(data)


def indent(text: str) -> str:
    """Lines of a log or of a command's output, indented under an error message."""
    return "\n".join("    " + line for line in text.splitlines())


def exit_reason(returncode: int) -> str:
    """A process's end in words, from its status as subprocess reports it (negative: the signal that killed it) or as
    a shell or container init does (128 + the signal)."""
    signal_no = -returncode if returncode < 0 else returncode - 128 if 128 < returncode <= 128 + 64 else None
    if signal_no is None:
        return f"exited with code {returncode}"
    try:
        name = signal.Signals(signal_no).name
    except ValueError:
        name = "unknown signal"
    killed = f"killed by signal {signal_no} ({name})"
    return killed if returncode < 0 else f"{killed} (exit code {returncode})"


def await_start(runtime: Runtime, server: Server, running: RunningServer, began: float, read_cpus=None) -> RunningServer:
    """The end of every runtime's `start`: until the server answers GET /id (`wait_ready`), then its CPU set read back
    (`read_cpus()`, where the runtime can); on any failure, Ctrl-C included, the server is stopped. `began`: when the
    start began (time.monotonic()), for `startup_s`."""
    try:
        wait_ready(server, running, lambda: runtime.death(running), lambda: runtime.log_tail(running))
        if read_cpus:
            running.cpus = read_cpus()
    except BaseException:
        runtime.stop(running)
        raise
    running.startup_s = round(time.monotonic() - began, 3)
    return running


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
        return response.status == 200 and response.text == server.identity

    if not wait_until(answers, server.startup_timeout_s, interval_s=0.05, interruptible=True):
        raise RuntimeError_(f"{server.name} did not answer GET /id with its name within {server.startup_timeout_s:g} s; "
                            f"its log:\n{log_tail()}")
