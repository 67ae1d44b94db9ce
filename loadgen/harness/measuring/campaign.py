"""A campaign: the servers started (or found up) and verified, then every scenario measured, in rounds where the servers
can be up at once. What one warm-up or attempt does is executor.py's and warmup.py's, what is warmed and in which order within a
scenario the plan's (run_plan.py) and the rounds' (scheduler.py); this module starts the servers and groups them.

Interleaved (the default where it fits): all servers are up, each warmed up for a scenario, then attempt 1 of every
server, attempt 2 of every server, and so on, the first server of a round rotating. A slow drift of the machine (here,
a 2-core VM, 1-second figures wandered between 55k and 89k req/s within half a minute) then lands on every server
alike instead of on whichever was measured at the time. The servers not being measured sleep: up and pinned to the
server CPUs, but stopped (SIGSTOP) until their turn, since idle JVMs still took a median 2.5 % and up to 21 % of the
measured server's CPU in a first run; what they use anyway is sampled in each attempt (`samples.idle_servers`). The
upstream nginx never sleeps.
Sequential (ORDER=sequential, or where interleaving cannot be done: one server, two servers on one port, not enough
memory for all of them at once): one server after the other, its attempts back to back, as before.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import psutil

from harness.basics.messages import fail, say, warn
from harness.config.environment import ORDERS  # ORDER is checked there, with every other variable
from harness.config.manifest import UPSTREAM_COUNT_PATH, Server
from harness.config.scenarios import Scenario, Settings
from harness.conformance import verification as contract
from harness.conformance import verification_h2c as contract_h2
from harness.conformance.contract_table import Report
from harness.measuring import probing
from harness.measuring.clock import START, Clock, announce_estimate
from harness.measuring.executor import LoadExecutor
from harness.measuring.run_plan import Target
from harness.measuring.scheduler import Allowance, measure_in_rounds
from harness.results.records import Verification
from harness.results.store import RunStore
from harness.runtime import RunningServer, RuntimeFailure
from harness.servers import inventory
from harness.servers.preflight import fitted
from harness.servers.session import Session
from harness.stats.sitting_shape import START_S

# What a server may hold while it idles between its turns: the JVM servers' fixed 1 GiB heap plus the JVM itself
# (measured RSS 1.13-1.16 GB); the others take far less. Interleaving is refused when all of them would not fit.
SERVER_MEMORY_BYTES = 3 * 2**29  # 1.5 GiB
MEMORY_RESERVE_BYTES = 2 * 2**30  # left to the tools, the harness and the system


class OrderError(Exception):
    pass


class Turns:
    """In interleaved rounds, the servers that are not being measured sleep: their processes are stopped (SIGSTOP) and
    continued (SIGCONT) when their turn comes, and all of them at the end, also on failure and Ctrl-C (`wake_all`).
    A server that died is passed over: the runtime names no process of it (a recycled pid is never taken for its)."""

    def __init__(self, session: Session, targets: list[Target]):
        self.session = session
        self.targets: list[Target] = []
        self.retarget(targets)
        self.asleep: set[str] = set()

    def retarget(self, targets: list[Target]) -> None:
        """The servers that take turns, as now running (make versus starts its builds afresh)."""
        self.targets = [t for t in targets if not self.session.is_upstream(t.name)]  # it serves the others' weather

    def __call__(self, name: str) -> None:
        for t in self.targets:
            if t.name == name and name in self.asleep:
                self.session.runtime.pause(t.running, asleep=False)
                self.asleep.discard(name)
            elif t.name != name and t.name not in self.asleep:
                self.session.runtime.pause(t.running, asleep=True)
                self.asleep.add(t.name)

    def wake_all(self) -> None:
        for t in self.targets:
            if t.name in self.asleep:
                self.session.runtime.pause(t.running, asleep=False)
        self.asleep.clear()


def verify(running: RunningServer, server: Server, session: Session) -> Report:
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


# -- the order ---------------------------------------------------------------------------------------------------------


def choose_order(requested: str, servers: list[Server], ports: dict[str, int], available_bytes: int) -> tuple[str, str]:
    """("interleaved" | "sequential", why). `ports`: each server's port as this run uses it."""
    if requested not in ORDERS:
        raise OrderError(f"ORDER={requested!r}: use one of {', '.join(ORDERS)}")
    if requested == "sequential":
        return "sequential", "asked for (ORDER=sequential)"
    if len(servers) < 2:
        return "sequential", "a single server: nothing to interleave"
    by_port: dict[int, list[str]] = {}
    for s in servers:
        by_port.setdefault(ports[s.name], []).append(s.name)
    shared = [names for names in by_port.values() if len(names) > 1]
    if shared:
        return "sequential", (
            "servers share a port (" + "; ".join(" and ".join(n) for n in shared) + "), so they cannot be up at once"
        )
    need = len(servers) * SERVER_MEMORY_BYTES + MEMORY_RESERVE_BYTES
    if need > available_bytes:
        return "sequential", (
            f"{len(servers)} servers up at once need about {need / 2**30:.1f} GiB, "
            f"{available_bytes / 2**30:.1f} GiB is available"
        )
    return "interleaved", f"all {len(servers)} servers fit up at once (ports distinct, memory available)"


# -- the campaign ------------------------------------------------------------------------------------------------------


def run_campaign(
    session: Session,
    store: RunStore,
    servers: list[Server],
    scenarios: list[Scenario],
    settings: Settings,
    order: str = "auto",
    round_no: int | None = None,
) -> bool:
    """Returns False when a server could not start, failed its contract (it is then not measured) or died during the
    run. `round_no`: the round of a run in rounds (overhead), recorded on each record."""
    scenarios = fitted(scenarios)  # announced before the run (preflight.announce_limits)
    wanted = taking_part(store, servers, scenarios)
    mode, why = choose_order(
        order, wanted, {s.name: session.port(s) for s in wanted}, psutil.virtual_memory().available
    )
    store.update_conditions(order=order_condition(mode, why))
    say(f"order: {mode} ({why})")
    clock = Clock()
    announce_estimate(store, clock, wanted, scenarios, settings, probing.builds_to_probe(session, store, wanted))
    campaign = Campaign(session, store, clock, settings, round_no)
    groups = [wanted] if mode == "interleaved" else [[s] for s in wanted]
    results = [campaign.measure_group(group, scenarios) for group in groups]  # every group, whatever the others did
    return all(results)


def taking_part(store: RunStore, servers: list[Server], scenarios: list[Scenario]) -> list[Server]:
    """The servers that serve at least one of the scenarios' routes; a server's h2c scenarios it cannot take are noted
    in the run's conditions (not_measured), the servers that serve none skipped with a word."""
    wanted, not_measured = [], {}
    for server in servers:
        for s in scenarios:
            if s.protocol == "h2c" and not server.h2c_port:  # the report says so (conditions, not_measured)
                not_measured[f"{server.name} {s.name}"] = "it speaks no h2c (its manifest gives no h2c_port)"
        if scenarios and not any(s.path_for(server) for s in scenarios):
            say(
                f"{server.name}: serves none of the routes of {', '.join(s.name for s in scenarios)}"
                + (" over h2c" if any(s.protocol == "h2c" for s in scenarios) else "")
                + "; skipped"
            )
        else:
            wanted.append(server)
    if not_measured:
        store.update_conditions(not_measured=not_measured)
    return wanted


def order_condition(mode: str, why: str) -> dict[str, str | None]:
    """The run's `order` condition: how the servers took turns, and what the idle ones did meanwhile."""
    idle = (
        "servers not being measured stay up and pinned to the server CPUs but sleep (their processes stopped "
        "with SIGSTOP until their turn; the upstream nginx never sleeps); the CPU they use during each attempt "
        "is recorded in the attempt's samples.idle_servers"
    )
    return {"mode": mode, "why": why, "idle": idle if mode == "interleaved" else None}


@dataclass
class Campaign:
    """What every group of a campaign shares: where it runs and records, its clock, its settings and its round."""

    session: Session
    store: RunStore
    clock: Clock
    settings: Settings
    round_no: int | None = None

    def measure_group(self, group: list[Server], scenarios: list[Scenario]) -> bool:
        """The group's servers started and verified, every scenario measured on those that passed, and the group
        stopped (also on failure and Ctrl-C); False when a server could not start, failed its contract or died."""
        session, clock = self.session, self.clock
        targets: list[Target] = []
        turns = None
        all_ok = True
        try:
            for server in group:
                started = time.monotonic()
                target = start_and_verify(session, self.store, server)
                clock.advance(START_S, START, time.monotonic() - started)
                if target is None:
                    all_ok = False
                else:
                    targets.append(target)
            turns = Turns(session, targets) if len(targets) > 1 else None
            bench = LoadExecutor(
                session,
                self.store,
                round_no=self.round_no,
                status=clock.status,
                turn=turns,
                idle_pids=_idle_pids(session, targets) if turns else None,
            )
            budget = self.settings.budget_s
            allowance = Allowance(self.settings.remeasure_s, _time_left(budget, clock) if budget else None)
            for scenario in scenarios:
                members = [t for t in targets if scenario.path_for(t.server)]
                if members:
                    measure_in_rounds(bench, clock, members, scenario, self.settings, allowance)
                    clock.progress(scenario.name)
            return all_ok and not bench.dead
        finally:
            end_group(session, self.store, group, turns)


def _time_left(budget_s: float, clock: Clock) -> Callable[[], float]:
    """The seconds the run's time budget has left once what it still plans is done (what re-measuring may take)."""
    return lambda: budget_s - clock.elapsed_s() - clock.remaining_s()


def end_group(session: Session, store: RunStore, group: list[Server], turns: Turns | None) -> None:
    """Every server of the group awake, its idle memory after the run read, and stopped (also on failure, Ctrl-C)."""
    if turns:
        turns.wake_all()
    for server in group:
        try:
            record_memory_after(session, store, server)
        finally:  # stopped whatever happened to the reading
            session.release(server.name)


def start_and_verify(session: Session, store: RunStore, server: Server) -> Target | None:
    """The server up and verified as a Target; None when it could not start or failed the contract."""
    try:
        running = session.ensure(server)
    except RuntimeFailure as exc:
        fail(str(exc))
        store.set_server(
            server.name,
            {"started": False, "error": str(exc), "roles": list(server.roles), **_earlier_deaths(store, server)},
        )
        return None
    started_here = server.name in session.started
    idle_mb = resident_mb(session, running) if started_here else None  # before the contract's requests
    report = verify(running, server, session)
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
            **_earlier_deaths(store, server),
        },
    )
    if not report.ok:
        warn(f"{server.name} is not benchmarked: it fails the contract")
        return None
    if probing.wanted_in_bench(store, server):  # make bench: its HTTP compliance, once, before it is measured
        probing.probe_in_bench(session, server, running, store, version)
    return Target(server, running)


def resident_mb(session: Session, running: RunningServer) -> float | None:
    """The resident memory of the server's processes now, in MB (its runtime's sampler: psutil, or the engine's
    counters); None when it cannot be read."""
    try:
        return session.runtime.sampler(running, len(running.cpus)).start().stop()["peak_rss_mb"] or None
    except (RuntimeFailure, OSError):
        return None


def record_memory_after(session: Session, store: RunStore, server: Server) -> None:
    """Its resident memory, idle after the run (before it is stopped), in its servers entry: beside the peak under
    load that each record has, what it keeps once the load is gone."""
    entry = store.run.servers.get(server.name)
    running = session.running().get(server.name)
    if not entry or not entry.get("started") or running is None:
        return
    store.set_server(server.name, {**entry, "rss_after_run_mb": resident_mb(session, running)})


def _earlier_deaths(store: RunStore, server: Server) -> dict[str, Any]:
    """The deaths an earlier round of this run (overhead) recorded in the server's entry, kept when it is rewritten."""
    deaths = store.run.servers.get(server.name, {}).get("deaths")
    return {"deaths": deaths} if deaths else {}


def _idle_pids(session: Session, targets: list[Target]) -> Callable[[str], list[int]]:
    """pids of the servers that sleep while `name` is measured (the upstream nginx, on its own CPUs, is not idle)."""

    def pids(name: str) -> list[int]:
        out = []
        for t in targets:
            if t.name != name and not session.is_upstream(t.name):
                out.extend(session.runtime.pids(t.running))
        return out

    return pids
