"""Which servers are up, which this command started (and so must stop), and the upstream they share (the server
whose manifest gives it the role "upstream")."""
from __future__ import annotations

from contextlib import contextmanager

from harness.console import say, warn
from harness.cpus import CpuPlan, format_cpus
from harness.host import port_owner
from harness.manifest import Server, upstream_of, upstream_url
from harness.runtime import Runtime, RunningServer, RuntimeError_, State


class Session:
    """Starts servers on demand and stops, on exit (also on failure and Ctrl-C), every server it started,
    unless `keep` is set (`make up`)."""

    def __init__(self, runtime: Runtime, plan: CpuPlan, servers: dict[str, Server], ports: dict[str, int], keep: bool = False):
        self.runtime, self.plan, self.servers, self.ports, self.keep = runtime, plan, servers, ports, keep
        self.state = State()
        self.started: list[str] = []
        self.upstream: Server | None = upstream_of(servers)

    def running(self) -> dict[str, RunningServer]:
        """Servers recorded as up that are still alive (dead entries are dropped)."""
        up = {}
        for name, entry in self.state.load().items():
            if entry.runtime != self.runtime.name:
                continue  # the other runtime's servers: not ours to see, nor to forget
            if self.runtime.alive(entry):
                up[name] = entry
            else:
                self.state.drop(name)
        return up

    def port(self, server: Server) -> int:
        return self.ports.get(server.name, server.port)

    def is_upstream(self, name: str) -> bool:
        return self.upstream is not None and name == self.upstream.name

    def upstream_url(self) -> str:
        return upstream_url(self.upstream, self.port(self.upstream)) if self.upstream else ""

    def check_ports(self, servers: list[Server]) -> None:
        """Before anything starts: every server this session may start (and the upstream) has its port free."""
        self.runtime.prepare()  # docker: a container that a killed run left is removed, not reported as a stranger
        up = self.running()
        wanted = [s for s in servers if s.name not in up]
        if any(s.needs_upstream for s in wanted) and self.upstream and self.upstream.name not in up:
            wanted.append(self.upstream)
        busy = []
        for server in {s.name: s for s in wanted}.values():
            owner = port_owner("127.0.0.1", self.port(server))
            if owner:
                busy.append(f"{server.name}'s port {self.port(server)} is in use by {owner}")
        if busy:
            raise RuntimeError_("; ".join(busy) + ". Stop those processes (`make down` if they are ours) or move the "
                                "servers: PORTS=\"name=port ...\"")

    def ensure(self, server: Server) -> RunningServer:
        """The server, running: the one already up, or started now (its upstream first where it needs one)."""
        up = self.running()
        if server.name in up:
            return up[server.name]
        if server.needs_upstream and self.upstream:
            self.ensure_upstream()
        cpus = self.plan.upstream if self.is_upstream(server.name) else self.plan.server
        say(f"starting {server.name} on port {self.port(server)}, CPU {format_cpus(cpus)}")
        running = self.runtime.start(server, list(cpus), self.port(server), {"UPSTREAM_URL": self.upstream_url()})
        self.state.put(running)
        self.started.append(server.name)
        say(f"  {server.name} answered after {running.startup_s:.2f} s")
        return running

    def ensure_upstream(self) -> RunningServer:
        return self.ensure(self.upstream)

    def stop(self, name: str) -> None:
        entry = self.state.load().get(name)
        if entry:
            say(f"stopping {name}")
            self.runtime.stop(entry)
            self.state.drop(name)
            owner = port_owner(entry.host, entry.port)
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
    def measuring(self, running: RunningServer):
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

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc) -> None:
        if not self.keep:
            self.stop_started()
