"""Which servers are up, which this command started (and so must stop), the upstream they share (the server whose
manifest gives it the role "upstream"), and what a killed harness command left running: the state lists every server
and load tool with the command that started it, so the next command (`make down`, or any that starts servers) finds
those whose command is gone and stops them."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext

import psutil

from harness.basics import idle_states
from harness.basics.cpus import CpuPlan, format_cpus
from harness.basics.machine import port_owner, wait_until
from harness.basics.messages import say, warn
from harness.config.manifest import Server, artifacts_stamp, upstream_of, upstream_url
from harness.runtime import RunningServer, Runtime, RuntimeFailure, State
from harness.runtime.state import ListedTool, StateFull

TOOL_STOP_GRACE_S = 5


class Session:
    """Starts servers on demand and stops, on exit (also on failure and Ctrl-C), every server it started,
    unless `keep` is set (`make up`)."""

    def __init__(
        self, runtime: Runtime, plan: CpuPlan, servers: dict[str, Server], ports: dict[str, int], keep: bool = False
    ):
        self.runtime, self.plan, self.servers, self.ports, self.keep = runtime, plan, servers, ports, keep
        self.state = State()
        self.started: list[str] = []
        self.upstream: Server | None = upstream_of(servers)
        self._stamps: dict[str, str] = {}  # each server's artifacts_stamp, read once per command
        # entered around every load (warm-up run or attempt) with its server and stem: make calibrate asks the
        # calibrated server what it saw of each load (harness/calibrate/server_seen.py)
        self.around_load: Callable[[RunningServer, str], AbstractContextManager[object]] | None = None

    def running(self) -> dict[str, RunningServer]:
        """Servers recorded as up that are still alive (dead entries are dropped). Not those a killed command left:
        they are not up for anyone to use or measure (clear_leftovers stops them)."""
        leftovers = self.state.leftover_servers()
        up = {}
        for name, entry in self.state.load().items():
            if entry.runtime != self.runtime.name or name in leftovers:
                continue  # the other runtime's servers, or leftovers: not ours to use here, nor to forget
            if self.runtime.alive(entry):
                up[name] = entry
            else:  # its remains go with its listing: an exited container, a dead leader's workers
                self._clear_remains(entry)
                self.state.drop(name)
        return up

    def _clear_remains(self, entry: RunningServer) -> None:
        try:
            self.runtime.stop(entry)
        except RuntimeFailure as exc:
            warn(f"{entry.name} died and what it left could not be removed: {exc}")

    def port(self, server: Server) -> int:
        return self.ports.get(server.name, server.port)

    def h2c_port(self, server: Server) -> int | None:
        """Where `server` speaks h2c (its manifest's h2c_port), as far from its port as in the manifest when PORTS
        moves it; None for a server without h2c."""
        return server.h2c_port + self.port(server) - server.port if server.h2c_port else None

    def is_upstream(self, name: str) -> bool:
        return self.upstream is not None and name == self.upstream.name

    def upstream_url(self) -> str:
        if not self.upstream:
            return ""
        return upstream_url(self.upstream, self.port(self.upstream), self.runtime.address("upstream"))

    def check_ports(self, servers: list[Server]) -> None:
        """Before anything starts: every server this session may start (and the upstream) has its port free."""
        self.clear_leftovers()  # what a killed run left is stopped, not reported as a stranger holding a port
        if self.runtime.remote:  # the ports are other machines': a busy one fails that server's start, with its log
            return
        up = self.running()
        # and those up on other ports than this run gives them: restarted there (ensure)
        wanted = [
            s
            for s in servers
            if s.name not in up or (up[s.name].port, up[s.name].h2c_port) != (self.port(s), self.h2c_port(s))
        ]
        if any(s.needs_upstream for s in wanted) and self.upstream and self.upstream.name not in up:
            wanted.append(self.upstream)
        busy = []
        for server in {s.name: s for s in wanted}.values():
            for kind, port in (("port", self.port(server)), ("h2c port", self.h2c_port(server))):
                owner = port and port_owner("127.0.0.1", port)
                if owner:
                    busy.append(f"{server.name}'s {kind} {port} is in use by {owner}")
        if busy:
            raise RuntimeFailure(
                "; ".join(busy) + ". Stop those processes (`make down` if they are ours) or move the "
                'servers: PORTS="name=port ..."'
            )

    def ensure(self, server: Server) -> RunningServer:
        """The server, running: the one already up when it runs as this run's plan says, else started now (its
        upstream first where it needs one). One up that differs (`make up` on other CPUs, ports or artifacts) is
        restarted as the plan says, and one that `make up` left stays up after, as it was."""
        up = self.running()
        left_up = False
        if server.name in up:
            differs = self._differs(server, up[server.name])
            if not differs:
                return up[server.name]
            left_up = server.name not in self.started
            say(
                f"{server.name} is up {differs}: restarting it as this run says"
                + (" (it stays up after, as make up left it)" if left_up and not self.keep else "")
            )
            self.stop(server.name)
        if server.needs_upstream and self.upstream:
            self.ensure_upstream()
        cpus = self._cpus(server)
        say(f"starting {server.name} on port {self.port(server)}, CPU {format_cpus(cpus)}")
        env = {"UPSTREAM_URL": self.upstream_url()}
        if server.h2c_port:
            env["H2C_PORT"] = str(self.h2c_port(server))
        return self._start(server, env, left_up)

    def _start(self, server: Server, env: dict[str, str], left_up: bool) -> RunningServer:
        """`server` started, listed in the state from its first instant (a command killed during a JVM's seconds of
        start leaves it named), with what it was started from (artifacts, upstream) for a later run to compare."""
        stamp, keep = self._stamp(server), self.keep or left_up
        upstream = env["UPSTREAM_URL"] if server.needs_upstream else None

        def listed(starting: RunningServer) -> None:
            starting.artifacts, starting.upstream_url = stamp, upstream
            self.state.put(starting, keep=keep, starting=True)

        try:
            running = self.runtime.start(server, list(self._cpus(server)), self.port(server), env, listed)
        except BaseException as exc:  # the runtime stopped it: only its entry is left to take off
            self._unlist(server.name)
            if isinstance(exc, StateFull):
                raise StateFull(f"{exc}; {server.name} was stopped") from None
            raise
        running.artifacts, running.upstream_url = stamp, upstream
        if not left_up:
            self.started.append(server.name)
        try:
            self.state.put(running, keep=keep)
        except StateFull as exc:  # listed as starting only: stopped now, `make up`'s too, rather than half-known
            self.stop(server.name)
            raise StateFull(f"{exc}; {server.name} was stopped") from None
        say(f"  {server.name} answered after {running.startup_s:.2f} s")
        return running

    def _unlist(self, name: str) -> None:
        """`name` taken off the state, if the state can be written: an entry left on a full disk names a process
        that is gone, which the next command drops."""
        try:
            self.state.drop(name)
        except StateFull:
            pass

    def _cpus(self, server: Server) -> tuple[int, ...]:
        return self.plan.upstream if self.is_upstream(server.name) else self.plan.server

    def _stamp(self, server: Server) -> str:
        if server.name not in self._stamps:
            self._stamps[server.name] = artifacts_stamp(server)
        return self._stamps[server.name]

    def _differs(self, server: Server, up: RunningServer) -> str | None:
        """How a server that is up differs from what this run would start (None: it does not)."""
        cpus = list(self._cpus(server))
        if sorted(up.cpus) != sorted(cpus):
            return f"on CPU {format_cpus(up.cpus)}, this run's plan gives it CPU {format_cpus(cpus)}"
        if (up.port, up.h2c_port) != (self.port(server), self.h2c_port(server)):
            return f"on port {up.port}, this run gives it port {self.port(server)}"
        if server.needs_upstream and self.upstream and up.upstream_url != self.upstream_url():
            return (
                f"fetching its upstream from {up.upstream_url or 'an address not recorded'}, this run's is "
                f"{self.upstream_url()}"
            )
        if up.artifacts != self._stamp(server):
            return (
                "from artifacts that have changed since it started (make build)"
                if up.artifacts
                else "from artifacts this harness did not record when it started"
            )
        return None

    def ensure_upstream(self) -> RunningServer:
        assert self.upstream is not None, "asked for the upstream of servers that have none"
        return self.ensure(self.upstream)

    def clear_leftovers(self) -> bool:
        """What a harness command that was killed left running, found in the state and stopped: its load tools first
        (they load the servers), then what the runtime clears itself (docker: containers the state does not list, and
        the loadgen container), then its servers, woken first (a killed interleaved run leaves the idle ones asleep).
        Says what it finds; returns whether it found anything."""
        tools = self.state.leftover_tools()
        servers = {}
        for name, (running, starter) in self.state.leftover_servers().items():
            if running.runtime != self.runtime.name or self.runtime.alive(running):
                servers[name] = (running, starter)
            else:
                self.state.drop(name)
        found: dict[str, list[str]] = {}  # killed command -> what it left
        for tool in (t for t in tools if t.running()):
            found.setdefault(str(tool.started_by), []).append(f"the load tool {tool.name} (pid {tool.pid})")
        for name, (running, starter) in servers.items():
            found.setdefault(str(starter), []).append(f"{name} ({running.runtime}, port {running.port})")
        for command, what in found.items():
            say(
                f"found what {command} left running when it was killed: {', '.join(what)}; stopping "
                f"{'them' if len(what) > 1 else 'it'}"
            )
        for tool in tools:
            _stop_tool(tool)
            self.state.drop_tools(tool.started_by)
        self.runtime.prepare()
        for name, (running, _starter) in servers.items():
            if running.runtime != self.runtime.name:  # not this runtime's to stop: say how
                warn(f"{name} runs under the {running.runtime} runtime: `make down RUNTIME={running.runtime}` stops it")
                continue
            self._wake(running)
            self.stop(name)
        return bool(found)

    def _wake(self, running: RunningServer) -> None:
        self.runtime.pause(running, asleep=False)

    def stop(self, name: str) -> None:
        entry = self.state.load().get(name)
        if entry:
            say(f"stopping {name}")
            self.runtime.stop(entry)
            self._unlist(name)
            owner = None if self.runtime.remote else port_owner(entry.host, entry.port)
            if owner:  # never silently: whatever holds it would be measured in place of the next server here
                warn(f"{name} was stopped but its port {entry.port} is still held by {owner}: stop that process")
        if name in self.started:
            self.started.remove(name)

    def stop_started(self) -> None:
        for name in reversed(list(self.started)):
            self.stop(name)

    def release(self, name: str) -> None:
        """Stop `name` if this session started it; the upstream stays until the session ends (others may need it)."""
        if name in self.started and not self.is_upstream(name):
            self.stop(name)

    @contextmanager
    def measuring(self, running: RunningServer) -> Iterator[RunningServer]:
        """While the upstream itself is measured it runs on the server's CPUs like every other server, then goes
        back."""
        if self.is_upstream(running.name) and list(running.cpus) != list(self.plan.server):
            before = list(running.cpus)
            self.runtime.pin(running, list(self.plan.server))
            try:
                yield running
            finally:
                self.runtime.pin(running, before)
        else:
            yield running

    def beside_load(self, running: RunningServer, stem: str) -> AbstractContextManager[object]:
        """What `around_load` does around the load `stem` on `running` (nothing when unset)."""
        return self.around_load(running, stem) if self.around_load else nullcontext()

    def __enter__(self) -> Session:
        if not self.runtime.remote:  # idle CPUs poll while this command measures here (not on other hosts)
            idle_states.hold()
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            if not self.keep:
                self.stop_started()
        finally:
            if not self.runtime.remote:
                idle_states.release()


def _stop_tool(tool: ListedTool) -> None:
    """SIGTERM, then SIGKILL after a grace period. It is no longer our child: as a zombie it counts as stopped."""
    if not tool.running():
        return
    try:
        proc = psutil.Process(tool.pid)
        proc.terminate()
        if not wait_until(lambda: not tool.running(), TOOL_STOP_GRACE_S):
            proc.kill()
            wait_until(lambda: not tool.running(), TOOL_STOP_GRACE_S)
    except psutil.Error:
        pass  # gone meanwhile
