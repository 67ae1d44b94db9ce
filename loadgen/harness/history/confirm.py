"""A series' changes located and confirmed: on the log of a figure (a change is a ratio), each run weighed by its own
interval plus the variance between runs that the intervals do not hold, a change (or a change and its revert)
located where the weighted means differ most (binary segmentation: the pieces are searched again while a change is
found), and confirmed by a test that knows the location was chosen.

- **Between-run variance** (tau^2): what consecutive runs differ by beyond their intervals, from the median absolute
  difference of consecutive runs (a step moves one difference, not the median), never below `floor` (the A/A twin's
  process-to-process variance, harness.history.relative). Each run weighs 1 / (se^2 + tau^2).
- **Location**: for every step with at least MIN_SIDE runs on each side, and every change reverted later (MIN_SIDE
  runs before, between and after: a step test would weigh the reverted runs with the changed ones),
  Z = (mean inside - mean outside) / sqrt(1 / W_inside + 1 / W_outside) (weighted means, W the summed weights); the
  one with the largest |Z|. A change and its revert are found by one test: one p for the page's false discoveries.
- **Confirmation**: the largest |Z| is compared with the largest |Z| of series drawn with no change, with the same
  intervals and a between-run variance estimated from the data (the whole procedure repeated on each draw, the
  estimate of tau^2 included): p = (1 + draws at least as large) / (draws + 1). A maximum over every location is a
  test of the chosen one (the max-statistic; no location is tested alone). A test whose p is above EARLY_STOP after
  EARLY_DRAWS draws ends there: it could only have passed with a p below that, which all the draws would give.
- **Episodes**: a run or two away from the runs around them (beyond EPISODE_Z of their noise, the rolling median of
  five) and back again is a short busy spell, set aside, never two opposite changes.
- **What it could not see**: the smallest change found at 80 % power with the runs and noise it has, mid-series and
  in the last MIN_SIDE runs: (the 95 % critical value of the no-change maximum step, for a series of its length:
  step_critical, + 0.84) x the change's standard error.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field
from statistics import NormalDist

import numpy as np
from numpy.typing import NDArray

Vector = NDArray[np.float64]

MIN_SIDE = 3  # runs on each side of a change
SCREEN = 0.05  # a split at or below this p is kept for the page's false-discovery control and its pieces searched
FIRST_DRAWS = 199  # no-change draws of every test; more for a split that passes SCREEN, up to the page's need
EARLY_DRAWS, EARLY_STOP = 50, 0.2  # a test whose p is above EARLY_STOP after EARLY_DRAWS ends there (most do)
CRITICAL_DRAWS = 999  # no-change series of a length, for the 95 % critical value behind "what it could not see"
ENOUGH_EXCEEDANCES = 20  # draws at least as extreme: p known well enough, no more draws
EPISODE_Z = 4.0  # a run this many of its standard deviations from the rolling median of five: an episode's run
EPISODE_RUNS = 2  # at most this many runs in a row make an episode; more is a change
Z80 = NormalDist().inv_cdf(0.8)  # 0.84: the power of 80 %
MAD_SD = 1.4826  # a normal sample's standard deviation over its median absolute deviation
LEAST_VARIANCE = 0.001**2  # a run's variance is at least (0.1 %)^2: identical attempts (a whole-ms p99) are not exact


@dataclass(frozen=True)
class Split:
    """A change before position `index` (the first run after it) of the series' usable runs, and its test."""

    index: int
    start: int  # the piece that was searched: [start, end)
    end: int
    p_value: float
    revert: bool = False  # the revert of the split before it, found by the same test (one p for the page, not two)


@dataclass(frozen=True)
class Effect:
    """A change's size on the log scale, with its 95 % interval, from the runs up to the neighbouring changes."""

    size: float
    low: float
    high: float


@dataclass
class Verdict:
    """One series searched: the usable runs' positions, its splits (every test made, in the order made), the episodes
    set aside, the between-run standard deviation, the smallest change found at 80 % power (log scale)."""

    kept: list[int]  # positions (in the series given) of the runs tested: all but the episodes
    tests: list[Split] = field(default_factory=list)
    episodes: list[int] = field(default_factory=list)  # positions of the runs set aside
    between: float = 0.0
    detectable: float = math.inf  # mid-series
    detectable_end: float = math.inf  # in the last MIN_SIDE runs


def robust_between_variance(x: Vector, se2: Vector, floor: float = 0.0) -> float:
    """tau^2 from the median absolute difference of consecutive runs (a step or an episode moves few of them): half
    their variance less the intervals' part, at least `floor`. For finding episodes; tests use `between_variance`."""
    spread = (MAD_SD * float(np.median(np.abs(np.diff(x))))) ** 2 / 2
    own = float(np.median(se2[1:] + se2[:-1])) / 2 if len(se2) > 1 else 0.0
    return max(spread - own, floor)


TWO_SPLIT_GRID = 30  # the two-split fit tries at most this many cuts a side (O(cuts²) per series and draw)


def between_variance(x: NDArray[np.float64], se2: Vector, floor: float = 0.0) -> NDArray[np.float64]:
    """tau^2 of each row of `x` (shape (rows, n) or (n,)): the variance of the runs around the means of their best
    fit with up to two splits (the least squares one, at least MIN_SIDE runs a piece; one mean where too short) less
    the intervals' mean variance, at least `floor`. A step, or a change and its revert, is fitted, not counted as
    noise (a revert counted as noise hides both); every test draw estimates it the same way."""
    rows = np.atleast_2d(x)
    n = rows.shape[1]
    total, squares = np.cumsum(rows, axis=1), np.sum(rows**2, axis=1)
    explained, dof = total[:, -1] ** 2 / n, max(n - 1, 1)
    if n >= 2 * MIN_SIDE:
        k = np.arange(MIN_SIDE, n - MIN_SIDE + 1)
        first = total[:, k - 1]
        explained = (first**2 / k + (total[:, -1:] - first) ** 2 / (n - k)).max(axis=1)
        dof = n - 2
    if n >= 3 * MIN_SIDE:
        cuts = np.arange(MIN_SIDE, n + 1, max(1, math.ceil(n / TWO_SPLIT_GRID)))  # a long series: a grid of cuts
        a, b = (c.ravel() for c in np.meshgrid(cuts, cuts, indexing="ij"))
        keep = (b - a >= MIN_SIDE) & (n - b >= MIN_SIDE)
        a, b = a[keep], b[keep]
        s1, s2 = total[:, a - 1], total[:, b - 1] - total[:, a - 1]
        s3 = total[:, -1:] - total[:, b - 1]
        explained = np.maximum(explained, (s1**2 / a + s2**2 / (b - a) + s3**2 / (n - b)).max(axis=1))
        dof = n - 3
    variance = (squares - explained) / dof - float(np.mean(se2))
    result: NDArray[np.float64] = np.maximum(variance, floor)
    return result if np.ndim(x) > 1 else result[0]


def segments(n: int) -> tuple[NDArray[np.intp], NDArray[np.intp]]:
    """The changes a piece of n runs is tested for, each as a segment [a, b) set against the runs outside it: a step
    at a (b = n), and a change at a reverted at b (a change and its revert; one step would be tested against a
    mixture), every side of every change at least MIN_SIDE runs; the reverted ones on a grid of cuts in a long piece."""
    steps = np.arange(MIN_SIDE, n - MIN_SIDE + 1)
    cuts = np.arange(MIN_SIDE, n - MIN_SIDE + 1, max(1, math.ceil(n / TWO_SPLIT_GRID)))
    a, b = (c.ravel() for c in np.meshgrid(cuts, cuts, indexing="ij"))
    keep = b - a >= MIN_SIDE
    return np.concatenate([steps, a[keep]]), np.concatenate([np.full(len(steps), n), b[keep]])


def segment_z(
    x: NDArray[np.float64], w: NDArray[np.float64], cuts: tuple[NDArray[np.intp], NDArray[np.intp]], smallest: float
) -> NDArray[np.float64]:
    """(|weighted mean inside - outside| - smallest) / its standard error (|Z| with smallest 0) of every segment
    [a, b) of `cuts`, for each row of x with its weights (both (rows, n)): (rows, segments)."""
    a, b = cuts
    zero = np.zeros((x.shape[0], 1))
    wc, sc = np.hstack([zero, np.cumsum(w, axis=1)]), np.hstack([zero, np.cumsum(w * x, axis=1)])
    w_in, s_in = wc[:, b] - wc[:, a], sc[:, b] - sc[:, a]
    w_out, s_out = wc[:, -1:] - w_in, sc[:, -1:] - s_in
    result: NDArray[np.float64] = (np.abs(s_in / w_in - s_out / w_out) - smallest) / np.sqrt(1 / w_in + 1 / w_out)
    return result


STEP_SHARE = 0.9  # of a test's level, the step's; the change-and-revert's the rest (a weighted Bonferroni)
DRAW_CHUNK = 2000  # no-change series drawn at once (memory: rows x segments)


def _largest(
    x: NDArray[np.float64], se2: Vector, floor: float, smallest: float = 0.0
) -> tuple[NDArray[np.float64], NDArray[np.intp]]:
    """For each row, the steps' and the reverted changes' largest (|difference| - smallest) / its standard error
    (|Z| where smallest is 0), with tau^2 estimated from the row, and which segment each is: (rows, 2) each, -inf
    where a piece is too short for a revert."""
    tau2 = between_variance(x, se2, floor)
    cuts = segments(x.shape[1])
    z = segment_z(x, 1 / (se2[None, :] + tau2[:, None]), cuts, smallest)
    families = [np.flatnonzero(cuts[1] == x.shape[1]), np.flatnonzero(cuts[1] < x.shape[1])]
    largest = np.full((x.shape[0], 2), -np.inf)
    where = np.zeros((x.shape[0], 2), dtype=np.intp)
    for f, members in enumerate(families):
        if len(members):
            largest[:, f] = z[:, members].max(axis=1)
            where[:, f] = members[z[:, members].argmax(axis=1)]
    return largest, where


def _exceeding(
    se2: Vector, tau2: float, floor: float, rng: np.random.Generator, count: int, observed: Vector
) -> Vector:
    """How many of `count` series with no change (each run drawn with its own variance plus tau^2) have a largest
    |Z| at least `observed`, for the steps and the reverted changes."""
    out = np.zeros(2)
    for size in [DRAW_CHUNK] * (count // DRAW_CHUNK) + [count % DRAW_CHUNK]:
        if size:
            x = rng.standard_normal((size, len(se2))) * np.sqrt(se2 + tau2)
            out += np.sum(_largest(x, se2, floor)[0] >= observed - 1e-12, axis=0)
    return out


def _weighed(exceeding: Vector, done: int) -> tuple[float, int]:
    """The test's p (the smaller family p over its share of the level, at most 1) and the family that gave it."""
    shares = (STEP_SHARE, 1 - STEP_SHARE)
    p = [(1 + exceeding[f]) / (done + 1) / shares[f] if np.isfinite(exceeding[f]) else math.inf for f in (0, 1)]
    family = int(np.argmin(p))
    return min(1.0, p[family]), family


def locate_piece(
    x: Vector, se2: Vector, limits: tuple[float, float], rng: np.random.Generator, most: int
) -> tuple[tuple[int, int], float]:
    """The change of one piece, as the segment [a, b) of its positions (b = len(x): a step; b < len(x): reverted
    at b), and its p, a test of a change of at least `smallest` (limits: the floor of tau^2, smallest). A test whose
    p after EARLY_DRAWS is above EARLY_STOP ends there: any p below that is the one all the draws would give."""
    floor, smallest = limits
    observed, where = _largest(x[None, :], se2, floor, smallest)
    tau2 = float(between_variance(x, se2, floor))
    exceeding = np.where(np.isfinite(observed[0]), 0.0, np.inf)
    done = 0
    for more in (EARLY_DRAWS, FIRST_DRAWS - EARLY_DRAWS):
        exceeding = exceeding + _exceeding(se2, tau2, floor, rng, more, observed[0])
        done += more
        p, family = _weighed(exceeding, done)
        if p > EARLY_STOP:
            break
    while p <= SCREEN and done < most and exceeding[family] < ENOUGH_EXCEEDANCES:
        more = min(most - done, 4 * done)
        exceeding = exceeding + _exceeding(se2, tau2, floor, rng, more, observed[0])
        done += more
        p, family = _weighed(exceeding, done)
    a, b = segments(len(x))
    return (int(a[where[0, family]]), int(b[where[0, family]])), p


@functools.lru_cache(maxsize=256)
def step_critical(runs: int) -> float:
    """The 95 % quantile of the largest step |Z| of `runs` runs with no change, the between-run variance estimated
    from them as every test does (a series of its length with equal intervals: its own would take its test's draws
    again, and where its intervals carry the noise the figure is a little high)."""
    x = np.random.default_rng(runs).standard_normal((CRITICAL_DRAWS, runs))
    return float(np.quantile(_largest(x, np.full(runs, LEAST_VARIANCE), 0.0)[0][:, 0], 0.95))


def episodes(x: Vector, se2: Vector, floor: float, smallest: float) -> list[int]:
    """Runs one or two in a row far from the rolling median of five around them (beyond EPISODE_Z of their noise and
    beyond `smallest`, the least change that counts), with the runs on both sides back: positions in x."""
    n = len(x)
    if n < 5:
        return []
    windows = np.lib.stride_tricks.sliding_window_view(x, 5)
    centre = np.median(windows, axis=1)
    rolling = np.concatenate([np.full(2, centre[0]), centre, np.full(2, centre[-1])])
    tau2 = robust_between_variance(x, se2, floor)
    away = (np.abs(x - rolling) > EPISODE_Z * np.sqrt(se2 + tau2)) & (np.abs(x - rolling) >= smallest)
    out: list[int] = []
    r = 0
    while r < n:
        if not away[r]:
            r += 1
            continue
        end = r
        while end < n and away[end]:
            end += 1
        if end - r <= EPISODE_RUNS:
            out += list(range(r, end))
        r = end
    return out


def variances(se: Vector) -> Vector:
    """Each run's variance from its standard error: a run without one takes the series' median, none below
    LEAST_VARIANCE."""
    filled = np.nan_to_num(se, nan=float(np.nanmedian(se)) if np.isfinite(se).any() else 0.0)
    result: Vector = np.maximum(filled**2, LEAST_VARIANCE)
    return result


def search(x: Vector, se: Vector, floor: float, smallest: float, seed: int, most: int) -> Verdict:
    """Every split of the series tested (binary segmentation: a piece with a change at p <= SCREEN is cut there, and
    at its revert, and the parts searched again); `smallest`: the least change that counts (log), for episodes; `most`: the most
    no-change draws a test may take (the page's false-discovery control needs small p's told apart)."""
    se2 = variances(se)
    aside = episodes(x, se2, floor, smallest)
    kept = [i for i in range(len(x)) if i not in set(aside)]
    verdict = Verdict(kept, episodes=aside)
    xs, s2 = x[kept], se2[kept]
    if len(xs) < 2 * MIN_SIDE:
        return verdict
    rng = np.random.default_rng(seed)
    pieces = [(0, len(xs))]
    while pieces:
        start, end = pieces.pop(0)
        if end - start < 2 * MIN_SIDE:
            continue
        (a, b), p = locate_piece(xs[start:end], s2[start:end], (floor, smallest), rng, most)
        verdict.tests.append(Split(start + a, start, end, p))
        cuts = [start, start + a, end]
        if start + b < end:  # a change and its revert
            verdict.tests.append(Split(start + b, start, end, p, revert=True))
            cuts.insert(2, start + b)
        if start == 0 and end == len(xs):
            _power(verdict, xs, s2, floor, step_critical(len(xs)))
            verdict.detectable += smallest  # a change must pass its test beyond the least that counts
            verdict.detectable_end += smallest
        if p <= SCREEN:
            pieces += list(zip(cuts[:-1], cuts[1:]))
    return verdict


def _power(verdict: Verdict, x: Vector, se2: Vector, floor: float, critical: float) -> None:
    """The smallest change found at 80 % power at the 5 % level of the series' own test, mid-series and in the
    last MIN_SIDE runs."""
    w = 1 / (se2 + float(between_variance(x, se2, floor)))
    verdict.between = math.sqrt(float(between_variance(x, se2, floor)))
    for attribute, cut in (("detectable", len(x) // 2), ("detectable_end", len(x) - MIN_SIDE)):
        error = math.sqrt(1 / w[:cut].sum() + 1 / w[cut:].sum())
        setattr(verdict, attribute, (critical + Z80) * error)


def t_quantile(probability: float, df: int) -> float:
    """Student's t quantile (Hill's expansion in 1/df of the normal's, within 0.5 % from 3 degrees of freedom)."""
    z = NormalDist().inv_cdf(probability)
    if df <= 0:
        return math.inf
    g1 = (z**3 + z) / 4
    g2 = (5 * z**5 + 16 * z**3 + 3 * z) / 96
    g3 = (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / 384
    return z + g1 / df + g2 / df**2 + g3 / df**3


def effect(x: Vector, se: Vector, floor: float, bounds: tuple[int, int, int]) -> Effect:
    """The change at `bounds[1]` between the runs from bounds[0] and up to bounds[2] (the neighbouring changes):
    weighted means' difference, its 95 % interval on Student's t with the runs less two degrees of freedom."""
    start, at, end = bounds
    se2 = variances(se)
    piece, piece_se2 = x[start:end], se2[start:end]
    k = at - start
    residuals = np.concatenate([piece[:k] - piece[:k].mean(), piece[k:] - piece[k:].mean()])
    spread = float(np.sum(residuals**2)) / max(len(piece) - 2, 1) - float(np.mean(piece_se2))
    w = 1 / (piece_se2 + max(spread, floor))  # around the two levels: the step is not noise
    before, after = np.average(piece[:k], weights=w[:k]), np.average(piece[k:], weights=w[k:])
    error = math.sqrt(1 / w[:k].sum() + 1 / w[k:].sum())
    margin = t_quantile(0.975, len(piece) - 2) * error
    size = float(after - before)
    return Effect(size, size - margin, size + margin)


def q_values(p_values: list[float]) -> list[float]:
    """Benjamini-Hochberg's adjusted p-values (q): the smallest false-discovery rate at which each test is kept
    (Benjamini, Y. and Hochberg, Y. (1995), JRSS B 57(1))."""
    if not p_values:
        return []
    p = np.asarray(p_values, dtype=float)
    order = np.argsort(p)
    m = len(p)
    ranked = p[order] * m / np.arange(1, m + 1)
    adjusted = np.minimum.accumulate(ranked[::-1])[::-1]
    out = np.empty(m)
    out[order] = np.minimum(adjusted, 1.0)
    return [float(v) for v in out]
