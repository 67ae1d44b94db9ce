"""What a sitting's verdict rests on besides its interval, and the verdict line that says it.

An interval of head ÷ base answers "faster?" only when both builds did the work: a head that answers one request in
ten with a 503 is "faster" at failing; two builds that both wait on a saturated load generator read "no difference"
because the tool, not the server, set the pace; one start leaves out how two processes of one build differ; rounds
whose ratios spread far past what the machine's own noise explains were moved by something else. Each of these either
withholds "faster/slower" or is said in the verdict line itself, not in a footnote.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from harness.judging import flags
from harness.results import flag_kinds
from harness.results.records import Attempt, Record
from harness.stats import paired
from harness.stats.paired import RatioInterval
from harness.tools.output import Errors

# the machine's own spread (the steadiness probe's CV between windows) past which the verdict says so (as the bench warns)
UNSTEADY_CV = 0.05
# a round's head ÷ base shares the machine's drift; each attempt keeps its own noise, so the ratio's spread is about
# √2 × the machine's CV, and in practice more: an attempt's own noise ran 2-3 times the probe's on quiet days (README,
# "Where the noise is"), and node's rounds spread ±3-6 % beside a probe of 0.3-3 %. Past SPREAD_FACTOR times √2 × the
# probe (at least MACHINE_FLOOR), something besides the machine moved the rounds: a busy neighbour read ±24 %.
SPREAD_FACTOR = 4.0
MACHINE_FLOOR = 0.02
# without a difference between processes, a start's mean varies by the rounds' variance over its rounds; past twice
# that standard deviation (four times the variance), the processes differ (akka's weather c256 read 6.8k in one
# process and 10.1k in another, each steady for a whole record): said, never averaged into a false precision
PROCESSES_FACTOR = 2.0


@dataclass(frozen=True)
class SideEvidence:
    """One build's part of a scenario run: its failed requests (by cause), whether the load generator was its limit,
    whether it failed the contract."""

    role: str
    name: str
    good: int
    errors: dict[str, int]
    saturated: bool = False
    contract: str | None = None  # why it failed the contract

    @property
    def failed(self) -> int:
        return sum(self.errors.values())

    def errors_text(self) -> str:
        total = self.good + self.failed
        causes = ", ".join(f"{k} {v:,}" for k, v in self.errors.items() if v)
        return (
            f"{self.role} {self.name} answered {self.failed:,} of {total:,} requests with errors "
            f"({self.failed / total:.1%}: {causes})"
        )


@dataclass(frozen=True)
class Evidence:
    sides: tuple[SideEvidence, SideEvidence]
    starts: int
    machine_cv: float | None = None  # the steadiness probe's worst CV before the sitting
    rounds_spread: float | None = None  # the sd of ln(head/base) within starts
    starts_spread: float | None = None  # the sd of the starts' mean ln(head/base)
    rounds_per_start: int | None = None


def side_evidence(
    role: str, name: str, attempts: list[Attempt], record: Record | None, contract: str | None = None
) -> SideEvidence:
    """A build's evidence from its attempts of a run and its record (flags evaluated)."""
    measured = [a for a in attempts if a.measured]
    causes = sum((a.errors for a in measured), Errors()).to_dict()
    causes.pop("total")
    return SideEvidence(role, name, sum(a.good_requests for a in measured), causes, loadgen_saturated(record), contract)


def loadgen_saturated(record: Record | None) -> bool:
    """Whether the bench's flag says the load generator, not the server, set the record's pace."""
    return record is not None and flag_kinds.LOADGEN_BOUND.name in flags.names(record)


def rounds_spread(by_start: list[list[float]]) -> float | None:
    """The standard deviation of ln(head/base) about each start's own mean (the rounds' noise, not the starts')."""
    deviations = []
    for ratios in by_start:
        logs = [math.log(r) for r in ratios if r > 0]
        if len(logs) >= 2:
            mean = sum(logs) / len(logs)
            deviations += [(x - mean) ** 2 for x in logs]
    dof = sum(len(s) - 1 for s in by_start if len(s) >= 2)
    return math.sqrt(sum(deviations) / dof) if dof else None


def starts_spread(by_start: list[list[float]]) -> float | None:
    """The standard deviation of the starts' mean ln(head/base): what the interval over starts is made of (the
    processes' own differences, and the rounds' noise averaged over a start)."""
    means = [sum(math.log(r) for r in ratios) / len(ratios) for ratios in by_start if ratios]
    if len(means) < 2:
        return None
    grand = sum(means) / len(means)
    return math.sqrt(sum((m - grand) ** 2 for m in means) / (len(means) - 1))


def withheld(evidence: Evidence) -> str | None:
    """Why no build may be called faster or slower, or None."""
    failing = [s for s in evidence.sides if s.contract]
    if failing:
        return "withheld: " + "; ".join(f"{s.role} {s.name} failed the contract ({s.contract})" for s in failing)
    erring = [s for s in evidence.sides if s.failed]
    if erring:
        return (
            "withheld: "
            + "; ".join(s.errors_text() for s in erring)
            + ": a build that answers with errors is not comparable by speed"
        )
    return None


def caveats(evidence: Evidence) -> list[str]:
    """What the verdict line must say beside its words."""
    out = []
    saturated = [s for s in evidence.sides if s.saturated]
    if saturated:
        who = " and ".join(f"{s.role} {s.name}" for s in saturated)
        out.append(
            f"LOADGEN-SATURATED for {who}: the load generator, not the server, set the pace, so the builds may "
            "differ by more than this shows"
        )
    if evidence.starts < 2:
        out.append("ONE START: how two processes of one build differ is not in this interval")
    cv = evidence.machine_cv
    if cv is not None and cv > UNSTEADY_CV:
        out.append(f"UNSTEADY MACHINE: its own speed varied {cv:.0%} between windows")
    spread = evidence.rounds_spread
    if spread is not None and cv is not None and spread > SPREAD_FACTOR * math.sqrt(2) * max(cv, MACHINE_FLOOR):
        out.append(f"the rounds' ratios spread ±{spread:.1%}, more than the machine's own ±{cv:.1%} explains")
    between = evidence.starts_spread
    if (
        between
        and spread
        and evidence.rounds_per_start
        and between > PROCESSES_FACTOR * spread / math.sqrt(evidence.rounds_per_start)
    ):
        out.append(
            f"PROCESSES DIFFER: the starts' means spread ±{between:.1%}, more than their rounds' ±{spread:.1%} "
            "explains: the sides' processes settle on different levels from start to start, which the interval "
            "(over starts) carries"
        )
    return out


def verdict_line(
    interval: RatioInterval | None, metric: str, evidence: Evidence, names: tuple[str, str] | None = None
) -> str:
    """The verdict in words (stats/paired.py; `names`: A and B, said as "B faster than A by …"), withheld or with
    its caveats (see the module's docstring)."""
    reason = withheld(evidence)
    if reason:
        return reason
    words = paired.verdict(interval, metric, names)
    if interval is None:
        return words
    return " — ".join([words, *caveats(evidence)])


def reached(interval: RatioInterval | None, evidence: Evidence) -> bool:
    """Whether the run has an answer at all: an interval, and nothing that withholds it (the exit status)."""
    return interval is not None and withheld(evidence) is None


def headline(records: list[Record | None]) -> tuple[str, str]:
    """Which figure answers "faster?" for a run, and why: a rule on the load, fixed before the ratios are looked at
    (choosing the narrower interval afterwards would double the false positives). p99 for an open-model step (its
    req/s is the rate offered). CPU µs per request where both builds were bound by CPU, the server's (its req/s is its
    cores over its CPU µs per request, and CPU time leaves out what the machine gave to others meanwhile, which makes
    it the tighter figure) or the load generator's (its req/s is the tool's pace, the same for any server faster than
    the tool; the server's CPU per request still tells the builds apart). req/s elsewhere."""
    known = [r for r in records if r is not None]
    if known and any(flags.offered_rps(r) for r in known):
        return "p99", "an open-model step: its req/s is the rate offered, its latency is the answer"
    busy = [flags.utilization(r, "server") for r in known]
    saturated = [loadgen_saturated(r) for r in known]
    bound = [s or (b is not None and b >= flag_kinds.SERVER_BUSY) for b, s in zip(busy, saturated)]
    if len(bound) == 2 and all(bound):
        why = (
            "the load generator set the pace"
            if all(saturated)
            else "the server's CPU was busy"
            if not any(saturated)
            else "the server's CPU or the load generator was busy"
        )
        return "cost_us", (
            f"both builds were bound by CPU ({why}): req/s then says the cores over the CPU µs per "
            "request, or the tool's pace; the server's CPU per request is the figure that tells them apart"
        )
    return "rps", "neither the server's CPU nor the load generator was the limit: req/s is the answer"
