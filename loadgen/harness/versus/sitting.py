"""`make versus SERVER=node BASE=<rev>`: did a change make one server faster? Two builds of it, measured in one sitting.

BASE (and HEAD, default the working tree) is checked out into a worktree of its own and built with its manifest's
build command (checkout.py); the two builds run as two servers, `node@<base>` and `node@<head>` (the A/A twin's
mechanism: one server under another name and port, answering /id as itself), on the same CPUs, one at a time (the
other asleep, as in interleaved rounds). Each scenario's run is measured in starts: both builds started afresh (a
process keeps a speed of its own for its life, results/paired.py says why), warmed to steady state (warmup.py), then a
block of rounds of one attempt each, their order drawn at random every round (the executor's attempts,
attempts.Bench); starts follow until head ÷ base for req/s is known to within RESOLUTION or the run's share of
BUDGET_S is spent (results/paired.py: the interval over the starts and the verdict). The records are kept like any run's, the comparison in the run's conditions (`versus`), and the report
gives it a page of its own (report/versus_page.py)."""
from __future__ import annotations

import math
import random
import time
from contextlib import ExitStack
from dataclasses import dataclass, field, replace
from typing import Any

from harness.basics.cpus import CpuPlan
from harness.basics.machine import port_owner
from harness.basics.messages import say, warn
from harness.config import scenarios as scenario_data
from harness.config.manifest import Server, servers_dir
from harness.config.scenarios import LoadRun, Scenario, Settings
from harness.measuring import checkout
from harness.measuring.attempts import Bench
from harness.measuring.campaign import Turns, _idle_pids, record_memory_after, start_and_verify
from harness.measuring.checkout import Revision, RevisionError, Worktree
from harness.measuring.lifecycle import RunOptions, finish_run, open_run
from harness.measuring.schedule import Job, Target, warmup_step
from harness.measuring.session import Session
from harness.results import paired
from harness.results.aggregate import Measured, aggregate
from harness.results.records import Attempt, Warmup
from harness.results.store import RunStore, new_run_id
from harness.runtime import Runtime
from harness.runtime.protocol import RuntimeFailure

MIN_STARTS = 3  # before the resolution may end a run: an interval over starts needs two, and two give t = 12.7
MIN_ROUNDS_PER_START = 3
MAX_ROUNDS_PER_START = 12  # a JVM's long warm-up makes long starts, but never fewer than one start per ~25 rounds
DEFAULT_RESOLUTION = 0.03
DEFAULT_BUDGET_PER_RUN_S = 120.0  # without BUDGET_S: this much per scenario run (SCENARIOS=hello: 2 minutes)


@dataclass(frozen=True)
class VersusOptions:
    server: str
    base: str
    head: str = ""  # "": the working tree
    scenarios: tuple[str, ...] = ()  # (): every scenario the server takes part in
    resolution: float = DEFAULT_RESOLUTION  # the interval's half-width to reach, as a fraction
    budget_s: float | None = None  # measuring time (warm-ups and rounds) for all the scenarios together
    seed: int | None = None  # of the rounds' order (None: drawn)


@dataclass
class Side:
    """One build: its revision, the server as built, and its record's attempts and warm-up of the current run."""

    role: str  # "base" or "head"
    revision: Revision
    server: Server
    target: Target | None = None
    attempts: list[Attempt] = field(default_factory=list)
    warmup: Warmup | None = None


@dataclass
class Pair:
    """The two builds' processes in one sitting, and how to start them afresh (a start of the rounds)."""

    bench: Bench
    turns: Turns
    targets: list[Target]  # the list the bench reads the sleepers' pids from
    sides: tuple[Side, Side]

    def restart(self, rng: random.Random, jobs: dict[str, Job]) -> bool:
        """Both builds stopped and started again, in a random order, as new processes that must be warmed again;
        False when one could not start (recorded as its death)."""
        session, bench = self.bench.session, self.bench
        self.turns.wake_all()
        for side in rng.sample(list(self.sides), 2):
            session.stop(side.server.name)
            try:
                running = session.ensure(side.server)
            except RuntimeFailure as exc:
                bench.dead[side.server.name] = f"it did not start again: {exc}"
                warn(f"{side.server.name} did not start again: {exc}")
                return False
            side.target = Target(side.server, running)
            jobs[side.role] = replace(jobs[side.role], target=side.target)
            bench.history.last_load.pop(side.server.name, None)
            bench.history.warmed = {key for key in bench.history.warmed if key[0] != side.server.name}
        self.targets[:] = [side.target for side in self.sides if side.target]
        self.turns.retarget(self.targets)
        return True


def prepare(options: VersusOptions, servers: dict[str, Server], stack: ExitStack) -> tuple[Side, Side]:
    """Both builds checked out (worktrees entered on `stack`, so they are removed however the command ends) and built;
    RevisionError or checkout.BuildFailed when one cannot be."""
    if options.server not in servers:
        raise RevisionError(f"SERVER={options.server!r}: no such server (known: {', '.join(servers)})")
    here = servers[options.server]
    repo = checkout.repository_of(here.folder)
    base = checkout.resolve(repo, options.base, "BASE")
    head = checkout.resolve(repo, options.head, "HEAD")
    checkout.clear_leftovers()
    relative = servers_dir().resolve().relative_to(repo.resolve())
    log = checkout.WORKTREES / f"{options.server}-build.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_bytes(b"")
    sides = []
    for role, revision in (("base", base), ("head", head)):
        if revision.sha is None:
            server = here
        else:
            tree = stack.enter_context(Worktree(repo, revision, f"{options.server}-{role}"))
            server = checkout.server_at(tree.path / relative, options.server, revision, role.upper())
        sides.append(Side(role, revision, server))
    labels = [f"{options.server}@{s.revision.label}" for s in sides]
    if labels[0] == labels[1]:
        labels = [f"{labels[0]}-base", f"{labels[1]}-head"]
    for side, label in zip(sides, labels):
        checkout.build(side.server, label, log)
        side.server = replace(side.server, name=label, twin_of=options.server, roles=())  # neither upstream nor ceiling
    return sides[0], sides[1]


def place(base: Side, head: Side, port: int, servers: dict[str, Server]) -> None:
    """The head on `port` (the server's own, or PORTS's), the base on the next port free of every server's and of
    any listener, their h2c ports moved with them."""
    taken = {p for s in servers.values() for p in (s.port, s.h2c_port) if p}
    head.server = _moved(head.server, port)
    shift = 1
    while True:
        moved = _moved(base.server, port + shift)
        ports = [p for p in (moved.port, moved.h2c_port) if p]
        if not set(ports) & (taken | {head.server.port, head.server.h2c_port}) and \
                not any(port_owner("127.0.0.1", p) for p in ports):
            base.server = moved
            return
        shift += 1


def _moved(server: Server, port: int) -> Server:
    h2c = server.h2c_port + port - server.port if server.h2c_port else None
    return replace(server, port=port, h2c_port=h2c)


def scenarios_for(server: Server, profile: str, names: tuple[str, ...]) -> list[Scenario]:
    picked = scenario_data.select(scenario_data.load(profile), list(names))
    return [s for s in picked if s.path_for(server) and (s.protocol != "h2c" or server.h2c_port)]


@dataclass
class Sitting:
    """The measuring part: both servers up and verified, each scenario's runs compared in random-order rounds."""

    session: Session
    store: RunStore
    settings: Settings
    options: VersusOptions
    rng: random.Random
    results: list[dict] = field(default_factory=list)

    def measure(self, base: Side, head: Side, scenarios: list[Scenario]) -> bool:
        for side in (base, head):
            side.target = start_and_verify(self.session, self.store, side.server)
        if not base.target or not head.target:
            return False
        targets = [base.target, head.target]  # updated in place at every start: the sleepers' pids are read from it
        turns = Turns(self.session, targets)
        bench = Bench(self.session, self.store, turn=turns, idle_pids=_idle_pids(self.session, targets))
        pair = Pair(bench, turns, targets, (base, head))
        runs = [(s, r) for s in scenarios for r in s.runs]
        ends_at = time.monotonic() + (self.options.budget_s or DEFAULT_BUDGET_PER_RUN_S * len(runs))
        try:
            for index, (scenario, run) in enumerate(runs):
                share = (ends_at - time.monotonic()) / (len(runs) - index)
                self.compare_run(pair, scenario, run, time.monotonic() + share)
                if bench.dead:
                    return False
        finally:
            turns.wake_all()
            for side in (base, head):
                record_memory_after(self.session, self.store, side.server)
        return True

    def compare_run(self, pair: Pair, scenario: Scenario, run: LoadRun, deadline: float) -> None:
        """One run of a scenario, in starts: both builds started afresh (but for the first start, which takes the
        processes up already), warmed, then a block of rounds in a random order; until the req/s ratio's interval over
        the starts is narrower than the resolution (after MIN_STARTS) or `deadline` would be passed."""
        bench, sides = pair.bench, pair.sides
        jobs = {side.role: Job(side.target, side.server, scenario, run) for side in sides}
        for side in sides:
            side.attempts = []
        orders: list[list[str]] = []
        starts: list[list[int]] = []
        block, stop, n, comparison = MIN_ROUNDS_PER_START, "", 0, compare([], [], [])
        while not stop:
            began = time.monotonic()
            if starts and not pair.restart(self.rng, jobs):
                stop = "a server died"
                break
            self.warm_up(pair, jobs)
            setup_s, round_s = time.monotonic() - began, 0.0
            rounds: list[int] = []
            starts.append(rounds)
            while len(rounds) < block and not stop:
                n += 1
                started = time.monotonic()
                order = self.rng.sample(list(sides), 2)
                orders.append([side.role for side in order])
                for position, side in enumerate(order, 1):
                    rate = side.attempts[-1].rps if side.attempts and side.attempts[-1].rps else (
                        side.warmup.rate if side.warmup else None)
                    side.attempts.append(bench.attempt(jobs[side.role], n, 2, rate, (position, 2)))
                    self.keep(bench, jobs[side.role], side)
                rounds.append(n)
                round_s = time.monotonic() - started
                comparison = compare(sides[0].attempts, sides[1].attempts, starts)
                stop = self.stop_reason(comparison, starts, len(rounds) == block, deadline, round_s, bench)
                say(f"  start {len(starts)} round {n}: {progress_line(comparison)}" + (f"; {stop}" if stop else ""))
            # a start costs its set-up (a restart and two warm-ups) and its rounds: as many rounds as the set-up takes
            # seconds, so that at least half of a start's time is measuring
            block = max(MIN_ROUNDS_PER_START, min(MAX_ROUNDS_PER_START, math.ceil(setup_s / max(round_s, 0.1))))
            if not stop and time.monotonic() + setup_s + MIN_ROUNDS_PER_START * round_s > deadline:
                stop = self.budget_spent(comparison, starts)
        for side in sides:
            bench.history.loaded(jobs[side.role], side.attempts[-1].rps if side.attempts else None)
        bench.evaluate()
        self.results.append({"scenario": scenario.name, "run": run.label, "rounds": n, "starts": starts,
                             "order": orders, "stopped": stop, **comparison})
        self.store.update_conditions(versus={**self.store.run.conditions["versus"], "results": self.results})

    def warm_up(self, pair: Pair, jobs: dict[str, Job]) -> None:
        """Both builds warmed to steady state, in a random order, before a start's rounds."""
        for side in self.rng.sample(list(pair.sides), 2):
            job = jobs[side.role]
            step = warmup_step(job, pair.bench.history)
            if step is None:  # the run follows one of the same connection pattern: its warm-up holds
                continue
            if step.after is not None:
                say(f"  {side.server.name} {job.label}: no warm-up, the same load as {step.after} just before")
                side.warmup = Warmup(tool=job.scenario.tool, runs=[], steady=True, tolerance=None, max_runs=None,
                                     rate=step.rate, after=step.after)
            else:
                side.warmup = pair.bench.warm_up(step, self.settings.warmup)

    def stop_reason(self, comparison: dict, starts: list[list[int]], start_done: bool, deadline: float,
                    round_s: float, bench: Bench) -> str:
        if bench.dead:
            return "a server died"
        rps = comparison["metrics"]["rps"]["interval"]
        width = rps["half_width"] if rps else None
        if start_done and len(starts) >= MIN_STARTS and width is not None and width < self.options.resolution:
            return (f"resolution reached: ±{width * 100:.1f} % < ±{self.options.resolution * 100:g} % after "
                    f"{sum(map(len, starts))} rounds in {len(starts)} starts")
        if sum(map(len, starts)) >= 2 and time.monotonic() + round_s > deadline:  # an interval, however wide
            return self.budget_spent(comparison, starts)
        return ""

    def budget_spent(self, comparison: dict, starts: list[list[int]]) -> str:
        rps = comparison["metrics"]["rps"]["interval"]
        width = rps["half_width"] if rps else None
        reached = "no interval yet" if width is None else \
            f"±{width * 100:.1f} %" if width < 1 else "an interval wider than ±100 %"
        few = "; one start: how two processes of a build differ is not in the interval" if len(starts) < 2 else ""
        return (f"budget spent: {reached} after {sum(map(len, starts))} rounds in {len(starts)} starts (the goal was "
                f"±{self.options.resolution * 100:g} %; a larger BUDGET_S narrows it{few})")

    def keep(self, bench: Bench, job: Job, side: Side) -> None:
        of = Measured(job.name, job.scenario.path_for(job.server), bench.runtime_name)
        warmup = side.warmup or Warmup(tool=None, runs=[], steady=False, tolerance=None, max_runs=None)  # set before rounds
        bench.put_record(aggregate(of, job.scenario, job.run, side.attempts, warmup))


def per_round(attempts: list[Attempt], metric: str) -> dict[int, float | None]:
    """Each measured attempt's `metric` by its round."""
    out: dict[int, float | None] = {}
    for a in attempts:
        if not a.measured:
            continue
        if metric == "rps":
            out[a.attempt] = a.rps
        elif metric == "p99":
            out[a.attempt] = a.latency_ms.get("p99")
        else:
            server = a.samples.get("server")
            cpu_s = server.cpu_s if server else None
            out[a.attempt] = round(cpu_s / a.requests * 1e6, 3) if cpu_s and a.requests else None
    return out


def compare(base: list[Attempt], head: list[Attempt], starts: list[list[int]]) -> dict:
    """Per metric: head ÷ base per round, its interval by starts (each start's rounds in `starts`) and verdict, and
    the A/A pass of each build's own rounds."""
    metrics: dict[str, Any] = {}
    aa: dict[str, Any] = {}
    for metric in paired.METRICS:
        b, h = per_round(base, metric), per_round(head, metric)
        by_start = [paired.paired_ratios({n: b[n] for n in rounds if n in b}, h) for rounds in starts]
        interval = paired.grouped_interval(by_start)
        metrics[metric] = {"base": [b.get(n) for n in sorted(b)], "head": [h.get(n) for n in sorted(h)],
                           "ratios": [round(r, 5) for r in paired.paired_ratios(b, h)],
                           "interval": interval.to_dict() if interval else None,
                           "verdict": paired.verdict(interval, metric)}
        for role, values in (("base", b), ("head", h)):
            own = paired.grouped_interval([paired.split_halves(values, rounds) for rounds in starts])
            aa.setdefault(role, {})[metric] = {"interval": own.to_dict() if own else None,
                                               "excludes_no_change": own.excludes_no_change() if own else None}
    return {"metrics": metrics, "aa": aa}


def progress_line(comparison: dict) -> str:
    rps = comparison["metrics"]["rps"]
    interval = rps["interval"]
    if not interval:
        return "head ÷ base req/s: one round, no interval yet"
    return (f"head ÷ base req/s {interval['ratio']:.3f} ({interval['low']:.3f}–{interval['high']:.3f}), "
            f"±{interval['half_width'] * 100:.1f} %")


def start_note(options: VersusOptions, base: Side, head: Side, scenarios: list[Scenario]) -> dict:
    """The run's `versus` conditions before any round: what is compared, and how."""
    budget = options.budget_s or DEFAULT_BUDGET_PER_RUN_S * sum(len(s.runs) for s in scenarios)
    return {"server": options.server, "resolution": options.resolution, "budget_s": budget,
            "seed": options.seed, "min_starts": MIN_STARTS, "rounds_per_start": [MIN_ROUNDS_PER_START,
                                                                                  MAX_ROUNDS_PER_START],
            "level": paired.LEVEL,
            "builds": {side.role: {"name": side.server.name, "port": side.server.port, **side.revision.to_dict()}
                       for side in (base, head)},
            "scenarios": [s.name for s in scenarios], "results": [],
            "method": ("paired rounds in starts: both builds started afresh for each start and warmed, then rounds of one "
                       "attempt of each build, the order drawn at random each round, as many rounds per start as its "
                       "set-up took seconds (3 to 12); head ÷ base per round, each start's geometric mean, and the "
                       "Student t interval of those on the log scale (over the rounds while there is one start); the "
                       "A/A pass splits each build's own rounds of a start into odd and even halves")}


@dataclass(frozen=True)
class Where:
    """Where and how the sitting runs: the runtime, its CPU plan, the profile and its settings, PORTS, the command."""

    runtime: Runtime
    plan: CpuPlan
    profile: str
    settings: Settings
    ports: dict[str, int]
    command: str


def run(options: VersusOptions, servers: dict[str, Server], where: Where) -> int:
    """The whole command: both builds made, measured and compared, the report written; the worktrees and servers
    gone however it ends. 0, or 1 when a build could not be started, failed the contract or died."""
    seed = options.seed if options.seed is not None else random.SystemRandom().randrange(2**32)
    options = replace(options, seed=seed)
    with ExitStack() as stack:  # unwound in reverse: the servers stopped, then the worktrees removed
        base, head = prepare(options, servers, stack)
        place(base, head, where.ports.get(options.server, servers[options.server].port), servers)
        picked = scenarios_for(head.server, where.profile, options.scenarios)
        if not picked:
            raise RevisionError(f"SCENARIOS={' '.join(options.scenarios)}: {options.server} takes part in none of them")
        pair = {side.server.name: side.server for side in (base, head)}
        others = {name: s for name, s in servers.items() if name != options.server}  # its folder is the head's
        session = stack.enter_context(Session(where.runtime, where.plan, {**others, **pair}, where.ports))
        session.check_ports(list(pair.values()))
        store = open_run(new_run_id(f"versus-{options.server}"), where.runtime, where.plan,
                         RunOptions(where.profile, where.settings, where.command),
                         {"versus": start_note(options, base, head, picked)},
                         how=f"{head.server.name} against {base.server.name}, rounds in random order")
        sitting = Sitting(session, store, where.settings, options, random.Random(seed))
        try:
            ok = sitting.measure(base, head, picked)
        finally:
            finish_run(store, where.runtime)
        announce(sitting.results)
        return 0 if ok else 1


def announce(results: list[dict]) -> None:
    """The answer, printed last: per scenario and run, the verdict for req/s, p99 and CPU per request."""
    if not results:
        warn("nothing was compared")
    for r in results:
        say(f"{r['scenario']} {r['run']} ({r['rounds']} rounds; {r['stopped']}):")
        for metric, (_, title, _, _) in paired.METRICS.items():
            say(f"  {title}: {r['metrics'][metric]['verdict']}")
        aa = [f"{role} {'EXCLUDES 1' if a['rps']['excludes_no_change'] else 'holds 1'}"
              for role, a in r["aa"].items() if a["rps"]["interval"]]
        if aa:
            say(f"  A/A (each build's rounds split in two, req/s): {', '.join(aa)}; a 95 % interval excludes 1 for "
                "identical builds 5 % of the time")
