"""The measuring part of `make versus`: both builds up and verified, each scenario run compared in starts of rounds.

A start: both builds started afresh (but for a run's first start, which takes the processes up already), each warmed
for this run's connection pattern (a full warm-up, with its JIT's first connections, on a fresh process: a run that
follows another of the same pattern is not measured cold after a restart), then its rounds in ABBA order. How many
starts and rounds is the clock's decision (stats/sitting_shape.py), never the figures'. A run's offered rate (an
open-model step's share, a counting tool's size) is fixed once, from its first warm-up, for every start.

The executor is a protocol, so tests/test_versus_design.py drives the real rule with a fake one."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from harness.basics.messages import say, warn
from harness.config.manifest import Server
from harness.config.scenarios import LoadRun, Scenario, Settings
from harness.measuring.executor import LoadExecutor
from harness.measuring.run_plan import Job, WarmupStep, first_connections, pattern, sitting_costs
from harness.results.records import Attempt, Marks, Warmup
from harness.runtime.protocol import RuntimeFailure
from harness.servers.readiness import Target
from harness.servers.turns import Turns
from harness.stats import paired
from harness.stats import sitting_shape as design
from harness.versus import speeds
from harness.versus.checkout import Revision


@dataclass
class Side:
    """One build: its revision, the server as built, its process, and its attempts and warm-up of the current run."""

    role: str  # "base" or "head"
    revision: Revision
    server: Server
    target: Target | None = None
    attempts: list[Attempt] = field(default_factory=list)
    warmup: Warmup | None = None
    rate: float | None = None  # the run's offered or sizing rate, from its first warm-up


class Builds(Protocol):
    """What a sitting needs done: builds restarted, warmed and loaded, their records kept (Pair; a fake in tests)."""

    @property
    def dead(self) -> dict[str, str]: ...

    def restart(self, first: Side) -> bool: ...

    def warm_up(self, side: Side, job: Job) -> Warmup: ...

    def attempt(self, side: Side, job: Job, n: int, position: tuple[int, int]) -> Attempt: ...

    def keep(self, side: Side, job: Job) -> None: ...

    def evaluate(self) -> None: ...


@dataclass
class Pair:
    """The two builds' processes in one sitting (the real executor): the bench's attempts and warm-ups, the turns
    that put the other build to sleep, and which connection patterns each process was warmed on."""

    bench: LoadExecutor
    turns: Turns
    targets: list[Target]  # the list the bench reads the sleepers' pids from
    sides: tuple[Side, Side]
    settings: Settings
    warmed: set[tuple[str, tuple[object, ...]]] = field(default_factory=set)  # (name, pattern) of the processes up now

    @property
    def dead(self) -> dict[str, str]:
        return self.bench.dead

    def restart(self, first: Side) -> bool:
        """Both builds stopped and started again, `first` first, as new processes (warmed again: none of their
        patterns is warm); False when one could not start (recorded as its death)."""
        session = self.bench.session
        self.turns.wake_all()
        for side in sorted(self.sides, key=lambda s: s is not first):
            session.stop(side.server.name)
            try:
                running = session.ensure(side.server)
            except RuntimeFailure as exc:
                self.bench.dead[side.server.name] = f"it did not start again: {exc}"
                warn(f"{side.server.name} did not start again: {exc}")
                return False
            side.target = Target(side.server, running)
            self.warmed = {key for key in self.warmed if key[0] != side.server.name}
        self.targets[:] = [side.target for side in self.sides if side.target]
        self.turns.retarget(self.targets)
        return True

    def warm_up(self, side: Side, job: Job) -> Warmup:
        """A full warm-up of `job`'s load; a process never warmed on its connection pattern also makes its JIT's
        first connections."""
        key = (side.server.name, pattern(job.scenario, job.run))
        fresh = key not in self.warmed
        self.warmed.add(key)
        step = WarmupStep(
            replace(job, target=side.target),
            first=fresh,
            connections=first_connections(side.server, job.scenario, job.run) if fresh else 0,
        )
        return self.bench.warm_up(step, self.settings.warmup)

    def attempt(self, side: Side, job: Job, n: int, position: tuple[int, int]) -> Attempt:
        return self.bench.attempt(replace(job, target=side.target), n, 2, side.rate, position)

    def keep(self, side: Side, job: Job) -> None:
        warmup = side.warmup or Warmup(tool=None, runs=[], steady=False, tolerance=None, max_runs=None)
        self.bench.keep(job, side.attempts, warmup, Marks())

    def evaluate(self) -> None:
        self.bench.evaluate()


@dataclass
class Sitting:
    """Each scenario run compared in starts of rounds (see the module's docstring)."""

    executor: Builds
    sides: tuple[Side, Side]
    settings: Settings
    first: str  # the role that leads the first start
    clock: Callable[[], float] = time.monotonic

    def compare_run(self, scenario: Scenario, run: LoadRun, budget_s: float, restart_first: bool) -> dict[str, Any]:
        """One run within `budget_s`: its starts (the first one restarting the builds only if `restart_first`), and
        the comparison with how it went."""
        ex, began = self.executor, self.clock()
        jobs = {side.role: Job(side.target, side.server, scenario, run) for side in self.sides}
        for side in self.sides:
            side.attempts, side.rate = [], None
        costs = sitting_costs(scenario, run, self.settings)
        shape = design.plan(budget_s, costs)
        planned, rounds_per_start = shape.starts, shape.rounds_per_start
        starts: list[list[int]] = []
        orders: list[list[str]] = []
        setups, rounds_s = [], []
        timing: dict[str, list[float]] = {"restart_s": [], "warmup_s": []}  # per start: where the time goes
        stop = f"the planned starts done ({rounds_per_start} rounds each, the count set by the clock only)"
        while len(starts) < planned:
            k, t0 = len(starts), self.clock()
            leader = self.side(design.leader(k, self.first, self.other))
            if (k or restart_first) and not ex.restart(leader):
                stop = "a server died"
                break
            restarted = self.clock()
            self.warm_up(jobs, leader)
            setups.append(self.clock() - t0)
            timing["restart_s"].append(round(restarted - t0, 2))
            timing["warmup_s"].append(round(self.clock() - restarted, 2))
            block: list[int] = []
            starts.append(block)
            for j in range(rounds_per_start):
                if ex.dead:
                    break
                t1, n = self.clock(), len(orders) + 1
                order = design.order(k, j, self.first, self.other)
                orders.append(order)
                for position, role in enumerate(order, 1):
                    side = self.side(role)
                    side.attempts.append(ex.attempt(side, jobs[role], n, (position, 2)))
                    ex.keep(side, jobs[role])
                block.append(n)
                rounds_s.append(self.clock() - t1)
                say(f"  start {k + 1} round {n}: {progress_line(compare(self.sides, starts))}")
            if ex.dead:
                stop = "a server died"
                break
            measured = design.Costs(max(setups), sum(rounds_s) / len(rounds_s))
            planned = design.replan(budget_s - (self.clock() - began), len(starts), measured, rounds_per_start)
            say(f"  start {len(starts)} done; {planned - len(starts)} more in the time left")
        ex.evaluate()
        return {
            "scenario": scenario.name,
            "run": run.label,
            "rounds": len(orders),
            "starts": starts,
            "rounds_per_start": rounds_per_start,
            "order": orders,
            "stopped": stop,
            "seconds": round(self.clock() - began, 1),
            "timing": {**timing, "round_s": round(sum(rounds_s) / len(rounds_s), 2) if rounds_s else None},
            **compare(self.sides, starts),
        }

    @property
    def other(self) -> str:
        return "head" if self.first == "base" else "base"

    def side(self, role: str) -> Side:
        return next(s for s in self.sides if s.role == role)

    def warm_up(self, jobs: dict[str, Job], leader: Side) -> None:
        """Both builds warmed for this run's load, the start's leader first; the run's rate taken from its first."""
        for side in sorted(self.sides, key=lambda s: s is not leader):
            side.warmup = self.executor.warm_up(side, jobs[side.role])
            if side.rate is None:
                side.rate = side.warmup.rate


def per_round(attempts: list[Attempt], metric: str, role: str | None = None) -> dict[int, float | None]:
    """Each measured attempt's `metric` by its round; on `role`'s CPU speed where a role is given (speeds.py)."""
    out: dict[int, float | None] = {}
    for a in attempts:
        if not a.measured:
            continue
        if metric == "rps":
            value = a.rps
        elif metric == "p99":
            value = a.latency_ms.get("p99")
        else:
            server = a.samples.get("server")
            cpu_s = server.cpu_s if server else None
            value = round(cpu_s / a.requests * 1e6, 3) if cpu_s and a.requests else None
        out[a.attempt] = speeds.corrected(value, a, metric, role)
    return out


def ratios_by_start(sides: tuple[Side, Side], starts: list[list[int]], metric: str) -> list[list[float]]:
    """head ÷ base per round, one list per start, of the figure the interval is taken on (speeds.role_for)."""
    role = speeds.role_for(metric, [side.attempts for side in sides])
    base, head = (per_round(side.attempts, metric, role) for side in sides)
    return paired.start_ratios(base, head, starts)


def compare(sides: tuple[Side, Side], starts: list[list[int]]) -> dict[str, Any]:
    """Per metric: each build's value as measured and head ÷ base by round (with the rounds they belong to), the
    interval by starts and the verdict's words (the evidence's caveats are added once the run is done). With CPU_METER=1
    the ratios and the interval are of the figures on their CPU's speed (speeds.py), beside the interval as measured and
    the meter's own head ÷ base."""
    metrics: dict[str, Any] = {}
    for metric in paired.METRICS:
        role = speeds.role_for(metric, [side.attempts for side in sides])
        b, h = (per_round(side.attempts, metric) for side in sides)
        cb, ch = (per_round(side.attempts, metric, role) for side in sides)
        both = [(n, bv, hv) for n in sorted(cb) if (bv := cb[n]) and (hv := ch.get(n))]
        interval = paired.grouped_interval(paired.start_ratios(cb, ch, starts))
        metrics[metric] = {
            "base": [b[n] for n in sorted(b)],
            "base_rounds": sorted(b),
            "head": [h[n] for n in sorted(h)],
            "head_rounds": sorted(h),
            "ratios": [round(hv / bv, 5) for _, bv, hv in both],
            "ratio_rounds": [n for n, _, _ in both],
            "interval": interval.to_dict() if interval else None,
            "verdict": paired.verdict(interval, metric),
            "on": speeds.described(role, metric),
            **(_as_measured(sides, starts, role, metric, (b, h)) if role else {}),
        }
    return {"metrics": metrics}


def _as_measured(
    sides: tuple[Side, Side],
    starts: list[list[int]],
    role: str,
    metric: str,
    values: tuple[dict[int, float | None], dict[int, float | None]],
) -> dict[str, Any]:
    """Beside `metric`'s interval on `role`'s CPU speed: the one on `values` (base's and head's as measured), head ÷ base
    of the meter's readings, and the words the verdict says them in (speeds.caveat)."""
    measured = paired.grouped_interval(paired.start_ratios(*values, starts))
    meter = speeds.speed_interval([side.attempts for side in sides], starts, role)
    return {
        "interval_as_measured": measured.to_dict() if measured else None,
        "speed_ratio": meter.to_dict() if meter else None,
        "speed_note": speeds.caveat(role, metric, measured, meter),
    }


def progress_line(comparison: dict[str, Any]) -> str:
    interval = comparison["metrics"]["rps"]["interval"]
    if not interval:
        return "head ÷ base req/s: no interval yet"
    return (
        f"head ÷ base req/s {interval['ratio']:.3f} ({interval['low']:.3f}–{interval['high']:.3f}), "
        f"±{interval['half_width'] * 100:.1f} %"
    )
