"""The Docker runtimes are one engine-backed runtime, `EngineRuntime`, told where each role runs (`Place`: the engine
of its host, as the Docker CLI addresses it). One machine (one_host.py: DockerRuntime, RUNTIME=docker) is the case
of one host: every role on the local engine, the containers started through Compose. Several hosts (several_hosts.py:
HostsRuntime, HOSTS=...) start them with `docker run` on each role's engine. Both start containers described by
service.py's Service. Everything else is here, once: what a killed run left removed, a server's container started,
its CPU set read back, its death as the engine tells it, its log, stopping it, the loadgen container's life, the
tools' versions, what the records show of a container."""

from __future__ import annotations

import atexit
import shlex
import subprocess
import time
from collections.abc import Callable
from typing import Any

from harness.basics.cpus import format_cpus, parse_cpus
from harness.basics.machine import kernel_start, process_create_time, still_runs
from harness.basics.messages import warn
from harness.basics.paths import REPO, STATE_DIR
from harness.config.host_roles import ROLES
from harness.config.manifest import Server
from harness.containers.engine import container_facts, container_log, follow_log, image_bytes, inspect, run_cli
from harness.containers.images import (
    LOADGEN,
    ensure_runtime_images,
    ensure_server_image,
    runtime_image,
    version_in_image,
)
from harness.containers.service import Place, container_name, container_path, privilege_options, role_of
from harness.runtime.protocol import RunningServer, RuntimeFailure, exit_reason
from harness.runtime.starting import await_start
from harness.runtime.state import State
from harness.tools import TOOLS

ENGINE_SETTLE_S = 5  # the engine notes a container's exit a moment after its main process is gone


def _engine_runs(info: dict[str, Any], running: RunningServer) -> bool:
    """Whether the engine says the container runs (its main process the one recorded, where one was)."""
    return bool(info["State"]["Running"] and running.pid in (0, info["State"]["Pid"]))


class EngineRuntime:
    """What both Docker runtimes are. A subclass says where each role runs (`place`, `place_of`), what must hold
    before a server's container is made (`_ready`), how one is started (`_start_server`, `_start_loadgen`) and removed
    (`_remove_server`), and whether this machine sees the containers' processes (`remote`)."""

    name: str
    remote: bool
    checkout_label: str  # the container label that names the checkout it was made from: ours say REPO (`_owner`)
    loadgen_tools: tuple[str, ...] | None = None  # the tools the loadgen image runs (None: all of TOOLS)
    tool_mounts: tuple[str, ...] = ()  # what a throwaway loadgen container mounts to reach the tools

    def __init__(self) -> None:
        self._followers: dict[str, subprocess.Popen[bytes]] = {}
        self._prepared = False
        self._loadgen_started = False

    # where each role runs, and how a container is started there: the subclass's -------------------------------------
    def place(self, role: str) -> Place:
        raise NotImplementedError

    def place_of(self, running: RunningServer) -> Place:
        """The place of a running server's engine; RuntimeFailure when it is no longer one of this runtime's."""
        raise NotImplementedError

    def _ready(self, server: Server, place: Place, port: int) -> None:
        """What must hold before the server's container is made (its image there, its port free)."""

    def _start_server(self, server: Server, place: Place, cpus: list[int], port: int, env: dict[str, str]) -> int:
        """The server's container started (RuntimeFailure if not); the pid of its main process where this machine
        sees it, else 0."""
        raise NotImplementedError

    def _start_loadgen(self, place: Place, cpus: list[int]) -> None:
        raise NotImplementedError

    def _remove_server(self, running: RunningServer, place: Place) -> None:
        """The server's container stopped and removed, with what belongs to it."""
        raise NotImplementedError

    def _servers_left(self, running: RunningServer) -> bool:
        """Whether servers other than `running` still run (then the loadgen container stays)."""
        raise NotImplementedError

    def _loadgen_busy(self) -> bool:
        """Whether a tool of another command runs in the loadgen container (where this machine can tell)."""
        return False

    def _owner(self) -> tuple[str, str]:
        """The label (key, value) that our containers carry and no other harness's: the checkout's path on one
        machine (its engine is this machine's); on several hosts, this machine's and checkout's id (ownership.py)."""
        return self.checkout_label, str(REPO)

    def _is_ours(self, info: dict[str, Any]) -> bool:
        key, value = self._owner()
        return (info["Config"].get("Labels") or {}).get(key) == value

    def _refuse_theirs(self, info: dict[str, Any], place: Place, what: str) -> None:
        """RuntimeFailure when `info` is a running container of another checkout or harness machine."""
        if info["State"]["Running"] and not self._is_ours(info):
            labels = info["Config"].get("Labels") or {}
            name = info["Name"].lstrip("/")
            shown = dict.fromkeys([self._owner()[0], "bench.checkout"])  # which checkout, which harness
            origin = ", ".join(f"{k}={labels[k]}" for k in shown if k in labels)
            raise RuntimeFailure(
                f"cannot start {what}: the container {name}{place.on} is running from another "
                f"checkout or harness machine ({origin or 'unknown'}); stop it there (make down) or: "
                f"{shlex.join(['docker', *place.args, 'rm', '-f', name])}"
            )

    def _kernel_cpus(self, container: str, pid: int, place: Place) -> list[int]:
        """The CPUs the kernel lets the container's main process run on, as its /proc/1/status says ([]: unread)."""
        proc = self.docker(place, "exec", container, "grep", "Cpus_allowed_list", "/proc/1/status", check=False)
        return list(parse_cpus(proc.stdout.decode().partition(":")[2].strip())) if proc.returncode == 0 else []

    # the engines ---------------------------------------------------------------------------------------------------
    def docker(
        self, place: Place, *args: str, timeout: float = 120, check: bool = True, input: bytes | None = None
    ) -> subprocess.CompletedProcess[bytes]:
        return run_cli(["docker", *place.args, *args], timeout=timeout, check=check, input=input)

    def places(self) -> list[Place]:
        """Each engine once."""
        return list({p.args: p for p in (self.place(role) for role in ROLES)}.values())

    def address(self, role: str) -> str:
        return self.place(role).address

    def _main_process_runs(self, running: RunningServer) -> bool | None:
        """Whether the container's main process, as the harness recorded it, still runs (a recycled pid does not);
        None where it runs on another machine."""
        return None if self.remote else still_runs(running.pid, running.is_process)

    # the Runtime protocol ------------------------------------------------------------------------------------------
    def prepare(self) -> None:
        """Before the first container starts or stops: the containers a killed run left behind removed (they hold
        ports; the loadgen container any load tool still running in it). Once; later calls do nothing."""
        if self._prepared:
            return
        self._remove_unknown_containers()
        self._prepared = True

    def _remove_unknown_containers(self) -> None:
        """On every engine, this checkout's containers that the harness's state does not list (another checkout's
        are not ours to remove); the loadgen container is never listed: a command removes it when it ends."""
        known = {e.container for e in State().load().values() if e.runtime == self.name}
        key, value = self._owner()
        for place in self.places():
            proc = self.docker(
                place, "ps", "-a", "--filter", f"label={key}={value}", "--format", "{{.Names}}", check=False, timeout=30
            )
            for name in proc.stdout.decode().split():
                if name not in known:
                    warn(
                        f"removing the leftover container {name}{place.on} (not in the harness's state: a run that "
                        f"was killed?)"
                    )
                    self.docker(place, "rm", "-f", "-v", name, check=False)

    def _remove_leftover(self, server: Server, place: Place) -> None:
        """A container by the server's name that the state does not list, removed; one that runs from another
        checkout (or another harness machine's) is refused."""
        name = container_name(server.name)
        info = inspect(name, place.args)
        if info is None:
            return
        self._refuse_theirs(info, place, server.name)
        state = "running" if info["State"]["Running"] else info["State"]["Status"]
        warn(f"removing the leftover container {name}{place.on} ({state}; not in the harness's state)")
        self.docker(place, "rm", "-f", "-v", name, check=False)

    def start(
        self,
        server: Server,
        cpus: list[int],
        port: int,
        env: dict[str, str],
        listed: Callable[[RunningServer], None] | None = None,
    ) -> RunningServer:
        self.prepare()
        place, name = self.place(role_of(server)), container_name(server.name)
        ensure_server_image(server)
        self._remove_leftover(server, place)
        self._ready(server, place, port)
        log = STATE_DIR / server.name / "server.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        log.write_bytes(b"")
        started = time.monotonic()
        try:
            pid = self._start_server(server, place, cpus, port, env)
        except RuntimeFailure as exc:
            said = container_log(name, where=place.args) if inspect(name, place.args) else "    (no container)"
            self.docker(place, "rm", "-f", "-v", name, check=False)
            raise RuntimeFailure(f"cannot start {server.name}{place.on}: {exc}\n  its log:\n{said}") from None
        running = RunningServer(
            name=server.name,
            host=place.address,
            port=port,
            cpus=list(cpus),
            pid=pid,
            log=str(log),
            started_at=time.time(),
            startup_s=0.0,
            runtime=self.name,
            container=name,
            pid_created=process_create_time(pid) if pid else None,
            engine=place.endpoint,
            pid_start=None if self.remote else kernel_start(pid),
            h2c_port=int(env["H2C_PORT"]) if env.get("H2C_PORT") else None,
        )
        self._followers[server.name] = follow_log(name, running.log, place.args)
        return await_start(self, server, running, started, lambda: self._applied_cpus(running, cpus), listed)

    def _applied_cpus(self, running: RunningServer, asked: list[int]) -> list[int]:
        """The container's CPU set read back: as the engine applied it (docker inspect) and as the kernel lets its main
        process run, both checked against what was asked."""
        place = self.place_of(running)
        info = inspect(running.in_container(), place.args) or {}
        configured = info.get("HostConfig", {}).get("CpusetCpus", "")
        applied = self._kernel_cpus(running.in_container(), running.pid, place)
        if sorted(parse_cpus(configured)) != sorted(asked) or (applied and sorted(applied) != sorted(asked)):
            raise RuntimeFailure(
                f"{running.name}: asked for CPU {format_cpus(asked)}{place.on}, the container has "
                f"cpuset {configured!r} and its process may run on CPU {format_cpus(applied)}"
            )
        return applied or list(asked)

    def alive(self, running: RunningServer) -> bool:
        if running.runtime != self.name or not running.container or self._main_process_runs(running) is False:
            return False
        try:
            info = inspect(running.container, self.place_of(running).args)
        except RuntimeFailure:
            return False
        return bool(info and _engine_runs(info, running))

    def death(self, running: RunningServer) -> str | None:
        """What the engine says of the container once its main process is gone. Where this machine sees that process,
        psutil alone while it runs (this is called around every attempt), and the engine is given a moment to note the
        exit; on another host the engine alone tells."""
        if self._main_process_runs(running):
            return None
        place = self.place_of(running)
        settle_by = time.monotonic() + ENGINE_SETTLE_S
        while (
            (info := inspect(running.in_container(), place.args))
            and time.monotonic() < settle_by
            and (
                (info["State"]["Running"] and info["State"]["Pid"] == running.pid)
                or info["State"]["Status"] in ("created", "restarting")
            )
        ):
            time.sleep(0.1)
        if info and _engine_runs(info, running):
            return None  # it runs, or the engine insists it does
        if info is None:
            return f"gone (its container was removed{place.on})"
        state = info["State"]
        if state.get("OOMKilled"):
            return "killed for memory (OOMKilled)"
        return f"container {state['Status']}{place.on}: {exit_reason(state['ExitCode'])}"

    def tools_cpu_s(self) -> float | None:
        return None  # the loadgen container's CPU is sampled whole (a host's engine); one_host.py counts it exactly

    def pause(self, running: RunningServer, asleep: bool) -> None:
        """Interleaved rounds: an idle server is frozen by its engine (the cgroup freezer: `docker pause`), then thawed.
        The engine needs no right over the container's processes, which run as the image's user: a harness that is
        not root could not stop them with a signal. One that cannot be frozen is said, never passed over silently."""
        proc = self.docker(
            self.place_of(running), "pause" if asleep else "unpause", running.in_container(), check=False
        )
        if asleep and proc.returncode != 0:
            said = (proc.stdout + proc.stderr).decode(errors="replace").strip().splitlines()
            warn(
                f"could not freeze {running.name}{self.place_of(running).on} between its turns: "
                f"{said[-1] if said else 'docker pause failed'}; it stays awake while the others are measured"
            )

    def log_tail(self, running: RunningServer, lines: int = 15) -> str:
        return container_log(running.in_container(), lines, self.place_of(running).args)

    def pin(self, running: RunningServer, cpus: list[int]) -> None:
        self.docker(
            self.place_of(running),
            "update",
            "--cpuset-cpus",
            format_cpus(cpus),
            "--cpus",
            str(len(cpus)),
            running.in_container(),
        )
        running.cpus = self._applied_cpus(running, cpus)

    def stop(self, running: RunningServer) -> None:
        try:
            place = self.place_of(running)
        except RuntimeFailure as exc:
            warn(str(exc))
            return
        self.prepare()
        self._remove_server(running, place)
        follower = self._followers.pop(running.name, None)
        if follower:
            try:
                follower.wait(5)
            except subprocess.TimeoutExpired:
                follower.kill()
        if not self._servers_left(running):
            self._stop_loadgen(only_if_idle=True)

    # the load generator --------------------------------------------------------------------------------------------
    def _ensure_loadgen(self, cpus: list[int]) -> dict[str, Any]:
        """The loadgen container running on `cpus` (moved there, or started); its `docker inspect`."""
        place, name = self.place("loadgen"), container_name(LOADGEN)
        info = inspect(name, place.args)
        if info and self.remote:  # hosts that other harness machines may use too: another's is not ours to take
            self._refuse_theirs(info, place, "the load generator")
        if info and info["State"]["Running"]:
            if sorted(parse_cpus(info["HostConfig"]["CpusetCpus"])) != sorted(cpus):
                self.docker(place, "update", "--cpuset-cpus", format_cpus(cpus), name)
            return info
        if info is not None:
            self.docker(place, "rm", "-f", "-v", name, check=False)
        ensure_runtime_images({LOADGEN})
        self._start_loadgen(place, cpus)
        if not self._loadgen_started:
            self._loadgen_started = True
            atexit.register(self._stop_loadgen)
        return inspect(name, place.args) or {}

    def _stop_loadgen(self, only_if_idle: bool = False) -> None:
        """Removed; on hosts that other harness machines may use too, only ours (never another's of the same name)."""
        if only_if_idle and self._loadgen_busy():
            return
        place, (key, value), ours = self.place("loadgen"), self._owner(), [container_name(LOADGEN)]
        if self.remote:
            ours = (
                self.docker(
                    place,
                    "ps",
                    "-a",
                    "-q",
                    "--filter",
                    f"name=^/?{ours[0]}$",
                    "--filter",
                    f"label={key}={value}",
                    check=False,
                    timeout=30,
                )
                .stdout.decode()
                .split()
            )
        if ours:
            self.docker(place, "rm", "-f", "-v", *ours, check=False)

    # what the records show -----------------------------------------------------------------------------------------
    def version(self, server: Server) -> str:
        return version_in_image(server)  # the local engine's image: a host holds the same image id

    def tool_versions(self) -> dict[str, str]:
        """Each tool's version as the loadgen image runs it (a tool it lacks says so here)."""
        out = {}
        for name in self.loadgen_tools or list(TOOLS):
            tool = TOOLS[name]
            proc = self.docker(
                self.place("loadgen"),
                "run",
                "--rm",
                "--network",
                "none",
                *privilege_options(),
                *self.tool_mounts,
                runtime_image(LOADGEN),
                container_path(tool.binary),
                *tool.version_args,
                check=False,
            )
            lines = (proc.stdout + proc.stderr).decode(errors="replace").strip().splitlines()
            out[name] = lines[0].strip() if lines else "unknown"
        return out

    def describe(self, running: RunningServer) -> dict[str, Any]:
        """Where the server runs, and its container as applied, read back from the engine and the kernel."""
        place = self.place_of(running)
        return {**place.facts(), **(self._container_facts(running.in_container(), place) or {})}

    def _container_facts(self, name: str, place: Place) -> dict[str, Any] | None:
        c = inspect(name, place.args)
        if not c or not c["State"]["Running"]:
            return None
        return {
            **container_facts(c, self._kernel_cpus(name, c["State"]["Pid"], place)),
            "image_bytes": image_bytes(c["Image"], place.args),
        }
