"""A campaign: the servers started (or found up) and verified, then every scenario measured, in rounds where the servers
can be up at once. What one warm-up or attempt does is measurement.py's; this module decides the order and the clock.

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

import math
import time
from dataclasses import dataclass, field

import psutil

from harness import capacity, contract, contract_h2, flags, inventory
from harness.console import fail, say, warn
from harness.manifest import Server
from harness.measurement import (Bench, Target, aggregate, attempt, first_connections, load_key, pattern, warm_from,
                                 warm_up)
from harness.results import Attempt, Verification, Warmup
from harness.runtime import RunningServer, RuntimeError_
from harness.scenarios import Run, Scenario, Settings
from harness.session import Session
from harness.store import RunStore

ORDERS = ("auto", "interleaved", "sequential")
# What a server may hold while it idles between its turns: the JVM servers' fixed 1 GiB heap plus the JVM itself
# (measured RSS 1.13-1.16 GB); the others take far less. Interleaving is refused when all of them would not fit.
SERVER_MEMORY_BYTES = 3 * 2**29  # 1.5 GiB
MEMORY_RESERVE_BYTES = 2 * 2**30  # left to the tools, the harness and the system
# For the estimate only: what starting and verifying a server, a tool's start, and a warm-up usually cost here
START_S, ATTEMPT_OVERHEAD_S, WARMUP_RUNS_EXPECTED = 6.0, 0.4, 3.5
# what a JVM's first connection-per-request climb adds, as connections a second (measured: akka ~15 s for its 60,000
# connections beyond the usual warm-up, finagle and socko ~6 s for 130,000 and more)
JIT_WARMUP_RPS = 8000.0
ASSUMED_RPS = 5000.0  # a run given by request count (the seed profile) before any rate is known


class OrderError(Exception):
    pass


class Turns:
    """In interleaved rounds, the servers that are not being measured sleep: their processes are stopped (SIGSTOP) and
    continued (SIGCONT) when their turn comes, and all of them at the end, also on failure and Ctrl-C (`wake_all`).
    A server that died is passed over: the runtime names no process of it (a recycled pid is never taken for its)."""

    def __init__(self, session: Session, targets: list[Target]):
        self.session = session
        self.targets = [t for t in targets if not session.is_upstream(t.name)]  # it serves the others' weather
        self.asleep: set[str] = set()

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


def verify(running: RunningServer, server: Server, upstream: Server | None) -> contract.Report:
    """The contract checked on `server`; `upstream` (the session's) gives the weather document its answers come from."""
    document = upstream.upstream_document.read_bytes() if upstream else None
    report = contract.verify(server.identity, running.host, running.port, server.routes, document)
    over = ""
    if running.h2c_port:  # it claims h2c: that is part of its contract, checked the same way
        h2 = contract_h2.check_h2(server.identity, running.host, running.h2c_port, server.routes, document)
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
        return "sequential", ("servers share a port (" + "; ".join(" and ".join(n) for n in shared)
                              + "), so they cannot be up at once")
    need = len(servers) * SERVER_MEMORY_BYTES + MEMORY_RESERVE_BYTES
    if need > available_bytes:
        return "sequential", (f"{len(servers)} servers up at once need about {need / 2**30:.1f} GiB, "
                              f"{available_bytes / 2**30:.1f} GiB is available")
    return "interleaved", f"all {len(servers)} servers fit up at once (ports distinct, memory available)"


# -- the clock ---------------------------------------------------------------------------------------------------------

def attempt_seconds(run: Run) -> float:
    """How long one attempt of `run` should take: its duration, or its request count at an assumed rate."""
    load = run.load
    if load.get("duration_s"):
        return float(load["duration_s"])
    count = load.get("requests") or load.get("users") or load["concurrency"] * (load.get("calls_per_connection") or 1)
    return count / ASSUMED_RPS


def warmup_seconds(scenario: Scenario, settings: Settings) -> float:
    """How long a warm-up usually takes: the profile's rule, or the scenario's own warm-up load and its minimum runs."""
    if scenario.warmup:
        own = scenario.warmup.run.load.get("duration_s", settings.warmup.duration_s)
        return max(WARMUP_RUNS_EXPECTED, scenario.warmup.min_runs) * (own + ATTEMPT_OVERHEAD_S)
    return WARMUP_RUNS_EXPECTED * (settings.warmup.duration_s + ATTEMPT_OVERHEAD_S)


def jit_warmup_seconds(server: Server, scenario: Scenario, run: Run) -> float:
    """What a server's first warm-up on a connection-per-request load adds to the usual one (measurement.
    first_connections)."""
    return first_connections(server, scenario, run) / JIT_WARMUP_RPS


@dataclass
class Clock:
    """The run's estimated duration before it starts, and its remaining time as it goes (the estimate of what is left,
    scaled by how the estimate fared on what is done)."""

    planned: list[float] = field(default_factory=list)
    done_estimate: float = 0.0
    started: float = field(default_factory=time.monotonic)

    def plan(self, seconds: float) -> None:
        self.planned.append(seconds)

    @property
    def total(self) -> float:
        return sum(self.planned)

    def advance(self, estimated_s: float) -> None:
        self.done_estimate += estimated_s

    def elapsed_s(self) -> float:
        return time.monotonic() - self.started

    def remaining_s(self) -> float:
        left = max(self.total - self.done_estimate, 0.0)
        if self.done_estimate < 30:
            return left
        pace = (time.monotonic() - self.started) / self.done_estimate
        return left * min(max(pace, 0.5), 3.0)

    def status(self) -> str:
        share = self.done_estimate / self.total if self.total else 1.0
        return f"run {share:.0%}, ~{minutes(self.remaining_s())} left"


def minutes(seconds: float) -> str:
    return f"{seconds / 60:.0f} min" if seconds >= 90 else f"{math.ceil(seconds):.0f} s"


def estimate(clock: Clock, servers: list[Server], scenarios: list[Scenario], settings: Settings) -> dict:
    """Plans every server start, warm-up and attempt on `clock`; returns the counts for the announcement."""
    repeat_of = {s.name: s.repeat(settings) for s in scenarios}
    counts = {"servers": 0, "records": 0, "attempts": 0, "warmups": 0}
    for server in servers:
        applicable = [s for s in scenarios if s.path_for(server)]
        if not applicable:
            continue
        counts["servers"] += 1
        clock.plan(START_S)
        last_load, patterns = None, set()
        for scenario in applicable:
            warmed = {id(r) for r in warmed_runs(scenario)}
            for run in scenario.runs:
                if id(run) in warmed and load_key(scenario, run, server) != last_load:
                    counts["warmups"] += 1
                    clock.plan(warmup_seconds(scenario, settings))
                    if pattern(scenario, run) not in patterns:  # its first warm-up on this pattern
                        clock.plan(jit_warmup_seconds(server, scenario, run))
                    patterns.add(pattern(scenario, run))
                last_load = load_key(scenario, run, server)
                counts["records"] += 1
                counts["attempts"] += repeat_of[scenario.name]
                clock.plan(repeat_of[scenario.name] * (attempt_seconds(run) + ATTEMPT_OVERHEAD_S))
    return counts


def warmed_runs(scenario: Scenario) -> list[Run]:
    """The runs a warm-up precedes: the first, and each that changes the connection pattern (backend: close, then
    keep-alive)."""
    out, last = [], None
    for run in scenario.runs:
        if pattern(scenario, run) != last:
            out.append(run)
            last = pattern(scenario, run)
    return out


# -- the campaign ------------------------------------------------------------------------------------------------------

def run_campaign(session: Session, store: RunStore, servers: list[Server], scenarios: list[Scenario], settings: Settings,
                 order: str = "auto", round_no: int | None = None) -> bool:
    """Returns False when a server could not start, failed its contract (it is then not measured) or died during the
    run. `round_no`: the round of a run in rounds (overhead), recorded on each record."""
    wanted, not_measured = [], {}
    for server in servers:
        for s in scenarios:
            if s.protocol == "h2c" and not server.h2c_port:  # the report says so (conditions, not_measured)
                not_measured[f"{server.name} {s.name}"] = "it speaks no h2c (its manifest gives no h2c_port)"
        if scenarios and not any(s.path_for(server) for s in scenarios):
            say(f"{server.name}: serves none of the routes of {', '.join(s.name for s in scenarios)}"
                + (" over h2c" if any(s.protocol == "h2c" for s in scenarios) else "") + "; skipped")
        else:
            wanted.append(server)
    if not_measured:
        store.update_conditions(not_measured=not_measured)
    mode, why = choose_order(order, wanted, {s.name: session.port(s) for s in wanted}, psutil.virtual_memory().available)
    order_condition = {
        "mode": mode, "why": why,
        "idle": ("servers not being measured stay up and pinned to the server CPUs but sleep (their processes stopped "
                 "with SIGSTOP until their turn; the upstream nginx never sleeps); the CPU they use during each attempt "
                 "is recorded in the attempt's samples.idle_servers") if mode == "interleaved" else None}
    clock = Clock()
    counts = estimate(clock, wanted, scenarios, settings)
    say(f"order: {mode} ({why})")
    if scenarios:
        say(f"estimated duration: about {minutes(clock.total)} ({counts['servers']} servers, {counts['records']} "
            f"records of {counts['attempts']} attempts, {counts['warmups']} warm-ups)")
    store.update_conditions(order=order_condition, estimated_s=round(clock.total))
    groups = [wanted] if mode == "interleaved" else [[s] for s in wanted]
    all_ok = True
    for group in groups:
        targets, turns = [], None
        try:
            for server in group:
                target = start_and_verify(session, store, server)
                clock.advance(START_S)
                if target is None:
                    all_ok = False
                else:
                    targets.append(target)
            turns = Turns(session, targets) if len(targets) > 1 else None
            bench = Bench(session, store, round_no=round_no, status=clock.status, turn=turns,
                          idle_pids=_idle_pids(session, targets) if turns else None,
                          remeasure_left_s=settings.remeasure_s,
                          budget_left=(lambda: settings.budget_s - clock.elapsed_s() - clock.remaining_s())
                          if settings.budget_s else None)
            for scenario in scenarios:
                members = [t for t in targets if scenario.path_for(t.server)]
                if members:
                    measure_in_rounds(bench, clock, members, scenario, settings)
            if bench.dead:
                all_ok = False
        finally:
            if turns:
                turns.wake_all()
            for server in group:
                session.release(server.name)
    return all_ok


def start_and_verify(session: Session, store: RunStore, server: Server):
    """The server up and verified as a Target; None when it could not start or failed the contract."""
    try:
        running = session.ensure(server)
    except RuntimeError_ as exc:
        fail(str(exc))
        store.set_server(server.name, {"started": False, "error": str(exc), "roles": list(server.roles),
                                       **_earlier_deaths(store, server)})
        return None
    report = verify(running, server, session.upstream)
    store.set_verification(server.name, Verification(report.ok, report.checks, report.failures))
    started_here = server.name in session.started
    store.set_server(server.name, {
        "started": True, "version": session.runtime.version(server), "stack": server.stack, "roles": list(server.roles),
        "port": running.port, "runtime": session.runtime.name, "cpus": running.cpus,
        "placement": session.runtime.describe(running), "startup_s": running.startup_s if started_here else None,
        "started_by_this_run": started_here, "log": running.log,
        **({"twin_of": server.twin_of} if server.twin_of else {}),
        **inventory.describe(server, session.servers), **_earlier_deaths(store, server)})
    if not report.ok:
        warn(f"{server.name} is not benchmarked: it fails the contract")
        return None
    return Target(server, running)


def _earlier_deaths(store: RunStore, server: Server) -> dict:
    """The deaths an earlier round of this run (overhead) recorded in the server's entry, kept when it is rewritten."""
    deaths = store.run.servers.get(server.name, {}).get("deaths")
    return {"deaths": deaths} if deaths else {}


def _idle_pids(session: Session, targets: list[Target]):
    """pids of the servers that sleep while `name` is measured (the upstream nginx, on its own CPUs, is not idle)."""
    def pids(name: str) -> list[int]:
        out = []
        for t in targets:
            if t.name != name and not session.is_upstream(t.name):
                out.extend(session.runtime.pids(t.running))
        return out
    return pids


def measure_in_rounds(bench: Bench, clock: Clock, members: list[Target], scenario: Scenario, settings: Settings) -> None:
    """Warm-ups, then `repeat` rounds of one attempt per server (one server: its attempts back to back). A server that
    dies (measurement.Bench.died) gets the record of what it did, and no further round, run or warm-up."""
    repeat = scenario.repeat(settings)
    warmups: dict[str, Warmup] = {}
    warm_before = {id(r) for r in warmed_runs(scenario)}
    for run in scenario.runs:
        members = [t for t in members if t.name not in bench.dead]
        if not members:
            return
        if id(run) in warm_before:
            for t in members:
                last = bench.last_load.get(t.name)
                if last and last[0] == load_key(scenario, run, t.server):
                    warmups[t.name] = warm_from(last[1], last[2], scenario.tool)
                    say(f"  {t.name} {scenario.name} {run.label}: no warm-up, the same load as {last[1]} just before")
                    continue
                first = (t.name, pattern(scenario, run)) not in bench.warmed
                bench.warmed.add((t.name, pattern(scenario, run)))
                warmups[t.name] = warm_up(bench, t, scenario, run, settings.warmup, first)
                clock.advance(warmup_seconds(scenario, settings) + (jit_warmup_seconds(t.server, scenario, run)
                                                                    if first else 0.0))
        attempts: dict[str, list[Attempt]] = {t.name: [] for t in members}
        for n in range(1, repeat + 1):
            alive = [t for t in members if t.name not in bench.dead]
            if not alive:
                break
            shift = (n - 1) % len(alive)
            turn = alive[shift:] + alive[:shift]  # whoever went first last round goes later this one
            for position, t in enumerate(turn, 1):
                attempts[t.name].append(attempt(bench, t, scenario, run, n, repeat, warmups[t.name].rate,
                                                (position, len(turn)) if len(turn) > 1 else None))
                clock.advance(attempt_seconds(run) + ATTEMPT_OVERHEAD_S)
                if n < repeat:  # an interrupt loses no attempt (the last one's record is written just below)
                    keep(bench, t, scenario, run, attempts[t.name], warmups[t.name], repeat)
        for t in members:  # complete now (a server that died has its failure): what remeasure does is added after
            keep(bench, t, scenario, run, attempts[t.name], warmups[t.name], repeat, complete=True)
        for t in members:
            if t.name not in bench.dead:
                again = remeasure(bench, clock, t, scenario, run, repeat, attempts[t.name], settings)
                if again:
                    keep(bench, t, scenario, run, attempts[t.name], warmups[t.name], repeat, again, complete=True)
        for t in members:
            measured = [a for a in attempts[t.name] if a.measured]
            bench.last_load[t.name] = (load_key(scenario, run, t.server), f"{scenario.name} {run.label}",
                                       measured[-1].rps if measured else warmups[t.name].rate)
        evaluate_flags(bench.store)
    if any(r.rate_share for r in scenario.runs):
        record_capacity(bench.store, bench.store.run.conditions.get("slo_p99_ms") or capacity.slo_from_env())


def keep(bench: Bench, t: Target, scenario: Scenario, run: Run, attempts: list[Attempt], warmup: Warmup, repeat: int,
         remeasured: dict | None = None, complete: bool = False) -> None:
    """`t`'s record of `run` with the attempts taken so far, written to results.json (in place of the one written after
    its previous attempt): a record is kept from its first attempt on, marked incomplete until all were taken."""
    record = aggregate(t.server, scenario, run, scenario.path_for(t.server), attempts, warmup,
                       bench.session.runtime.name, bench.round_no)
    record.remeasured = remeasured
    if not attempts:
        record.failed = f"the server died before its first attempt: {bench.dead.get(t.name, 'it was gone')}"
    elif not complete and len(attempts) < repeat:
        record.incomplete = f"{len(attempts)} of {repeat} attempts: the run ended before the rest"
    bench.store.put_record(record)


def remeasure(bench: Bench, clock: Clock, t: Target, scenario: Scenario, run: Run, repeat: int,
              attempts: list[Attempt], settings: Settings) -> dict | None:
    """Where `t`'s attempts climbed or fell beyond the noise (harness.trend, the rule of the warming and drifting
    flags) and the run's re-measuring time allows: a further warm-up until settled, then `repeat` attempts back to back
    that replace `attempts` (the others sleep meanwhile); not the ceiling (never ranked, it keeps its flag), and not once
    the campaign's time budget (`budget_s`) would be overrun by it with what is still planned. Returns
    what the record keeps of the first attempts, or None when nothing was measured again."""
    found = flags.attempts_trend(attempts)
    if not found or not found.moving or t.server.has_role("ceiling"):  # the ceiling is never ranked: flagged only
        return None
    rates = [a.rps for a in attempts if a.measured]
    label = (f"  {t.name} {scenario.name} {run.label}: attempts {' → '.join(f'{r:,.0f}' for r in rates)} req/s, "
             f"{found.kind}")
    needed = (settings.warmup.window * (settings.warmup.duration_s + ATTEMPT_OVERHEAD_S)
              + repeat * (attempt_seconds(run) + ATTEMPT_OVERHEAD_S))
    budget = bench.budget_left() if bench.budget_left else math.inf
    if needed > min(bench.remeasure_left_s, budget):
        why = (f"{max(budget, 0):.0f} s left in the run's time budget beyond what is still to measure"
               if budget < bench.remeasure_left_s else f"{bench.remeasure_left_s:.0f} s of the run's re-measuring time left")
        say(f"{label}; not measured again ({why}, about {needed:.0f} s needed): flagged {found.kind}")
        return None
    say(f"{label}: warmed further and measured again")
    started = time.monotonic()
    clock.plan(needed)
    warmup = warm_up(bench, t, scenario, run, settings.warmup, False)
    again = [attempt(bench, t, scenario, run, n, repeat, warmup.rate, None) for n in range(1, repeat + 1)]
    clock.advance(needed)
    bench.remeasure_left_s = max(0.0, bench.remeasure_left_s - (time.monotonic() - started))
    attempts[:] = again
    return {"why": found.describe(), "first_attempts": rates, "warmup": warmup.to_dict(),
            "note": "measured again back to back after a further warm-up; the first attempts are not used"}


def record_capacity(store: RunStore, slo_p99_ms: float) -> None:
    """Each server's capacity at the latency target (harness.capacity), in its servers entry, and said."""
    for name, by_scenario in capacity.of_run(store.run, slo_p99_ms).items():
        store.set_server(name, {**store.run.servers.get(name, {}), "capacity": by_scenario})
        for scenario, c in by_scenario.items():
            if c["rps"]:
                say(f"  {name} {scenario}: capacity {c['rps']:,.0f} req/s at p99 ≤ {slo_p99_ms:g} ms "
                    f"(step {c['step']}, p99 {c['p99_ms']:.2f} ms)" + (" — at least: " + c["why"] if c["lower_bound"] else ""))
            else:
                warn(f"{name} {scenario}: no capacity at p99 ≤ {slo_p99_ms:g} ms: {c['why']}")


def evaluate_flags(store: RunStore) -> None:
    flags.evaluate(store.run)
    store.save()
