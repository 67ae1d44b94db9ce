"""Change points by E-divisive means with a permutation test: Matteson, D. S. and James, N. A. (2014), "A Nonparametric
Approach for Multiple Change Point Analysis of Multivariate Data", Journal of the American Statistical Association
109(505), 334-345 (the R package `ecp`, e.divisive; MongoDB's and Apache Otava's change-point detection build on it).

Written here rather than taken from PyPI: `signal-processing-algorithms` 2.1.6 (MongoDB's) requires numpy < 2 (the
harness pins numpy 2.4), Python < 3.12, gevent, scipy, structlog and setuptools < 71, and ships as source with a C
extension to compile; `apache-otava` pulls BigQuery, Slack and Postgres clients. The method is short: for every split
tau of a segment, the energy statistic Q between the values before and after it,

    Q(tau) = (n m / (n + m)) * (2/(n m) sum |x_i - y_j| - sum_{i<k} |x_i - x_k| / C(n, 2) - sum_{j<l} |y_j - y_l| / C(m, 2))

(alpha = 1, the paper's default; kappa, the end of the second sample, is the segment's end, as in MongoDB's variant);
the largest over every segment is the candidate, kept when a permutation test finds it significant: the values of
each segment shuffled within it R times, p = (1 + #{shuffled max >= observed}) / (R + 1). Found changes split the
series and the search goes on in the pieces until a candidate is not significant. With no change at all, a series
yields a change with probability at most `alpha` (the test's level): that is the method's stated false-change rate.

R shuffles cannot give p below 1/(R + 1); a page of many series keeps only p-values far below the level
(Benjamini-Hochberg in harness.history.changes), so a candidate that passes at R = 199 is tested again with more
shuffles, doubled until `most_permutations`, until p is above the level, or until ENOUGH_EXCEEDANCES shuffles reached
the observed statistic (p then known well enough, and h / L, L the shuffles drawn when the h-th did: Besag, J. and
Clifford, P. (1991), "Sequential Monte Carlo p-values", Biometrika 78(2)).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

SIGNIFICANCE = 0.05  # the permutation test's level (ecp's sig.lvl default): false changes per series with none
PERMUTATIONS = 199  # ecp's default R: p can reach 1/200
ENOUGH_EXCEEDANCES = 20  # shuffles at least as extreme as the observed: p known to about 20 %, no more shuffles
MIN_SEGMENT = 2  # the within-sample term needs two values; each side of a change holds at least this many
BATCH_CELLS = 400_000  # distance-matrix cells per batch of shuffles (3 MB of float64)

Matrix = NDArray[np.float64]


@dataclass(frozen=True)
class ChangePoint:
    """A change before `index` (the first value after it) with the permutation test's p-value."""

    index: int
    p_value: float
    statistic: float


def _split_statistics(distances: Matrix) -> Matrix:
    """Q(tau) for every tau in [MIN_SEGMENT, n - MIN_SEGMENT] of each of a batch of distance matrices (shape b, n, n):
    shape (b, taus). Sums over blocks come from 2-D prefix sums, so one batch costs O(b n^2)."""
    b, n, _ = distances.shape
    prefix = np.zeros((b, n + 1, n + 1))
    prefix[:, 1:, 1:] = distances.cumsum(axis=1).cumsum(axis=2)
    taus = np.arange(MIN_SEGMENT, n - MIN_SEGMENT + 1)
    before = prefix[:, taus, taus]  # sum over both indexes < tau: twice the pairs within x
    rows = prefix[:, taus, n]  # rows < tau, every column
    cross = rows - before
    after = prefix[:, n, n][:, None] - 2 * rows + before
    nx, ny = taus.astype(float), (n - taus).astype(float)
    energy = 2 * cross / (nx * ny) - before / (nx * (nx - 1)) - after / (ny * (ny - 1))
    result: Matrix = nx * ny / (nx + ny) * energy
    return result


def _best_split(distances: Matrix, start: int, end: int) -> tuple[int, float] | None:
    """The split of values [start, end) with the largest Q, as (index in the series, Q); None when too short."""
    if end - start < 2 * MIN_SEGMENT:
        return None
    q = _split_statistics(distances[None, start:end, start:end])[0]
    at = int(np.argmax(q))
    return start + MIN_SEGMENT + at, float(q[at])


def _shuffled_maximum(distances: Matrix, bounds: list[tuple[int, int]], rng: np.random.Generator, count: int) -> Matrix:
    """For `count` shuffles of the values within each segment, the largest Q over the segments: shape (count,)."""
    best = np.full(count, -np.inf)
    for start, end in bounds:
        size = end - start
        if size < 2 * MIN_SEGMENT:
            continue
        orders = rng.permuted(np.tile(np.arange(start, end), (count, 1)), axis=1)
        batch = max(1, BATCH_CELLS // (size * size))  # a long series' shuffles in batches: memory stays small
        for first in range(0, count, batch):
            chunk = orders[first : first + batch]
            shuffled = distances[chunk[:, :, None], chunk[:, None, :]]
            best[first : first + batch] = np.maximum(
                best[first : first + batch], _split_statistics(shuffled).max(axis=1)
            )
    return best


@dataclass(frozen=True)
class _Test:
    """One candidate's permutation test: its segments, its statistic, the level and the most shuffles allowed."""

    bounds: list[tuple[int, int]]
    statistic: float
    significance: float
    most_permutations: int


def _p_value(distances: Matrix, test: _Test, rng: np.random.Generator) -> float:
    """(1 + shuffles at least as extreme) / (shuffles + 1): PERMUTATIONS shuffles, then, while p passes the level,
    twice as many in all until `most_permutations`; once ENOUGH_EXCEEDANCES shuffles reached the statistic, Besag and
    Clifford's h / L (L: the shuffles drawn when the h-th did) and no more (the module's docstring)."""
    done, exceeding, target = 0, 0, PERMUTATIONS
    while True:
        shuffled = _shuffled_maximum(distances, test.bounds, rng, target - done)
        hits = np.flatnonzero(shuffled >= test.statistic - 1e-12)
        if done > 0 and exceeding + len(hits) >= ENOUGH_EXCEEDANCES:
            return ENOUGH_EXCEEDANCES / (done + int(hits[ENOUGH_EXCEEDANCES - exceeding - 1]) + 1)
        exceeding, done = exceeding + len(hits), target
        p_value = (1 + exceeding) / (done + 1)
        if p_value > test.significance or done >= test.most_permutations:
            return p_value
        target = min(test.most_permutations, 2 * (done + 1) - 1)


def change_points(
    values: list[float],
    seed: int = 0,
    significance: float = SIGNIFICANCE,
    most_permutations: int = PERMUTATIONS,
) -> list[ChangePoint]:
    """The significant change points of `values` in the order found (most significant split first); `seed` makes the
    permutations, and so the answer, the same for the same series; a candidate that passes is tested again with up
    to `most_permutations` shuffles, so that p can go below 1/(PERMUTATIONS + 1)."""
    series = np.asarray(values, dtype=float)
    distances: Matrix = np.abs(series[:, None] - series[None, :])
    rng = np.random.default_rng(seed)
    found: list[ChangePoint] = []
    while True:
        cuts = [0, *sorted(c.index for c in found), len(series)]
        bounds = list(zip(cuts[:-1], cuts[1:]))
        candidates = [c for c in (_best_split(distances, a, b) for a, b in bounds) if c is not None]
        if not candidates:
            return found
        index, statistic = max(candidates, key=lambda c: c[1])
        p_value = _p_value(distances, _Test(bounds, statistic, significance, most_permutations), rng)
        if p_value > significance:
            return found
        found.append(ChangePoint(index, p_value, statistic))
