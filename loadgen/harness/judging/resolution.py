"""What a run can tell apart, in pure numbers: the gap between two servers that the bench's ranking orders 9 times in
10 at a given noise and number of attempts, and the interval a `make duel` reaches in a given time.

The bench: two servers measured in the same rounds, each attempt's ln req/s the server's level plus the round's
shared drift plus the attempt's own noise (harness.judging.noise's model). The ranking orders B above A by paired
rounds where the rounds share enough of the noise (harness.judging.round_pairs, whose power is a formula), else by
its attempts' ranks with the process margin (harness.stats.attempt_ranks.above), whose power is found by drawing
such pairs of records (DRAWS, a fixed seed: the same noise always gives the same answer). The gap told apart is the
smallest on a grid of GAPS where that power reaches POWER.

The duel: a round's ratio B ÷ A is two attempts back to back, so the shared drift cancels and its log varies by
twice the own variance; each start adds its processes' own difference (sitting_shape.PROCESS_TO_ROUND_VARIANCE of a
round's variance, the largest measured here). With S starts of R rounds, the interval over the starts' means is
Student's t with S - 1 degrees of freedom on sqrt((process + round / R) / S)."""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from harness.judging import noise, round_pairs
from harness.results.records import Record
from harness.stats import attempt_ranks, sitting_shape
from harness.stats.paired import t_quantile

POWER = 0.9
DRAWS = 2000
GAPS = tuple(round(0.005 * k, 3) for k in range(1, 21)) + tuple(round(0.1 + 0.025 * k, 3) for k in range(1, 37))
DUEL_BUDGETS_S = tuple(60 * m for m in (1, 2, 3, 4, 5, 6, 8, 10, 12, 15, 20, 25, 30, 40, 50, 60, 90, 120))


@dataclass(frozen=True)
class Noise:
    """A run's noise on the log scale of req/s per attempt: `own` to each attempt, `shared` by a round's servers
    (standard deviations); `attempts`: per record."""

    own: float
    shared: float
    attempts: int

    @property
    def pair(self) -> float:
        """The standard deviation of ln(B / A) of a duel's round: two attempts' own noise, the drift cancelled."""
        return math.sqrt(2) * self.own


def measured_noise(records: list[Record], ceilings: set[str]) -> Noise | None:
    """A run's noise as its own interleaved rounds show it (harness.judging.noise's model over its ranked records, the
    ceiling left out), with its records' median count of attempts; None where its groups hold too few servers or
    rounds to read it."""
    ranked = [r for r in records if r.ranked and r.server not in ceilings]
    pooled = noise.pooled([s for g in noise.groups_of(ranked) if (s := noise.round_sharing(g))])
    if pooled is None or not ranked:
        return None
    attempts = round(statistics.median(len([a for a in r.attempts if a.measured]) for r in ranked))
    return Noise(math.sqrt(pooled.own), math.sqrt(pooled.shared), attempts)


def ordered_share(gap: float, noise: Noise, draws: int = DRAWS, seed: int = 0) -> float:
    """How often the ranking orders B above A when B is `gap` faster (1 + gap times A), at `noise`."""
    rng = np.random.default_rng(seed)
    n = noise.attempts
    shared = rng.normal(0.0, noise.shared, (draws, n))
    a = shared + rng.normal(0.0, noise.own, (draws, n))
    b = shared + math.log1p(gap) + rng.normal(0.0, noise.own, (draws, n))
    allowed = attempt_ranks.allowed_inversions(n, n)
    b_margined = b - math.log1p(attempt_ranks.PROCESS_MARGIN)
    inverted = (a[:, :, None] >= b_margined[:, None, :]).sum(axis=(1, 2))
    return float(np.mean(inverted <= allowed))


def paired(noise: Noise) -> bool:
    """Whether the ranking would order such a group by paired rounds (round_pairs: where the rounds share enough of
    the variance), or by its attempts' ranks."""
    total = noise.own**2 + noise.shared**2
    shared = noise.shared**2 / total if total > 0 else 0.0
    return noise.attempts >= round_pairs.MIN_ROUNDS and shared > round_pairs.pairing_threshold(noise.attempts)


@lru_cache(maxsize=64)  # a report asks it for one noise from its HTML, Markdown and terminal lines alike
def bench_gap(noise: Noise, power: float = POWER) -> float:
    """The smallest gap on GAPS the ranking orders at least `power` of the time (inf: none up to the grid's end), by
    the rule it would use (paired rounds: round_pairs.power; attempt ranks: drawn)."""
    if noise.attempts < 2:
        return math.inf
    if paired(noise):
        return next((g for g in GAPS if round_pairs.power(g, noise.own, noise.attempts) >= power), math.inf)
    return next((g for g in GAPS if ordered_share(g, noise) >= power), math.inf)


def duel_half_width(noise: Noise, budget_s: float, costs: sitting_shape.Costs) -> float:
    """The half-width (a fraction: 0.02 is ±2 %) of B ÷ A's 95 % interval that a duel of one scenario run reaches in
    `budget_s` at `noise`, with the starts and rounds sitting_shape plans for `costs` (at least two starts)."""
    shape = sitting_shape.plan(budget_s, costs)
    starts = max(shape.starts, 2)
    round_var = noise.pair**2
    start_var = sitting_shape.PROCESS_TO_ROUND_VARIANCE * round_var + round_var / shape.rounds_per_start
    return math.expm1(t_quantile(0.95, starts - 1) * math.sqrt(start_var / starts))


def duel_seconds(noise: Noise, half_width: float, costs: sitting_shape.Costs) -> float | None:
    """The shortest budget of DUEL_BUDGETS_S whose duel reaches ±`half_width`, or None (more than two hours)."""
    return next((b for b in DUEL_BUDGETS_S if duel_half_width(noise, b, costs) <= half_width), None)
