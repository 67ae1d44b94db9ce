"""Is a series of rates still moving? The warm-up's end and the attempts' check, from one detector.

A JIT-compiled server gets faster for tens of seconds under a new load (akka on one core, ab -c1000 on new
connections, by hand: 620 → 1,236 → … → 6,302 → 7,630 req/s over its first ~50,000 connections, then flat at
7,300–8,000 for 600,000 more). Two short runs that agree within 10 % say nothing about that: 1,386 → 1,482 did, in the
middle of the climb. Following Barrett et al. ("Virtual Machine Warmup Blows Hot and Cold", OOPSLA 2017), a series is
sorted into flat, warming (still climbing) or drifting (falling) from its trend, not from its last two values:

- the trend is the Theil–Sen slope (the median of the slopes between every pair of points): one outlier run cannot
  make a flat series look like a climb, nor hide one;
- `change` is that slope over the whole series, relative to its median: (n − 1) · slope / median;
- a series is `flat` when |change| ≤ the tolerance; otherwise it is `warming` (rising) or `drifting` (falling) when
  its points also agree on the direction: Kendall's S (concordant minus discordant pairs) is at least
  `min_agreement(n)` of its largest possible value, so noise around a level (up, down, up) is not called a trend.
- a warm-up asks more: it is `settled` only when |change| ≤ the tolerance over its latest runs, whatever their
  directions (a noisy climb is still a climb).
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

FLAT, WARMING, DRIFTING = "flat", "warming", "drifting"
# The most runs a warm-up's end is judged on: over more, a slow residual climb adds up past the tolerance (pekko's
# weather c1, flat at 5–7k req/s from run 17, was still "climbing" over its latest 19 and ran to the 60 s cap)
JUDGED_AT_MOST = 5


# Kendall's S over its maximum n(n−1)/2 that a trend needs: up to 4 points strictly monotone (noise alone does that
# with probability 1/n! per direction: 1/24 with 4), from 5 points 0.6 (one pair in ten against the direction)
def min_agreement(n: int) -> float:
    return 1.0 if n <= 4 else 0.6


@dataclass(frozen=True)
class Trend:
    kind: str  # FLAT, WARMING or DRIFTING
    change: float  # (n − 1) · Theil–Sen slope / median: the relative change the trend makes over the series
    agreement: float  # Kendall's S / (n(n−1)/2), from −1 (strictly falling) to 1 (strictly rising)

    @property
    def moving(self) -> bool:
        return self.kind != FLAT

    def describe(self) -> str:
        return f"{self.kind} ({self.change:+.0%} over the series, direction agreement {self.agreement:+.2f})"


def theil_sen_slope(values: list[float]) -> float:
    """The median of (x_j − x_i) / (j − i) over every pair i < j; points equally spaced (runs, attempts)."""
    slopes = [(values[j] - values[i]) / (j - i) for i in range(len(values)) for j in range(i + 1, len(values))]
    return statistics.median(slopes) if slopes else 0.0


def kendall_agreement(values: list[float]) -> float:
    """Kendall's S (pairs in rising order minus pairs in falling order) over its largest possible value."""
    n = len(values)
    pairs = n * (n - 1) / 2
    if not pairs:
        return 0.0
    s = sum((values[j] > values[i]) - (values[j] < values[i]) for i in range(n) for j in range(i + 1, n))
    return s / pairs


def relative_change(values: list[float]) -> float:
    """(n − 1) · Theil–Sen slope / median: the change the trend makes over the series, relative to its level."""
    median = statistics.median(values) if values else 0.0
    return (len(values) - 1) * theil_sen_slope(values) / median if median > 0 else 0.0


def classify(values: list[float], tolerance: float) -> Trend:
    """The trend of `values` (in the order measured; all positive to be meaningful)."""
    if len(values) < 2:
        return Trend(FLAT, 0.0, 0.0)
    change = relative_change(values)
    agreement = kendall_agreement(values)
    needed = min_agreement(len(values))
    if change > tolerance and agreement >= needed:
        return Trend(WARMING, change, agreement)
    if change < -tolerance and agreement <= -needed:
        return Trend(DRIFTING, change, agreement)
    return Trend(FLAT, change, agreement)


def settled(values: list[float], window: int, tolerance: float) -> bool:
    """A warm-up's end: its latest `window` runs change by at most `tolerance` (relative Theil–Sen trend)."""
    return len(values) >= window and abs(relative_change(values[-window:])) <= tolerance


def judged_window(runs: int, least: int) -> int:
    """The runs a warm-up of `runs` runs is judged on: its latest half, at least `least` and at most JUDGED_AT_MOST.
    Three runs are one noisy slope: on 2026-11-28 akka's weather c1 warm-up climbed 183 → 1,654 req/s and was called
    settled on 1,650, 1,654, 1,537 (run 11); judged on five it went on to 5,740 (run 19), its steady level (5.2–6.1k
    measured again after the rounds). A series flat from its start (nginx: 42.8k, 39.6k, 40.6k) still ends at `least`."""
    return max(least, min((runs + 1) // 2, JUDGED_AT_MOST))
