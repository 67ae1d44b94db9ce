"""Two series out of the servers measured alike (one scenario, run label, tool, load, metric, conditions and schema
part: a `group`): the machine's and each server's own.

On the log of each figure, y[k, r] for server k at run r, a two-way fit by medians (Tukey's median polish):
y = a_k + c_r + rest. `c` is the **common** series, what every server's figure did at that run: the machine's, its
day and its bench; a_k the server's level. A server's **own** series is its figure relative to the other servers'
at the same run, y[k, r] - a_k - c'_r, c' the median polish of the distinct servers (an A/A twin left out: it changes
with its original's code): what the machine does to every server cancels, and a median of three or more is not moved
by one of them changing (a median of the others alone would be, with two others: their mean). The twin's difference
from its original sets the floor of the between-run variance (what a process alone moves), harness.history.confirm.

A group with fewer than MIN_SERVERS servers at a run cannot tell the machine from a server there: that run is left
out of both series, and a group with too few such runs says it cannot separate the two. A loadgen-saturated req/s is
a lower bound, not the server's figure: left out of the req/s series here (drawn as such on the page)."""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from datetime import datetime
from statistics import NormalDist

import numpy as np
from numpy.typing import NDArray

from harness.config.manifest import TWIN_SUFFIX
from harness.history.points import Point, RunInfo, Series
from harness.results.flag_kinds import LOADGEN_BOUND

OWN, COMMON = "own", "common"
MIN_SERVERS = 3  # at a run: the server and at least two others to stand for the machine
TESTED = ("rps", "p99", "cost_us")
SMALLEST = {"rps": 0.05, "cost_us": 0.05, "p99": 0.10}  # the least change that counts (5 %, p99 10 %)
POLISH_ROUNDS = 4
Matrix = NDArray[np.float64]


@dataclass
class Derived:
    """One series the page tests: a server's own (relative to the others) or a group's common one."""

    kind: str
    server: str  # the server, or MACHINE's name for the common series
    model: Series  # a raw series of the group: its scenario, run label, metric, conditions, tool, load, schema part
    runs: list[RunInfo]
    values: Matrix  # log
    se: Matrix  # each run's standard error (log), from its interval; nan where it has none
    raw: list[float]  # the server's own figure at each run (own), or exp(c) (common)
    versions: list[str | None]
    floor: float = 0.0  # the A/A twin's between-run variance: the least the between-run variance can be
    smallest: float = math.log(1.05)  # the least change that counts (log)

    @property
    def key(self) -> tuple[str, ...]:
        return (self.kind, self.server, *self.model.group)


def standard_error(point: Point) -> float:
    """A run's standard error on the log scale from its interval: the log interval's width over 2 z at its level."""
    if not point.low or not point.high or point.low <= 0 or point.high <= point.low:
        return math.nan
    z = NormalDist().inv_cdf((1 + (point.level or 0.95)) / 2)
    return (math.log(point.high) - math.log(point.low)) / (2 * z)


def smallest_change(metric: str, values: list[float]) -> float:
    """The least change that counts (log): 5 % for req/s and CPU µs/req; for p99 10 % or one quantum of its unit at
    its level (whole ms where every value is whole, as ab's before schema 4; else a µs)."""
    floor = math.log1p(SMALLEST.get(metric, 0.05))
    if metric != "p99" or not values:
        return floor
    quantum = 1.0 if all(float(v).is_integer() for v in values) else 0.001
    return max(floor, math.log1p(quantum / float(np.median(values))))


def _original(server: str) -> str:
    return server.removesuffix(TWIN_SUFFIX)


def _matrices(members: list[Series], runs: list[RunInfo]) -> tuple[Matrix, Matrix]:
    """y (log) and se of each member at each run: nan where not measured, or a lower bound of req/s."""
    position = {info.run_id: r for r, info in enumerate(runs)}
    y, se = np.full((len(members), len(runs)), np.nan), np.full((len(members), len(runs)), np.nan)
    for k, s in enumerate(members):
        for p in s.points:
            if s.metric == "rps" and LOADGEN_BOUND.name in p.flags:
                continue
            y[k, position[p.run.run_id]] = math.log(p.value)
            se[k, position[p.run.run_id]] = standard_error(p)
    return y, se


def polish(y: Matrix) -> tuple[Matrix, Matrix]:
    """Tukey's median polish of y = a_k + c_r + rest (nan: missing): the levels a and the common series c."""
    a, c = np.zeros(y.shape[0]), np.zeros(y.shape[1])
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # an all-nan run or server: nan, left out
        for _ in range(POLISH_ROUNDS):
            a = np.nan_to_num(np.nanmedian(y - c[None, :], axis=1))
            c = np.nan_to_num(np.nanmedian(y - a[:, None], axis=0))
    return a, c


def twin_floor(members: list[Series], y: Matrix, se: Matrix) -> float:
    """Per process, the between-run variance of an A/A twin against its original beyond their intervals (half the
    pair's), the largest over the group's twins; 0 where there is none."""
    names = [s.server for s in members]
    floors = [0.0]
    for k, name in enumerate(names):
        if name.endswith(TWIN_SUFFIX) and _original(name) in names:
            j = names.index(_original(name))
            both = np.isfinite(y[k]) & np.isfinite(y[j])
            if both.sum() >= 4:
                d = y[k, both] - y[j, both]
                spread = (1.4826 * float(np.median(np.abs(d - np.median(d))))) ** 2
                pair = se[k, both] ** 2 + se[j, both] ** 2
                within = float(np.median(pair[np.isfinite(pair)])) if np.isfinite(pair).any() else 0.0
                floors.append(max(0.0, spread - (within if math.isfinite(within) else 0.0)) / 2)
    return max(floors)


def derive(series: list[Series], machine: str) -> tuple[list[Derived], list[str]]:
    """Every group's common series and its servers' own; notes: the groups that cannot separate the two."""
    groups: dict[tuple[str, ...], list[Series]] = {}
    for s in series:
        if s.metric in TESTED and s.server != machine:
            groups.setdefault(s.group, []).append(s)
    out, notes = [], []
    for members in groups.values():
        runs = sorted(
            {p.run.run_id: p.run for s in members for p in s.points}.values(),
            key=lambda info: (info.started_at or datetime.min, info.run_id),
        )
        derived = _group(members, runs, machine)
        if derived is None:
            model = members[0]
            notes.append(
                f"{model.scenario} {model.run} {model.metric} ({model.tool}{', ' + model.load if model.load else ''})"
            )
        out += derived or []
    return out, notes


def _group(members: list[Series], runs: list[RunInfo], machine: str) -> list[Derived] | None:
    """A group's common series and its servers' own; None where fewer than MIN_SERVERS servers share a run."""
    y, se = _matrices(members, runs)
    counted = np.isfinite(y).sum(axis=0)
    if len(members) < MIN_SERVERS or (counted >= MIN_SERVERS).sum() < 2:
        return None
    a, c = polish(y)
    floor, names = twin_floor(members, y, se), [s.server for s in members]
    values = [float(math.exp(v)) for s in members for v in y[names.index(s.server)] if math.isfinite(v)]
    smallest = smallest_change(members[0].metric, values)
    enough = counted >= MIN_SERVERS
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # an all-nan run or server: nan, left out
        common_se = 1.2533 * np.sqrt(np.nanmean(se**2, axis=0) / counted)
    out = [_derived(COMMON, machine, members[0], runs, (c, common_se, np.exp(c)), enough)]
    out[0].smallest = smallest
    distinct = [j for j, name in enumerate(names) if not name.endswith(TWIN_SUFFIX)]
    reference = polish(y[distinct])[1]  # the median of the distinct servers, the one whose own series it is among them
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # an all-nan run: nan, left out
        n_others = np.isfinite(y[distinct]).sum(axis=0) - 1
        ref_se2 = (math.pi / 2) * np.nanmean(se[distinct] ** 2, axis=0) / (n_others + 1)
    for k, s in enumerate(members):
        usable = np.isfinite(y[k]) & (n_others >= MIN_SERVERS - 1)
        own = _derived(
            OWN, s.server, s, runs, (y[k] - a[k] - reference, np.sqrt(se[k] ** 2 + ref_se2), np.exp(y[k])), usable
        )
        own.floor, own.smallest = floor, smallest
        version = {p.run.run_id: p.version for p in s.points}
        own.versions = [version.get(info.run_id) for info in own.runs]
        out.append(own)
    return out


def _derived(
    kind: str,
    server: str,
    model: Series,
    runs: list[RunInfo],
    data: tuple[Matrix, Matrix, Matrix],
    usable: NDArray[np.bool_],
) -> Derived:
    values, se, raw = data
    usable = usable & np.isfinite(values)
    index = np.flatnonzero(usable)
    return Derived(
        kind,
        server,
        model,
        [runs[i] for i in index],
        values[index],
        se[index],
        [float(v) for v in raw[index]],
        [None] * len(index),
    )
