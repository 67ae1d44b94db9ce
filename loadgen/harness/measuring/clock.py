"""A campaign's clock: the whole run's estimate before it starts (the plan of run_plan.py added up: each attempt's
planned duration, each warm-up's expected runs, each server's start), and its remaining time as it goes, from what the
steps of each kind have actually cost so far (`remaining_s`), announced again after every scenario (`progress`)."""

from __future__ import annotations

import datetime
import math
import time
from dataclasses import dataclass, field, replace
from typing import Any

from harness.basics.messages import say
from harness.config.manifest import Server
from harness.config.scenarios import Scenario, Settings
from harness.measuring.run_plan import (
    History,
    Job,
    attempt_seconds,
    expected_warmup_runs,
    warmup_step,
)
from harness.results.store import RunStore
from harness.stats.sitting_shape import ATTEMPT_OVERHEAD_S, START_S

# the kinds of step, each with its own pace
START, WARMUP, ATTEMPT, REMEASURE, MORE = "start", "warm-up", "attempt", "measured again", "more rounds"
# A kind's own pace is trusted once this many of its estimated seconds are done; before, the pace of everything done
# (itself trusted past the same mark), else the estimate as it stands.
TRUSTED_S = 20.0
PACE_RANGE = (0.5, 2.0)  # a pace beyond these is a stall or a fluke, not what the rest will cost
# the share of the profile's re-measuring time a run is expected to spend: benches re-measured 2-6 records (20-60 s of
# the quick profile's 60)
REMEASURE_SHARE = 0.6
# the further rounds of tied records (more_rounds.py) a run would take without a budget, as a share of its attempts'
# time (synthetic sittings of nine servers spaced as this machine's benches, 3-6 % noise: 31 %); the budget caps them
MORE_ROUNDS_SHARE = 0.3
# a server's HTTP compliance probe in make bench (158 cases, and h2spec where it speaks h2c, its failures run again
# alone): the 10 probed on 2026-12-06 took 321 s with their starts, 577 s once h2spec's failures were run again
# alone (make probe, 7 of them speak h2c); a build already probed is not probed again
COMPLIANCE_PROBE_S = 55.0
# what a measuring run takes besides its campaign and probes: the report, its charts and the last stops (stop 38's
# steady benches: 5-20 s between results.json and the shell's prompt)
END_S = 15.0
# the forecast before a bench (measuring/forecast.py: a second nginx started, ten short attempts, stopped)
FORECAST_S = 15.0

# further rounds spend at most this share of what the budget leaves them: the rest is kept for what the estimate of
# the runs still to come misses (judging/more_rounds.py decides which records get them)
SPEND = 0.8


@dataclass
class Clock:
    """The run's estimated duration before it starts, and its remaining time as it goes: what is left of each kind
    (start, warm-up, attempt) at the pace that kind has kept so far (its actual seconds over its estimated ones)."""

    planned: dict[str, float] = field(default_factory=dict)  # kind -> estimated seconds
    done: dict[str, float] = field(default_factory=dict)  # kind -> estimated seconds of the steps done
    spent: dict[str, float] = field(default_factory=dict)  # kind -> actual seconds of the steps done
    started: float = field(default_factory=time.monotonic)
    first_total: float | None = None  # the estimate announced before the run

    def plan(self, seconds: float, kind: str = ATTEMPT) -> None:
        self.planned[kind] = self.planned.get(kind, 0.0) + seconds

    def plan_within(self, seconds: float, kind: str) -> None:
        """`seconds` more of `kind`, of which what the plan still holds for that kind is already counted (re-measuring:
        the estimate expected some)."""
        self.planned[kind] = max(self.planned.get(kind, 0.0), self.done.get(kind, 0.0) + seconds)

    @property
    def total(self) -> float:
        return sum(self.planned.values())

    def left(self, kind: str) -> float:
        """The estimated seconds of `kind` still to come."""
        return max(self.planned.get(kind, 0.0) - self.done.get(kind, 0.0), 0.0)

    @property
    def done_estimate(self) -> float:
        return sum(self.done.values())

    def advance(self, estimated_s: float, kind: str = ATTEMPT, actual_s: float | None = None) -> None:
        """A step of `kind` done: it was estimated at `estimated_s` and took `actual_s` (None: as estimated)."""
        self.done[kind] = self.done.get(kind, 0.0) + estimated_s
        self.spent[kind] = self.spent.get(kind, 0.0) + (estimated_s if actual_s is None else actual_s)

    def elapsed_s(self) -> float:
        return time.monotonic() - self.started

    def pace(self, kind: str) -> float:
        """What a second of `kind`'s estimate has actually cost so far (1.0 until enough of it is done)."""
        done, spent = self.done.get(kind, 0.0), self.spent.get(kind, 0.0)
        if done < TRUSTED_S:
            done, spent = self.done_estimate, sum(self.spent.values())
        if done < TRUSTED_S:
            return 1.0
        return min(max(spent / done, PACE_RANGE[0]), PACE_RANGE[1])

    def remaining_s(self) -> float:
        """What is left of each kind at its pace; of the re-measuring expected, as much as attempts are still to come
        (it follows them, and none is left once they are done)."""
        attempts_left = self.left(ATTEMPT) / self.planned[ATTEMPT] if self.planned.get(ATTEMPT) else 0.0
        return sum(
            self.left(kind) * self.pace(kind) * (attempts_left if kind in (REMEASURE, MORE) else 1.0)
            for kind in self.planned
        )

    def status(self) -> str:
        share = self.done_estimate / self.total if self.total else 1.0
        return f"run {share:.0%}, ~{minutes(self.remaining_s())} left"

    def progress(self, what: str) -> None:
        """After `what` (a scenario), the time so far and what is left at the pace kept, against the first estimate."""
        elapsed, left = self.elapsed_s(), self.remaining_s()
        ends = datetime.datetime.now() + datetime.timedelta(seconds=left)
        first = f" (estimated at first: {minutes(self.first_total)})" if self.first_total else ""
        say(
            f"{what} done after {minutes(elapsed)}; about {minutes(left)} left at the pace so far, "
            f"{minutes(elapsed + left)} in all, ending about {ends:%H:%M}{first}"
        )


def minutes(seconds: float) -> str:
    return f"{seconds / 60:.0f} min" if seconds >= 90 else f"{math.ceil(seconds):.0f} s"


def estimate(
    clock: Clock, servers: list[Server], scenarios: list[Scenario], settings: Settings, unsteadiness: float = 0.0
) -> dict[str, int]:
    """Plans every server start, warm-up and attempt on `clock`, as the plan (run_plan.py) has them; returns the
    counts for the announcement. `unsteadiness`: the machine's CV as the steadiness probe read it (warm-ups wait out
    the noise: schedule.expected_warmup_runs)."""
    counts = {"servers": 0, "records": 0, "attempts": 0, "warmups": 0}
    runs = expected_warmup_runs(unsteadiness)
    for server in servers:
        applicable = [s for s in scenarios if s.path_for(server)]
        if not applicable:
            continue
        counts["servers"] += 1
        clock.plan(START_S, START)
        history = History()
        for scenario in applicable:
            repeat = scenario.repeat(settings)
            for run in scenario.runs:
                job = Job(None, server, scenario, run)
                step = warmup_step(job, history)
                if step is not None and step.after is None:
                    counts["warmups"] += 1
                    clock.plan(step.seconds(settings, runs), WARMUP)
                history.loaded(job, None)
                counts["records"] += 1
                counts["attempts"] += repeat
                clock.plan(repeat * (attempt_seconds(run) + ATTEMPT_OVERHEAD_S), ATTEMPT)
    if counts["records"]:
        plan_spending(clock, settings)
    return counts


def plan_spending(clock: Clock, settings: Settings) -> None:
    """What the run is expected to spend beyond its plan, within its time budget (`budget_s`): measuring again what
    still climbed, then further rounds of tied records, which only a budget pays for (at most SPEND of what it
    leaves)."""
    room = settings.budget_s - clock.total if settings.budget_s else math.inf
    remeasure = min(settings.remeasure_s * REMEASURE_SHARE, max(room, 0.0))
    clock.plan(remeasure, REMEASURE)
    if settings.budget_s:
        clock.plan(min(MORE_ROUNDS_SHARE * clock.planned.get(ATTEMPT, 0.0), SPEND * max(room - remeasure, 0.0)), MORE)


def probed_unsteadiness(store: RunStore) -> float:
    """The machine's CV as the probe before the run read it (the worse of its two sides); 0 where none was read."""
    before: dict[str, Any] = (store.run.conditions.get("steadiness") or {}).get("before") or {}
    return max((c for c in (before.get("cv") or {}).values() if c is not None), default=0.0)


def plan_run(
    clock: Clock,
    servers: list[Server],
    scenarios: list[Scenario],
    settings: Settings,
    unsteadiness: float,
    probes: int,
) -> dict[str, int]:
    """The whole run planned on `clock`: the compliance probes of `probes` builds, then `estimate`'s plan."""
    clock.plan(probes * COMPLIANCE_PROBE_S, START)
    return estimate(clock, servers, scenarios, settings, unsteadiness)


def announce_estimate(
    store: RunStore,
    clock: Clock,
    servers: list[Server],
    scenarios: list[Scenario],
    settings: Settings,
    probes: int = 0,
) -> None:
    """The campaign's estimate planned on `clock`, said and kept in the run's conditions (estimated_s). `probes`: the
    servers whose HTTP compliance the run will probe (make bench, a build not probed before)."""
    unsteadiness = probed_unsteadiness(store)
    counts = plan_run(clock, servers, scenarios, settings, unsteadiness, probes)
    clock.first_total = clock.total
    probe_s = float((settings.steadiness or {}).get("seconds", 0))  # the probe after the run (the one before is done)
    if scenarios:
        say(
            f"estimated duration: about {minutes(clock.total)} of measuring ({counts['servers']} servers, "
            f"{counts['records']} records of {counts['attempts']} attempts, {counts['warmups']} warm-ups of "
            f"{expected_warmup_runs(unsteadiness):.1f} runs expected on a machine probed at {unsteadiness:.0%}), "
            f"{minutes(clock.total + probe_s + END_S)} to the report; announced again after each scenario"
        )
    store.update_conditions(estimated_s=round(clock.total))


MOST_ATTEMPTS_FACTOR = 4  # BUDGET_MIN buys at most four times the profile's attempts a record
# the fewest attempts a record a budget may leave: the ordering rule keeps its false-order rate at any count, and four
# is where it is the min-max intervals' rule exactly (harness/stats/attempt_ranks.py); fewer only where REPEAT asks
LEAST_ATTEMPTS = 4


def campaign_budget_s(minutes: int, settings: Settings) -> float:
    """The seconds of measuring a bench of `minutes` (BUDGET_MIN) leaves: that long less what the report, the
    forecast and the two steadiness probes take."""
    probes = 2 * float((settings.steadiness or {}).get("seconds", 0))
    return minutes * 60 - END_S - FORECAST_S - probes


def within_budget(
    servers: list[Server],
    scenarios: list[Scenario],
    settings: Settings,
    budget_s: float,
    unsteadiness: float = 0.0,
    probes: int = 0,
) -> Settings:
    """`settings` with as many attempts a record as the run's estimate (plan_run's, as announce_estimate plans it: on a machine probed at
    `unsteadiness`, `probes` builds to probe) fits in `budget_s`: up to MOST_ATTEMPTS_FACTOR times the profile's where
    the budget is long, down to LEAST_ATTEMPTS where even the profile's would overrun it (a bench keeps its minutes;
    the forecast follows the attempts)."""

    def fits(repeat: int) -> bool:
        clock = Clock()
        trial = replace(settings, repeat=repeat, forced=True, budget_s=budget_s)
        plan_run(clock, servers, scenarios, trial, unsteadiness, probes)
        return clock.total <= budget_s

    least = min(LEAST_ATTEMPTS, settings.repeat)
    counts = range(MOST_ATTEMPTS_FACTOR * settings.repeat, least - 1, -1)
    best = next((repeat for repeat in counts if fits(repeat)), least)
    forced = settings.forced or best != settings.repeat
    return replace(settings, repeat=best, forced=forced, budget_s=budget_s)
