"""A campaign: the servers brought up (servers/readiness.py, through the `Stage` seam), then every scenario measured, in
rounds where the servers can be up at once. What one warm-up or attempt does is executor.py's and warmup.py's, what is
warmed and in which order within a scenario the plan's (run_plan.py) and the rounds' (scheduler.py); this module groups
the servers and puts each group through its scenarios.

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
from typing import Protocol

import psutil

from harness.basics.messages import say
from harness.config.environment import ORDERS  # ORDER is checked there, with every other variable
from harness.config.manifest import Server
from harness.config.scenarios import Scenario, Settings
from harness.measuring.clock import START, Clock, announce_estimate
from harness.measuring.executor import LoadExecutor
from harness.measuring.scheduler import Allowance, measure_in_rounds
from harness.results.store import RunStore
from harness.servers import probing
from harness.servers.preflight import fitted
from harness.servers.readiness import Readiness, Target
from harness.servers.session import Session
from harness.servers.turns import Turns, idle_pids
from harness.stats.sitting_shape import START_S

# What a server may hold while it idles between its turns: the JVM servers' fixed 1 GiB heap plus the JVM itself
# (measured RSS 1.13-1.16 GB); the others take far less. Interleaving is refused when all of them would not fit.
SERVER_MEMORY_BYTES = 3 * 2**29  # 1.5 GiB
MEMORY_RESERVE_BYTES = 2 * 2**30  # left to the tools, the harness and the system


class OrderError(Exception):
    pass


class Stage(Protocol):
    """Where a group's servers are brought up and put down (servers/readiness.Readiness; a test's fake): the
    campaign's one door to starting, checking and stopping servers, as the executor is the rounds' to loading them."""

    def bring_up(self, server: Server) -> Target | None: ...

    def put_down(self, names: list[str]) -> None: ...


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
    campaign = Campaign(session, store, clock, settings, Readiness(session, store), round_no)
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
    """What every group of a campaign shares: where it runs and records, its clock, its settings, its round, and the
    stage its servers are brought up on."""

    session: Session
    store: RunStore
    clock: Clock
    settings: Settings
    stage: Stage  # Readiness(session, store); a test's fake
    round_no: int | None = None

    def measure_group(self, group: list[Server], scenarios: list[Scenario]) -> bool:
        """The group's servers brought up, every scenario measured on those that passed, and the group put down
        (also on failure and Ctrl-C); False when a server could not start, failed its contract or died."""
        turns = None
        try:
            targets = self.bring_up(group)
            turns = Turns(self.session, targets) if len(targets) > 1 else None
            bench = LoadExecutor(
                self.session,
                self.store,
                round_no=self.round_no,
                status=self.clock.status,
                turn=turns,
                idle_pids=idle_pids(self.session, targets) if turns else None,
            )
            budget = self.settings.budget_s
            allowance = Allowance(self.settings.remeasure_s, _time_left(budget, self.clock) if budget else None)
            for scenario in scenarios:
                members = [t for t in targets if scenario.path_for(t.server)]
                if members:
                    measure_in_rounds(bench, self.clock, members, scenario, self.settings, allowance)
                    self.clock.progress(scenario.name)
            return len(targets) == len(group) and not bench.dead
        finally:
            if turns:
                turns.wake_all()
            self.stage.put_down([server.name for server in group])

    def bring_up(self, group: list[Server]) -> list[Target]:
        """The group's servers that came up and passed the contract, each start's time on the clock."""
        targets = []
        for server in group:
            started = time.monotonic()
            target = self.stage.bring_up(server)
            self.clock.advance(START_S, START, time.monotonic() - started)
            if target is not None:
                targets.append(target)
        return targets


def _time_left(budget_s: float, clock: Clock) -> Callable[[], float]:
    """The seconds the run's time budget has left once what it still plans is done (what re-measuring may take)."""
    return lambda: budget_s - clock.elapsed_s() - clock.remaining_s()
