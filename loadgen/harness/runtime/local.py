"""The local runtime: servers and tools as host processes, pinned to their CPUs (taskset)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

import psutil

from harness.basics import interrupt
from harness.basics.machine import (
    kernel_start,
    pinned,
    port_owner,
    process_create_time,
    shell_output,
    still_runs,
    wall_clock,
)
from harness.basics.paths import STATE_DIR
from harness.basics.sampling import children_cpu_s
from harness.config.manifest import Server
from harness.runtime.child_tool import ChildTool
from harness.runtime.protocol import OnThisMachine, RunningServer, RuntimeFailure, exit_reason, indent
from harness.runtime.starting import await_start
from harness.tools import TOOLS, find_binary, tool_version
from harness.tools.availability import check_tools

STOP_GRACE_S = 15


def _group_survivors(running: RunningServer) -> list[int]:
    """Processes still in the server's process group after its leader died, started no earlier than the leader. None
    when another process holds the leader's pid: the kernel reuses a pgid only once its whole group is gone, so that
    group is someone else's (a stale entry's pid, recycled)."""
    holder = kernel_start(running.pid)
    if holder is not None and not running.is_process(holder):
        return []
    out = []
    for pid in psutil.pids():
        start = kernel_start(pid)
        try:
            if start is not None and os.getpgid(pid) == running.pid and _not_before(running, start):
                out.append(pid)
        except OSError:
            continue
    return out


def _not_before(running: RunningServer, start: int) -> bool:
    """Whether a process that started at `start` (kernel ticks) started no earlier than the server's leader."""
    if running.pid_start is not None:
        return start >= running.pid_start
    return wall_clock(start) >= (running.pid_created or running.started_at) - 0.01  # an older harness's record


def log_tail(path: str | Path, lines: int = 15) -> str:
    try:
        text = Path(path).read_text(errors="replace").rstrip().splitlines()
    except OSError:
        return "(no log)"
    return indent("\n".join(text[-lines:]) or "(empty log)")


def spawn_server(
    argv: list[str], cpus: list[int], folder: Path, env: dict[str, str], log: IO[bytes]
) -> subprocess.Popen[bytes]:
    """A server process: `argv` pinned to `cpus`, run in `folder`, its output into the open `log`, in a process group of
    its own (what `LocalRuntime.stop` kills whole) and with no stdin."""
    return subprocess.Popen(
        pinned(argv, cpus),
        cwd=folder,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
    )


def _check_ports_free(server: Server, host: str, port: int, env: dict[str, str]) -> None:
    """RuntimeFailure naming who holds the server's port (or its h2c port), before anything starts."""
    for kind, taken in (("port", port), ("h2c port", int(env.get("H2C_PORT") or 0))):
        owner = taken and port_owner(host, taken)
        if owner:
            raise RuntimeFailure(
                f"cannot start {server.name}: {kind} {taken} is in use by {owner}. "
                f'Stop it (make down, if it is ours) or choose another port: PORTS="{server.name}=<port>"'
            )


def _command(
    server: Server, cpus: list[int], port: int, env: dict[str, str], run_dir: Path
) -> tuple[list[str], dict[str, str]]:
    """The server's `run` with its placeholders filled, and its environment; RuntimeFailure when its program is not
    there (not built)."""
    host = env.get("HOST", "127.0.0.1")
    values = {
        "port": str(port),
        "host": host,
        "cores": str(len(cpus)),
        "run_dir": str(run_dir),
        "upstream_url": env.get("UPSTREAM_URL", ""),
    }
    argv = [arg.format(**values) for arg in server.run]
    child_env = {
        **os.environ,
        **server.env,
        **env,
        "PORT": str(port),
        "HOST": host,
        "SERVER_CORES": str(len(cpus)),
        "RUN_DIR": str(run_dir),
    }
    program = argv[0] if "/" not in argv[0] else str(server.folder / argv[0])
    if not shutil.which(program, path=os.environ.get("PATH") if "/" not in argv[0] else None):
        raise RuntimeFailure(
            f"cannot start {server.name}: {argv[0]} is not there (in {server.folder}). Did `make build` run?"
        )
    return argv, child_env


class LocalRuntime(OnThisMachine):
    name = "local"

    def __init__(self) -> None:
        # The servers this runtime started, by pid, kept so that only `death` reaps them: a Popen dropped while its
        # process runs is reaped by the next Popen's clean-up instead, and the exit status is lost with it.
        self._children: dict[int, subprocess.Popen[bytes]] = {}

    def build_images(self, servers: list[Server], force: bool = False) -> None:
        """Nothing to build: local servers run from the artifacts `make build` made in their folders."""

    def prepare(self) -> None:
        """Nothing of its own to clear: the servers and tools a killed run left are in the state, and the session stops
        them."""

    def start(
        self,
        server: Server,
        cpus: list[int],
        port: int,
        env: dict[str, str],
        listed: Callable[[RunningServer], None] | None = None,
    ) -> RunningServer:
        host = env.get("HOST", "127.0.0.1")
        _check_ports_free(server, host, port, env)
        run_dir = STATE_DIR / server.name
        run_dir.mkdir(parents=True, exist_ok=True)
        log = run_dir / "server.log"
        argv, child_env = _command(server, cpus, port, env, run_dir)
        started = time.monotonic()
        proc: subprocess.Popen[bytes] | None = None
        try:
            with log.open("wb") as log_file, interrupt.deferred():  # a Ctrl-C during the Popen raises with `proc` set
                try:
                    proc = spawn_server(argv, cpus, server.folder, child_env, log_file)
                except OSError as exc:
                    raise RuntimeFailure(f"cannot start {server.name}: {exc}. Did `make build` run?") from exc
            self._children[proc.pid] = proc
            running = RunningServer(
                name=server.name,
                host=host,
                port=port,
                cpus=list(cpus),
                pid=proc.pid,
                log=str(log),
                started_at=time.time(),
                startup_s=0.0,
                runtime=self.name,
                pid_created=process_create_time(proc.pid),
                pid_start=kernel_start(proc.pid),
                h2c_port=int(env["H2C_PORT"]) if env.get("H2C_PORT") else None,
            )
        except BaseException:  # a Ctrl-C before await_start, which stops it from here on: not yet listed, so now
            if proc is not None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
            raise
        return await_start(self, server, running, started, listed=listed)

    def alive(self, running: RunningServer) -> bool:
        return still_runs(running.pid, running.is_process)

    def death(self, running: RunningServer) -> str | None:
        """A server this runtime started is its child: its exit status says how it ended. One started by another
        command (`make up`) is not: then only that it is gone."""
        proc = self._children.get(running.pid)
        if proc is None:
            return None if self.alive(running) else "gone (started by another command: its exit status is unknown)"
        returncode = proc.poll()
        return None if returncode is None else exit_reason(returncode)

    def log_tail(self, running: RunningServer, lines: int = 15) -> str:
        return log_tail(running.log, lines)

    def pids(self, running: RunningServer) -> list[int]:
        if not self.alive(running):
            return []
        leader = psutil.Process(running.pid)
        return [leader.pid, *(child.pid for child in leader.children(recursive=True))]

    def pin(self, running: RunningServer, cpus: list[int]) -> None:
        for pid in self.pids(running):
            try:
                for thread in psutil.Process(pid).threads():  # affinity is per thread on Linux
                    os.sched_setaffinity(thread.id, cpus)
            except (psutil.Error, OSError):
                pass
        running.cpus = list(cpus)

    def stop(self, running: RunningServer) -> None:
        """SIGTERM to the server's process group, SIGKILL to whatever is left after a grace period."""
        self._children.pop(running.pid, None)  # psutil reaps it below
        pids = self.pids(running) or _group_survivors(running)  # a dead leader's workers (node's cluster) live on
        if not pids:
            return
        try:
            os.killpg(running.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        procs = []
        for pid in pids:
            try:
                procs.append(psutil.Process(pid))
            except psutil.NoSuchProcess:
                pass  # already gone after SIGTERM: nothing to wait for
        _, alive = psutil.wait_procs(procs, timeout=STOP_GRACE_S)
        for proc in alive:
            try:
                proc.kill()
            except psutil.Error:
                pass
        psutil.wait_procs(alive, timeout=5)

    def tools_cpu_s(self) -> float | None:
        return children_cpu_s()  # the tools are this process's children

    def tool_process(self, argv: list[str], cpus: list[int], output: Path) -> ChildTool:
        return ChildTool(pinned(argv, cpus), output)

    def check_tools(self, tools: set[str]) -> None:
        check_tools(tools)

    def version(self, server: Server) -> str:
        return server_version(server)

    def tool_versions(self) -> dict[str, str]:
        return {
            name: tool_version(tool.binary, list(tool.version_args))
            for name, tool in TOOLS.items()
            if find_binary(tool)
        }

    def describe(self, running: RunningServer) -> dict[str, Any]:
        """The CPUs each of the server's processes may run on, as the kernel reports them."""
        allowed: set[int] = set()
        pids = self.pids(running)
        for pid in pids:
            try:
                allowed.update(psutil.Process(pid).cpu_affinity())
            except psutil.Error:
                pass
        return {"pid": running.pid, "processes": len(pids), "allowed_cpus": sorted(allowed)}

    def conditions(self) -> dict[str, Any]:
        return {}


def server_version(server: Server) -> str:
    """The output of the server's `version` command, run on this host in its folder."""
    return " ".join(shell_output(server.version, server.folder).split()) if server.version else "unknown"
