"""One scenario measured on the servers of a campaign, as its plan says (run_plan.py): warm-ups, then rounds of one
attempt per server (the first server of a round rotating), each attempt kept before the next one starts; records
whose attempts still climb or fall measured again within the run's budget; the flags evaluated.

What a warm-up, an attempt and a record's keeping do is an `Executor`'s (executor.LoadExecutor runs the tools; the tests give
the rounds a fake one), and whether a record still moves or would be told apart by more rounds a `Judge`'s
(judging/referee.py): the rounds decide only the order, as hyperfine's scheduler does with its executor."""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from harness.basics.messages import say
from harness.config.scenarios import Scenario, Settings, WarmupRule
from harness.judging.more_rounds import Extension
from harness.judging.referee import Referee
from harness.measuring.clock import ATTEMPT, MORE, REMEASURE, SPEND, WARMUP, Clock
from harness.measuring.run_plan import (
    History,
    Job,
    WarmupStep,
    attempt_seconds,
    neighbours_by_rate,
    remeasure_seconds,
    turns,
    warmup_step,
)
from harness.results import records as results
from harness.results.records import Attempt, Marks, Record, Warmup
from harness.servers.readiness import Target
from harness.stats.sitting_shape import ATTEMPT_OVERHEAD_S
from harness.stats.trend import Trend


class Executor(Protocol):
    """What the rounds have done: warm-ups, attempts, records kept, flags evaluated (executor.LoadExecutor)."""

    history: History  # what each server was last loaded with and warmed on, in this campaign
    dead: dict[str, str]  # name -> why, for the servers that died in this campaign
    runtime_name: str
    round_no: int | None  # in a run of rounds (overhead): this campaign's round, carried by its records

    def warm_up(self, step: WarmupStep, rule: WarmupRule) -> Warmup: ...

    def attempt(
        self, job: Job, n: int, repeat: int, warm_rate: float | None, position: tuple[int, int] | None
    ) -> Attempt: ...

    def keep(self, job: Job, attempts: list[Attempt], warmup: Warmup, marks: Marks) -> Record:
        """`job`'s record made of `attempts` (results/aggregate.py), marked, written in place of its previous one."""
        ...

    def evaluate(self) -> None: ...

    def record_capacity(self) -> None:
        """Each server's capacity at the latency target, after an open-model scenario (judging/capacity.py)."""


class Judge(Protocol):
    """What the rounds ask while they measure (judging/referee.Referee; a test's fake)."""

    def moving(self, attempts: list[Attempt], mates: Sequence[list[Attempt]]) -> tuple[Trend, int] | None: ...

    def more_rounds(self, records: list[Record], repeat: int, round_s: float, share_s: float) -> Extension | None: ...


@dataclass
class Allowance:
    """The time a campaign may still spend warming further and measuring again what was still warming:
    `left_s` of the profile's re-measuring time, and `budget_left()`, what the run's budget leaves beyond what is
    still planned (None: no budget)."""

    left_s: float = 0.0
    budget_left: Callable[[], float] | None = None


def measure_in_rounds(
    executor: Executor,
    clock: Clock,
    members: list[Target],
    scenario: Scenario,
    settings: Settings,
    allowance: Allowance | None = None,
) -> None:
    """Warm-ups, then `repeat` rounds of one attempt per server (one server: its attempts back to back). A server that
    dies gets the record of what it did, and no further round, run or warm-up. `members`: schedule.Target."""
    Rounds(executor, clock, settings, allowance or Allowance(), Referee()).scenario(members, scenario)


@dataclass
class Rounds:
    executor: Executor
    clock: Clock
    settings: Settings
    allowance: Allowance
    judge: Judge
    kept: dict[str, Record] = field(default_factory=dict)  # each server's latest record of the run being measured

    def scenario(self, members: list[Target], scenario: Scenario) -> None:
        warmups: dict[str, Warmup] = {}  # a run warmed by the one before it in the same pattern keeps its warm-up
        for run in scenario.runs:
            jobs = [Job(t, t.server, scenario, run) for t in members if t.name not in self.executor.dead]
            if not jobs:
                return
            for job in jobs:  # warmed in the order of the first round (schedule.turns)
                step = warmup_step(job, self.executor.history)
                if step is not None:
                    warmups[job.name] = self.warm(step)
            attempts = self.rounds(jobs, warmups, scenario.repeat(self.settings))
            for job in jobs:
                measured = [a for a in attempts[job.name] if a.measured]
                self.executor.history.loaded(job, measured[-1].rps if measured else warmups[job.name].rate)
            self.executor.evaluate()
        if any(r.rate_share for r in scenario.runs):
            self.executor.record_capacity()

    def warm(self, step: WarmupStep) -> Warmup:
        job = step.job
        if step.after is not None:
            say(f"  {job.name} {job.label}: no warm-up, the same load as {step.after} just before")
            return results.Warmup(
                tool=job.scenario.tool,
                runs=[],
                steady=True,
                tolerance=None,
                max_runs=None,
                rate=round(step.rate, 1) if step.rate else None,
                after=step.after,
            )
        started = time.monotonic()
        warmup = self.executor.warm_up(step, self.settings.warmup)
        self.clock.advance(step.seconds(self.settings), WARMUP, time.monotonic() - started)
        return warmup

    def rounds(self, jobs: list[Job], warmups: dict[str, Warmup], repeat: int) -> dict[str, list[Attempt]]:
        """The rounds of one run; every attempt is kept the moment it ends, before the next one starts, whatever the
        round (an interrupt loses none): the record marked incomplete until its last, complete with it; then what
        climbed or fell is measured again where time allows."""
        by_name = {job.name: job for job in jobs}
        attempts: dict[str, list[Attempt]] = {job.name: [] for job in jobs}
        by_rate = neighbours_by_rate([job.name for job in jobs], {name: w.rate for name, w in warmups.items()})
        for n in range(1, repeat + 1):
            alive = [name for name in (by_rate if n > 1 else list(by_name)) if name not in self.executor.dead]
            if not alive:
                break
            for name, position in turns(alive, n):
                job = by_name[name]
                started = time.monotonic()
                attempts[name].append(self.executor.attempt(job, n, repeat, warmups[name].rate, position))
                self.clock.advance(attempt_seconds(job.run) + ATTEMPT_OVERHEAD_S, ATTEMPT, time.monotonic() - started)
                self.keep(job, attempts[name], warmups[name], repeat, complete=n == repeat)
        for job in jobs:  # a server that died before its last attempt: its record complete now, with its failure
            if len(attempts[job.name]) < repeat:
                self.keep(job, attempts[job.name], warmups[job.name], repeat, complete=True)
        for job in jobs:
            if job.name not in self.executor.dead:
                mates = [others for name, others in attempts.items() if name != job.name]
                again = self.remeasure(job, repeat, attempts[job.name], mates)
                if again:
                    self.keep(job, attempts[job.name], warmups[job.name], repeat, again, complete=True)
        self.more_rounds(jobs, attempts, warmups, repeat)
        return attempts

    def more_rounds(
        self, jobs: list[Job], attempts: dict[str, list[Attempt]], warmups: dict[str, Warmup], repeat: int
    ) -> None:
        """Further interleaved rounds of the servers whose records they would likely tell apart (more_rounds.py),
        within this run's share of what the time budget leaves; each attempt kept as it ends, as in the rounds."""
        budget_left = self.allowance.budget_left
        alive = [  # the ceiling is never ranked; a record measured again back to back has left the rounds
            j
            for j in jobs
            if j.name not in self.executor.dead
            and not self.kept[j.name].remeasured
            and not j.server.has_role("ceiling")
        ]
        # overhead's rounds (round_no) compare docker with local per server: no order among servers to decide
        if budget_left is None or len(alive) < 3 or self.executor.round_no is not None:
            return
        self.executor.evaluate()  # the flags first: what they exclude takes no part
        round_s = attempt_seconds(jobs[0].run) + ATTEMPT_OVERHEAD_S
        run_s = len(jobs) * repeat * round_s
        share_s = SPEND * max(budget_left(), 0.0) * run_s / (run_s + self.clock.left(ATTEMPT))
        found = self.judge.more_rounds([self.kept[j.name] for j in alive], repeat, round_s, share_s)
        if found is None:
            return
        total = repeat + found.rounds
        say(
            f"  {jobs[0].label}: {', '.join(found.servers)} tied where {found.rounds} more round(s) would likely "
            f"tell them apart: measured in rounds {repeat + 1}-{total}"
        )
        self.clock.plan_within(len(found.servers) * found.rounds * round_s, MORE)
        by_name = {job.name: job for job in alive}
        by_rate = neighbours_by_rate(found.servers, {name: warmups[name].rate for name in found.servers})
        for n in range(repeat + 1, total + 1):
            names = [name for name in by_rate if name not in self.executor.dead]
            for name, position in turns(names, n) if names else []:
                job, started = by_name[name], time.monotonic()
                attempts[name].append(self.executor.attempt(job, n, total, warmups[name].rate, position))
                self.clock.advance(round_s, MORE, time.monotonic() - started)
                self.keep(job, attempts[name], warmups[name], total, complete=n == total)

    def keep(
        self,
        job: Job,
        attempts: list[Attempt],
        warmup: Warmup,
        repeat: int,
        remeasured: dict[str, Any] | None = None,
        complete: bool = False,
    ) -> None:
        """`job`'s record with the attempts taken so far, written to results.json (in place of the one written after
        its previous attempt): a record is kept from its first attempt on, marked incomplete until all were taken."""
        marks = Marks(remeasured=remeasured)
        if not attempts:
            marks.failed = (
                f"the server died before its first attempt: {self.executor.dead.get(job.name, 'it was gone')}"
            )
        elif not complete and len(attempts) < repeat:
            marks.incomplete = f"{len(attempts)} of {repeat} attempts: the run ended before the rest"
        self.kept[job.name] = self.executor.keep(job, attempts, warmup, marks)

    def remeasure(
        self, job: Job, repeat: int, attempts: list[Attempt], mates: list[list[Attempt]]
    ) -> dict[str, Any] | None:
        """Where `job`'s attempts climbed or fell beyond the noise against the other servers of its rounds (`mates`;
        harness.judging.round_trend, the rule of the warming and drifting flags) and the run's re-measuring time
        allows: a further warm-up until settled, then `repeat` attempts back to back that replace `attempts` (the
        others sleep meanwhile); not the ceiling (never ranked, it keeps its flag), and not once the campaign's time
        budget (`budget_s`) would be overrun by it with what is still planned. Returns what the record keeps of the
        first attempts, or None when nothing was measured again."""
        judged = self.judge.moving(attempts, mates)
        if not judged or job.server.has_role("ceiling"):  # the ceiling is never ranked
            return None
        found, count = judged
        rates = [a.rps for a in attempts if a.measured]
        against = f" against the other {count} servers of its rounds" if count else ""
        label = (
            f"  {job.name} {job.label}: attempts {' → '.join(f'{r:,.0f}' for r in rates)} req/s, {found.kind}{against}"
        )
        needed = remeasure_seconds(job.run, repeat, self.settings)
        allowance = self.allowance
        budget = allowance.budget_left() if allowance.budget_left else math.inf
        if needed > min(allowance.left_s, budget):
            why = (
                f"{max(budget, 0):.0f} s left in the run's time budget beyond what is still to measure"
                if budget < allowance.left_s
                else f"{allowance.left_s:.0f} s of the run's re-measuring time left"
            )
            say(f"{label}; not measured again ({why}, about {needed:.0f} s needed): flagged {found.kind}")
            return None
        say(f"{label}: warmed further and measured again")
        started = time.monotonic()
        self.clock.plan_within(needed, REMEASURE)
        warmup = self.executor.warm_up(WarmupStep(job), self.settings.warmup)
        again = [self.executor.attempt(job, n, repeat, warmup.rate, None) for n in range(1, repeat + 1)]
        self.clock.advance(needed, REMEASURE, time.monotonic() - started)
        allowance.left_s = max(0.0, allowance.left_s - (time.monotonic() - started))
        first_raw = [a.raw for a in attempts]  # files of their own: the attempts again were written beside them
        attempts[:] = again
        return {
            "why": found.describe(),
            "first_attempts": rates,
            "first_raw": first_raw,
            "warmup": warmup.to_dict(),
            "note": "measured again back to back after a further warm-up; the first attempts are not used",
        }
