"""A server made ready to measure, and put down after: started (or found up), its contract checked over HTTP/1.1 and,
where it speaks it, h2c, its version and inventory recorded, its HTTP compliance probed once (`make bench`), its
idle memory read before and after. `make bench`'s campaign and the paired sitting (`make versus`, `duel`, `twin`)
both bring their servers up here; the campaign through its `Stage` seam (measuring/campaign.py), which a test fills
with a fake."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from harness.basics.messages import fail, say, warn
from harness.config.manifest import UPSTREAM_COUNT_PATH, Server
from harness.conformance import verification as contract
from harness.conformance import verification_h2c as contract_h2
from harness.conformance.contract_table import Report
from harness.results.records import Verification
from harness.results.store import RunStore
from harness.runtime import RunningServer, RuntimeFailure
from harness.servers import inventory, probing
from harness.servers.session import Session


@dataclass
class Target:
    """A server that is up and has passed the contract: what a measurement needs of it."""

    server: Server
    running: RunningServer

    @property
    def name(self) -> str:
        return self.server.name


@dataclass
class Readiness:
    """Where a run's servers are brought up and put down: its session (which starts and stops them) and its store
    (where what was found is recorded)."""

    session: Session
    store: RunStore

    def bring_up(self, server: Server) -> Target | None:
        """The server up, checked, recorded and (make bench) probed, as a Target; None, said and recorded, when it
        could not start or failed the contract."""
        session, store = self.session, self.store
        try:
            running = session.ensure(server)
        except RuntimeFailure as exc:
            fail(str(exc))
            entry = {"started": False, "error": str(exc), "roles": list(server.roles)}
            store.set_server(server.name, {**entry, **self._earlier_deaths(server.name)})
            return None
        started_here = server.name in session.started
        idle_mb = resident_mb(session, running) if started_here else None  # before the contract's requests
        report = check_contract(session, server, running)
        version = probing.server_version(session, server)
        store.set_verification(server.name, Verification(report.ok, report.checks, report.failures))
        store.set_server(
            server.name,
            {
                "started": True,
                "version": version,
                "stack": server.stack,
                "roles": list(server.roles),
                "port": running.port,
                "runtime": session.runtime.name,
                "cpus": running.cpus,
                "placement": session.runtime.describe(running),
                "startup_s": running.startup_s if started_here else None,
                "started_by_this_run": started_here,
                "log": running.log,
                "rss_idle_mb": idle_mb,
                **({"twin_of": server.twin_of} if server.twin_of else {}),
                **inventory.describe(server, session.servers),
                **self._earlier_deaths(server.name),
            },
        )
        if not report.ok:
            warn(f"{server.name} is not benchmarked: it fails the contract")
            return None
        if probing.wanted_in_bench(store, server):  # make bench: its HTTP compliance, once, before it is measured
            probing.probe_in_bench(session, server, running, store, version)
        return Target(server, running)

    def put_down(self, names: list[str]) -> None:
        """Each server's idle memory after the run read, and the server stopped (also on failure, Ctrl-C)."""
        for name in names:
            try:
                self.memory_after(name)
            finally:  # stopped whatever happened to the reading
                self.session.release(name)

    def memory_after(self, name: str) -> None:
        """Its resident memory, idle after the run (before it is stopped), in its servers entry: beside the peak under
        load that each record has, what it keeps once the load is gone."""
        entry = self.store.run.servers.get(name)
        running = self.session.running().get(name)
        if not entry or not entry.get("started") or running is None:
            return
        self.store.set_server(name, {**entry, "rss_after_run_mb": resident_mb(self.session, running)})

    def _earlier_deaths(self, name: str) -> dict[str, Any]:
        """The deaths an earlier round of this run (overhead) recorded in the server's entry, kept when it is
        rewritten."""
        deaths = self.store.run.servers.get(name, {}).get("deaths")
        return {"deaths": deaths} if deaths else {}


def check_contract(session: Session, server: Server, running: RunningServer) -> Report:
    """The contract checked on `server`; the session's upstream gives the weather document its answers come from,
    and counts the requests it serves (each /weather request must reach it)."""
    upstream = session.upstream
    document = upstream.upstream_document.read_bytes() if upstream and upstream.upstream_document else None
    count = None
    if upstream and server.needs_upstream:
        count = contract.StubStatus(session.runtime.address("upstream"), session.port(upstream), UPSTREAM_COUNT_PATH)
    report = contract.verify(server.identity, running.host, running.port, server.routes, document, count)
    over = ""
    if running.h2c_port:  # it claims h2c: that is part of its contract, checked the same way
        h2 = contract_h2.check_h2(server.identity, running.host, running.h2c_port, server.routes, document, count)
        report.checks += h2.checks
        report.failures += [f"h2c: {f}" for f in h2.failures]
        over = " over HTTP/1.1 and h2c"
    if report.ok:
        say(f"  {server.name}: contract OK{over} ({report.checks} checks)")
    else:
        fail(f"{server.name} fails the contract ({len(report.failures)} of {report.checks} checks):")
        for failure in report.failures:
            say(f"    - {failure}")
    return report


def resident_mb(session: Session, running: RunningServer) -> float | None:
    """The resident memory of the server's processes now, in MB (its runtime's sampler: psutil, or the engine's
    counters); None when it cannot be read."""
    try:
        return session.runtime.sampler(running, len(running.cpus)).start().stop()["peak_rss_mb"] or None
    except (RuntimeFailure, OSError):
        return None
