"""What every runtime and its callers share: the runtime's interface (`Runtime`), a running server's record
(`RunningServer`), its failure (`RuntimeFailure`) and how a process's end is told (`exit_reason`). What the harness
has running is runtime/state.py's; waiting for a started server, runtime/starting.py's."""

from __future__ import annotations

import signal
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import psutil

from harness.basics.machine import started_as
from harness.basics.messages import warn
from harness.basics.sampling import ProcessSampler
from harness.config.manifest import Server


class RuntimeFailure(Exception):
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
    # the process's start time as psutil gives it (wall clock): kept for reading, and for older harnesses' records
    pid_created: float | None = None
    engine: str | None = None  # hosts runtime: the Docker endpoint of the host it runs on
    h2c_port: int | None = None  # where it speaks cleartext HTTP/2 (started with H2C_PORT); None: HTTP/1.1 only
    # with `pid`, identifies the process: its start in clock ticks since boot (machine.kernel_start), which no step of
    # the wall clock moves, and which a recycled pid does not match
    pid_start: int | None = None
    artifacts: str | None = None  # config/manifest.py's artifacts_stamp when it started (None: not recorded)
    upstream_url: str | None = None  # the UPSTREAM_URL it was started with (a server that needs an upstream)

    def is_process(self, start_ticks: int) -> bool:
        """Whether a process that started at `start_ticks` (machine.kernel_start) is this server's main process."""
        return started_as(self.pid_start, self.pid_created, self.started_at)(start_ticks)

    def in_container(self) -> str:
        """The container it runs in, which every server a Docker runtime starts has: RuntimeFailure for one started as
        a process of this machine (the local runtime's record handed to an engine's)."""
        if self.container is None:
            raise RuntimeFailure(f"{self.name} was started by the {self.runtime} runtime: it runs in no container")
        return self.container

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def url(self, protocol: str | None = None) -> str:
        """The base URL a load of `protocol` goes to: the h2c port for "h2c", else the HTTP/1.1 one."""
        if protocol == "h2c":
            if not self.h2c_port:
                raise RuntimeFailure(f"{self.name} was started without an h2c port")
            return f"http://{self.host}:{self.h2c_port}"
        return self.base_url


class Sampler(Protocol):
    """What samples a server's or the load tools' CPU and memory while a load runs: basics/sampling.py's
    ProcessSampler, or a Docker engine's counters (containers/engine_api.py's EngineStatsSampler)."""

    def start(self) -> Sampler: ...

    def stop(self) -> dict[str, Any]:
        """The usage between start() and now (basics/sampling.py's `usage`)."""

    def cancel(self) -> None: ...


class ToolProcess(Protocol):
    """A load tool's process as the runner drives it: a subprocess.Popen on this machine, or a tool in the loadgen
    container whose output a `docker exec` client relays (containers/process.py), signalled in the container."""

    @property
    def pid(self) -> int: ...

    def poll(self) -> int | None: ...

    def wait(self, timeout: float | None = None) -> int: ...

    def send_signal(self, sig: int) -> None: ...

    def terminate(self) -> None: ...

    def kill(self) -> None: ...


class Runtime(Protocol):
    """Every capability a runtime has: callers call these, they never probe for one."""

    name: str
    # whether the servers and tools run on other machines (HOSTS): then this machine's CPUs, processes and ports are
    # not theirs, and nothing is checked or sampled here
    remote: bool

    def build_images(self, servers: list[Server], force: bool = False) -> None:
        """After `make build`: whatever this runtime runs the servers from, made from their artifacts."""

    def prepare(self) -> None:
        """Before ports are checked and the first server starts: what a killed run left behind that the state does
        not list cleared away (docker: its containers, and the loadgen container with the tools running in it; the
        session stops the servers and tools the state lists). Idempotent."""

    def start(
        self,
        server: Server,
        cpus: list[int],
        port: int,
        env: dict[str, str],
        listed: Callable[[RunningServer], None] | None = None,
    ) -> RunningServer:
        """The server started and answering; `listed(running)` is called as soon as its process exists, before the
        wait (so that a command killed meanwhile leaves it in the state); on any failure it is stopped."""

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

    def sampler(self, running: RunningServer, cores: int) -> Sampler:
        """What samples the server's CPU and memory while a load runs (harness/basics/sampling.py's interface)."""

    def tool_sampler(self, tree: Callable[[], list[int]], cpus: list[int]) -> Sampler:
        """What samples the load tools' CPU; `tree()` gives the pids of the tool processes this command started."""

    def tools_cpu_s(self) -> float | None:
        """CPU seconds that the load tools this runtime started have used so far, ended ones included, as the kernel
        counts them: a load's exact figure is the difference across it. None where only sampling sees them."""

    def pause(self, running: RunningServer, asleep: bool) -> None:
        """Freeze (asleep) or thaw an idle server (interleaved rounds)."""

    def tool_process(self, argv: list[str], cpus: list[int], output: Path) -> ToolProcess:
        """Start a load tool pinned to `cpus`, stdout+stderr to `output`."""

    def check_tools(self, tools: set[str]) -> None:
        """Raise when a load tool the run needs is not where this runtime runs it."""

    def version(self, server: Server) -> str:
        """The server's `version` command, run where the server runs (the host, or its image)."""

    def tool_versions(self) -> dict[str, str]:
        """ab, wrk and httperf as this runtime runs them."""

    def describe(self, running: RunningServer) -> dict[str, Any]:
        """Where the server runs, read back from the system (CPUs it may run on; container, image, limits)."""

    def conditions(self) -> dict[str, Any]:
        """The runtime's own conditions (engine, compose, the load generator's placement), for the run's record."""


class OnThisMachine:
    """What the local and the one-machine Docker runtime share: the servers are processes of this machine, reached on
    loopback, sampled with psutil and frozen with SIGSTOP/SIGCONT (the Docker runtime freezes through its engine
    instead: engine_runtime.py's pause)."""

    remote = False
    pids: Callable[[RunningServer], list[int]]  # each runtime's own (Runtime.pids)

    def address(self, role: str) -> str:
        return "127.0.0.1"

    def sampler(self, running: RunningServer, cores: int) -> ProcessSampler:
        return ProcessSampler(lambda: self.pids(running), cores, list(running.cpus))

    def tool_sampler(self, tree: Callable[[], list[int]], cpus: list[int]) -> ProcessSampler:
        return ProcessSampler(tree, len(cpus))

    def pause(self, running: RunningServer, asleep: bool) -> None:
        denied = []
        for pid in self.pids(running):
            try:
                psutil.Process(pid).suspend() if asleep else psutil.Process(pid).resume()
            except psutil.AccessDenied:
                denied.append(pid)  # another user's (a server `make up` started as root): said below
            except psutil.Error:
                pass  # gone: the next attempt on it fails and says so
        if denied:
            warn(
                f"could not {'freeze' if asleep else 'thaw'} {running.name}: this user may not signal its "
                f"process(es) {', '.join(map(str, denied))} (started by another user: make down, then run again as "
                f"one user)"
            )


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
