"""`make versus` on each CPU's speed (CPU_METER=1, docs/cpu-speed.md): the host slows one virtual CPU at a time, for
seconds, and that is most of an attempt's own noise. A round's two attempts are seconds apart, so pairing leaves it
in the ratio; dividing each attempt's figure by the speed its CPU ran at meanwhile takes it out.

The rule is fixed before any ratio is looked at (choosing the narrower interval afterwards would double the false
positives). Where both builds are bound on the server's CPU (noise.bound_role_of), req/s is divided by its speed and
CPU µs per request multiplied by it (the CPU time a request would take at full speed); p99 stays as measured, and so
does everything where either build is bound on the load generator's CPU: there the tool keeps its CPU busy beside the
meter, and dividing widened the one such sitting measured where it narrowed those bound on the server's CPU
(docs/cpu-speed.md). Every measured attempt of both builds must have the speed, or the figures stay as measured.

What it rests on: that neither build moves the meter of its CPU, which no server did beyond chance over the benches
docs/cpu-speed.md reports, a small own part not excluded. So every sitting also reports
head ÷ base of the meter's own readings, with its interval: the division carries that ratio into the verdict."""

from __future__ import annotations

from collections.abc import Sequence

from harness.judging import noise
from harness.results.records import Attempt
from harness.stats import paired
from harness.stats.paired import RatioInterval

SERVER = "server"


def role_for(metric: str, sides: Sequence[list[Attempt]]) -> str | None:
    """The CPU whose speed `metric` is corrected by in this run (the module's docstring), or None: as measured."""
    if metric not in ("rps", "cost_us") or any(noise.bound_role_of(attempts) != SERVER for attempts in sides):
        return None
    measured = [a for attempts in sides for a in attempts if a.measured]
    return SERVER if measured and all(noise.speed_of(a, SERVER) for a in measured) else None


def corrected(value: float | None, attempt: Attempt, metric: str, role: str | None) -> float | None:
    """`value` (`attempt`'s `metric`) on its CPU's speed: req/s divided by it, CPU µs per request multiplied."""
    speed = noise.speed_of(attempt, role) if role else None
    if value is None or not speed:
        return value
    return value / speed if metric == "rps" else value * speed


def speed_interval(sides: Sequence[list[Attempt]], starts: list[list[int]], role: str) -> RatioInterval | None:
    """head ÷ base of `role`'s CPU speed, round by round, its interval by starts (as paired.grouped_interval): where
    it excludes 1, a build moved the meter (or chance did, at the interval's 5 %), and the corrected verdict carries
    it."""
    base, head = ({a.attempt: noise.speed_of(a, role) for a in attempts if a.measured} for attempts in sides)
    return paired.grouped_interval(paired.start_ratios(base, head, starts))


def described(role: str | None, metric: str) -> str:
    """How the figure the interval is taken on was corrected, for the verdict line and the page."""
    if role is None:
        return "as measured"
    how = "divided by" if metric == "rps" else "multiplied by"
    return f"{how} the {role} CPU's speed (CPU_METER=1)"


def caveat(role: str, metric: str, as_measured: RatioInterval | None, meter: RatioInterval | None) -> str:
    """What a verdict on the CPU's speed says beside its words: the figure it was taken on, the verdict as measured
    and the meter's own head ÷ base (said in capitals where its interval excludes 1, as the other caveats are)."""
    words = f"on {paired.METRICS[metric][1]} {described(role, metric)}"
    if as_measured is not None:
        words += f"; as measured: {paired.verdict(as_measured, metric)}"
    if meter is not None:
        moved = "THE METER MOVED: " if meter.excludes_no_change() else ""
        words += f"; {moved}the meter read head ÷ base {meter.ratio:.3f} ({meter.low:.3f}–{meter.high:.3f})"
    return words
