"""Two servers of one group ordered by their ratio round by round, where the group's rounds share enough of the noise
for that to narrow the interval (issue 41; README, "Where the noise is").

Why: in interleaved rounds attempt k of every server is taken within seconds, so the part of the noise that the
machine puts on the whole round (its drift) lands on both servers of a pair alike, and their ratio in that round
carries none of it. What pairing costs: a paired interval rests on the rounds (n − 1 degrees of freedom), two
unpaired intervals on the attempts of both (2n − 2), so at a given false-order rate its t quantile is wider. Pairing
narrows the comparison only where the shared part of the variance, f, is large enough:
    (1 − f) · t(n − 1)² < t(2n − 2)²,   i.e. f > 1 − (t(2n − 2) / t(n − 1))²
about 48 % with 4 rounds, 30 % with 6, 21 % with 8, 13 % with 12 (at a 2.9 % false-order rate). f is read from all
the servers of the group (harness.judging.noise.round_sharing: their rounds' mean square against their residual),
never from the pair being compared, so the choice does not lean on that pair's difference. The recorded benches of
this machine share 22–33 % (README), so with 4 rounds their groups are mostly ordered by intervals, as before.

The paired relation: over the rounds both servers have (in interleaved rounds, not measured again back to back),
the geometric mean of B ÷ A and its Student t interval on the logs (as harness.stats.paired.ratio_interval) at
the false-order rate the unpaired rule has with the profiles' 4 attempts, 2·4!·4!/8! = 2.9 %, whatever the rounds:
B is above A where the interval lies wholly above 1.04 (attempt_ranks.PROCESS_MARGIN: what two processes of one
server differ by, which rounds of one process each cannot show). So the A/A twin, judged by whichever rule its group
uses, is ordered at the same stated rate as before (for normal noise on the log scale; the twin checks it on real
noise). A lower bound (a saturated load generator) has no ratio to pair: its pairs stay with the intervals.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

from harness.judging import noise
from harness.results.records import Record
from harness.stats.attempt_ranks import FALSE_ORDER_RATE, PROCESS_MARGIN
from harness.stats.paired import RatioInterval, t_quantile

MIN_ROUNDS = 3  # a paired interval of two rounds rests on one degree of freedom: not worth having
# The paired rule's false-order rate, whatever its rounds, is the unpaired rule's (attempt_ranks.FALSE_ORDER_RATE,
# 2.9 %), so that pairing adds no false order. (Held to min–max's 2·n!·n!/(2n)! for n rounds instead, it would order
# nothing from 8 rounds on: 0.008 %.)


@lru_cache(maxsize=256)
def critical_t(df: int) -> float:
    """Student's t quantile at FALSE_ORDER_RATE (two-sided) with `df` degrees of freedom."""
    return t_quantile(1 - FALSE_ORDER_RATE, df)


def pairing_threshold(rounds: int) -> float:
    """The shared fraction of the variance above which pairing `rounds` rounds narrows the comparison (above)."""
    return 1 - (critical_t(2 * rounds - 2) / critical_t(rounds - 1)) ** 2


def power(difference: float, own_sd: float, rounds: int) -> float:
    """The probability that the paired rule orders two servers `difference` apart (a fraction: 0.05) whose attempts
    each carry an own noise of `own_sd` (ln scale) beyond the round's shared part, over `rounds` rounds, beyond the
    process margin (attempt_ranks.PROCESS_MARGIN): the normal approximation of the noncentral t (Johnson & Kotz:
    P(T' > c) ≈ Φ((δ − c) / √(1 + c²/2ν)))."""
    beyond = math.log1p(difference) - math.log1p(PROCESS_MARGIN)
    if own_sd <= 0:
        return 1.0 if beyond > 0 else 0.0
    df = rounds - 1
    shift = beyond / (math.sqrt(2) * own_sd / math.sqrt(rounds))
    c = critical_t(df)
    z = (shift - c) / math.sqrt(1 + c * c / (2 * df))
    return 0.5 * (1 + math.erf(z / math.sqrt(2)))


def rounds_needed(difference: float, own_sd: float, wanted: float = 0.9, most: int = 400) -> int | None:
    """The fewest rounds at which the paired rule orders a `difference` at `wanted` power (None: not within `most`)."""
    return next((n for n in range(MIN_ROUNDS, most + 1) if power(difference, own_sd, n) >= wanted), None)


@dataclass(frozen=True)
class GroupRule:
    """How a group's pairs are ordered: by paired rounds (`paired`) or by intervals, and why; `by_speed` (CPU_METER=1):
    on rates divided by the speed of the CPU both servers of a pair are bound on, the pairs bound on different CPUs
    by the rule the rates as measured have (`as_measured`)."""

    paired: bool
    sharing: noise.Sharing | None
    rounds: int  # the rounds every server with rounds has
    by_speed: bool = False
    as_measured: GroupRule | None = None  # the rule on the rates as measured, where `by_speed`

    @property
    def why(self) -> str:
        if self.sharing is None:
            return "no interleaved rounds to pair (or too few servers to read their shared part)"
        share = (
            f"the servers of a round share {self.sharing.shared_fraction:.0%} of the variance over {self.rounds} rounds"
        )
        if self.paired:
            share = f"{share}, above the {pairing_threshold(self.rounds):.0%} where pairing narrows the comparison"
        elif self.rounds < MIN_ROUNDS:
            share = f"{share}; fewer than {MIN_ROUNDS} rounds to pair"
        else:
            share = f"{share}, below the {pairing_threshold(self.rounds):.0%} where pairing would narrow the comparison"
        if self.by_speed and self.as_measured is not None and self.as_measured.sharing is not None:
            return (
                f"two servers bound on one CPU compared on each attempt's req/s divided by that CPU's speed "
                f"(CPU_METER=1), which takes an attempt's own noise from {math.sqrt(self.as_measured.sharing.own):.1%} "
                f"to {math.sqrt(self.sharing.own):.1%}: {share}; two bound on different CPUs as measured: "
                f"{self.as_measured.why}"
            )
        return share

    def for_pair(self, b: Record, a: Record) -> GroupRule:
        """The rule for B and A: on their CPU's speed where both are bound on one, else as measured."""
        role = noise.bound_role(b)
        same_cpu = role is not None and role == noise.bound_role(a)
        return self if not self.by_speed or same_cpu or self.as_measured is None else self.as_measured


def by_speed(records: list[Record], as_measured: noise.Sharing) -> noise.Sharing | None:
    """The group's noise with each rate divided by its CPU's speed, where every record in the rounds has its bound
    CPU's speed on every attempt (CPU_METER=1) and the division leaves each attempt less own noise than the rates as
    measured (read from all the group's servers, never from a pair); else None."""
    divided = noise.round_sharing(records, by_speed=True)
    (members, rounds), (all_members, all_rounds) = noise.common_rounds(records, True), noise.common_rounds(records)
    if divided is None or len(members) != len(all_members) or rounds != all_rounds or divided.own >= as_measured.own:
        return None  # an attempt without its speeds, or nothing gained
    return divided


def _paired(sharing: noise.Sharing | None, rounds: int) -> bool:
    """Whether pairing `rounds` rounds narrows the comparison at this noise (above)."""
    return sharing is not None and rounds >= MIN_ROUNDS and sharing.shared_fraction > pairing_threshold(rounds)


def group_rule(records: list[Record]) -> GroupRule:
    """The rule of a group (its ranked records): paired where its rounds share enough of the noise (above); on rates
    divided by the CPUs' speeds where that leaves less of it."""
    sharing = noise.round_sharing(records)
    _, rounds = noise.common_rounds(records)
    as_measured = GroupRule(_paired(sharing, len(rounds)), sharing, len(rounds))
    divided = by_speed(records, sharing) if sharing is not None else None
    if divided is None:
        return as_measured
    return GroupRule(_paired(divided, len(rounds)), divided, len(rounds), True, as_measured)


def paired_interval(b: Record, a: Record, by_speed: bool = False) -> RatioInterval | None:
    """B ÷ A round by round over the rounds both have (`by_speed`: of the rates divided by their CPU's speed), its
    interval at FALSE_ORDER_RATE; None with fewer than MIN_ROUNDS in common."""
    rb, ra = noise.rounds_of(b, by_speed), noise.rounds_of(a, by_speed)
    common = sorted(set(rb) & set(ra))
    n = len(common)
    if n < MIN_ROUNDS:
        return None
    logs = [rb[k] - ra[k] for k in common]
    mean = sum(logs) / n
    margin = critical_t(n - 1) * math.sqrt(sum((x - mean) ** 2 for x in logs) / (n - 1) / n)
    return RatioInterval(math.exp(mean), math.exp(mean - margin), math.exp(mean + margin), n, 1 - FALSE_ORDER_RATE)
