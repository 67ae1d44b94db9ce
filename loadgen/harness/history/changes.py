"""The changes of a timeline: did a server change, or the machine? Per group of servers measured alike, the
machine's common series and each server's own (harness.history.relative), each searched and its changes confirmed
(harness.history.confirm); the changes kept at a false-discovery rate of 5 % over every test the page made
(Benjamini-Hochberg, q-values shown) that are at least the least change that counts (5 %, p99 10 % or a quantum);
each with its size and 95 % interval, and its cause from evidence:

- a server's own change: `server` where a commit between the two runs changed the server's inputs (its folder, the
  shared modules it builds against, its lock files; not notes, docs, tests or comments alone: harness.history.commits)
  or its recorded version changed; `harness` where the harness or environment changed instead (tool versions, schema,
  attempts, kernel, the harness's measuring code); `unexplained` where nothing recorded did. Where the common series
  moved at the same run too, both parts are given, each with its interval.
- a common series' change: `machine`, or `harness` where the harness or environment changed at that run. A machine's
  day moves every group's common series: the page draws it as one event."""

from __future__ import annotations

import functools
import math
import statistics
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from harness.basics.parallel import in_processes
from harness.history import confirm, relative
from harness.history.commits import Commits, Scope, Touched
from harness.history.relative import COMMON, OWN, Derived
from harness.history.timeline import MACHINE, Series, what_changed

FALSE_DISCOVERY_RATE = 0.05  # Benjamini-Hochberg's level over every test of a page
SERVER, MACHINE_CAUSE, HARNESS, UNEXPLAINED = "server", "machine", "harness", "unexplained"
HARNESS_PATHS = (
    "loadgen/harness/tools",
    "loadgen/harness/measuring",
    "loadgen/harness/runtime",
    "loadgen/scenarios.toml",
)
ScopeOf = Callable[[str], Scope | Path | None]


@dataclass
class SeriesChange:
    server: str  # the server, or `machine` for a group's common series
    scenario: str
    run: str
    metric: str
    at: str  # the run id of the first run after the change
    before: float  # the server's median figure on each side (common: the machine's relative level)
    after: float
    change_percent: float  # the confirmed size: own, relative to the other servers; common, of every server
    confidence: float  # 1 - p
    cause: str = SERVER
    previous: str = ""  # the run id of the last run before the change
    commit_range: tuple[str, str] = ("?", "?")
    conditions: str = ""
    commits: list[str] = field(default_factory=list)  # the commits that changed the server's inputs
    conditions_changed: list[str] = field(default_factory=list)  # what else differs between the two runs
    kind: str = OWN
    low_percent: float = 0.0  # the 95 % interval of change_percent
    high_percent: float = 0.0
    p_value: float = 1.0
    q_value: float = 1.0
    tool: str = ""
    load: str = ""
    machine_part: str = ""  # where the common series moved at that run too: its size and interval
    group: tuple[str, ...] = ()  # the series' group (harness.history.points.Series.group)

    def size(self) -> str:
        return f"{self.change_percent:+.1f} % ({self.low_percent:+.1f} … {self.high_percent:+.1f} %)"

    def to_dict(self) -> dict[str, object]:
        rounded = ("before", "after", "change_percent", "low_percent", "high_percent", "confidence")
        out: dict[str, object] = {k: round(getattr(self, k), 4) for k in rounded}
        out.update(p_value=float(f"{self.p_value:.3g}"), q_value=float(f"{self.q_value:.3g}"))
        for k in ("server", "scenario", "run", "metric", "tool", "load", "kind", "at", "previous", "cause"):
            out[k] = getattr(self, k)
        out.update(
            machine_part=self.machine_part,
            conditions=self.conditions,
            commit_range="..".join(self.commit_range),
            commits=self.commits,
            conditions_changed=self.conditions_changed,
        )
        return out


@dataclass(frozen=True)
class Discovery:
    """How a page's changes were kept: the tests made and the largest p-value Benjamini-Hochberg kept (0: none)."""

    tested: int
    threshold: float

    def sentence(self) -> str:
        return (
            f"changes kept at a false-discovery rate of {FALSE_DISCOVERY_RATE * 100:g} % over {self.tested} tests "
            "(Benjamini-Hochberg: " + (f"kept where p ≤ {self.threshold:.2g})" if self.threshold else "none passed)")
        )


@dataclass(frozen=True)
class Seen:
    """What one tested series could see: the smallest change found at 80 % power (%), its runs and episodes."""

    kind: str
    server: str
    group: tuple[str, ...]  # scenario, run label, metric, conditions, tool, load[, schema part]
    runs: int
    detectable: float
    detectable_end: float
    between: float  # the between-run standard deviation beyond the intervals (%)
    episodes: list[str]  # run ids set aside as 1-2-run episodes


@dataclass
class Found:
    changes: list[SeriesChange]
    discovery: Discovery
    seen: list[Seen]
    notes: list[str]


def _percent(log_ratio: float) -> float:
    return math.expm1(log_ratio) * 100


def _seed(d: Derived) -> int:
    return zlib.crc32("|".join(d.key).encode())  # the same series, the same draws, the same answer


def _change(
    d: Derived, verdict: confirm.Verdict, bounds: tuple[int, int, int], test: tuple[float, float]
) -> SeriesChange:
    """The change of `d` at position bounds[1] of its tested runs, between bounds[0] and bounds[2]."""
    start, at, end = bounds
    runs = [d.runs[i] for i in verdict.kept]
    raw = [d.raw[i] for i in verdict.kept]
    size = confirm.effect(d.values[verdict.kept], d.se[verdict.kept], d.floor, bounds)
    first, last = runs[at], runs[at - 1]
    model = d.model
    return SeriesChange(
        d.server,
        model.scenario,
        model.run,
        model.metric,
        first.run_id,
        statistics.median(raw[start:at]),
        statistics.median(raw[at:end]),
        _percent(size.size),
        1 - test[0],
        MACHINE_CAUSE if d.kind == COMMON else SERVER,
        last.run_id,
        (last.commit, first.commit),
        model.conditions,
        conditions_changed=what_changed(last, first, d.versions[verdict.kept[at - 1]], d.versions[verdict.kept[at]]),
        kind=d.kind,
        low_percent=_percent(size.low),
        high_percent=_percent(size.high),
        p_value=test[0],
        q_value=test[1],
        tool=model.tool,
        load=model.load,
        group=model.group,
    )


def _kept_changes(d: Derived, verdict: confirm.Verdict, tests: list[tuple[confirm.Split, float]]) -> list[SeriesChange]:
    """The series' splits kept over the page (q at most the rate), sized between their neighbours; those smaller
    than the least change that counts are not changes."""
    kept = sorted(((s, q) for s, q in tests if q <= FALSE_DISCOVERY_RATE), key=lambda t: t[0].index)
    cuts = [0, *(s.index for s, _ in kept), len(verdict.kept)]
    out = []
    for k, (split, q) in enumerate(kept):
        change = _change(d, verdict, (cuts[k], split.index, cuts[k + 2]), (split.p_value, q))
        if abs(math.log1p(change.change_percent / 100)) >= d.smallest:
            out.append(change)
    return out


def _seen(d: Derived, verdict: confirm.Verdict) -> Seen:
    return Seen(
        d.kind,
        d.server,
        d.model.group,
        len(verdict.kept),
        _percent(verdict.detectable),
        _percent(verdict.detectable_end),
        _percent(verdict.between),
        [d.runs[i].run_id for i in verdict.episodes],
    )


def confirmed(series: list[Series]) -> tuple[list[SeriesChange], Discovery, list[Seen], list[Derived], list[str]]:
    """Every group's common and own series searched, the tests' q-values over the page, the changes kept; what each
    series could see; the derived series; notes (the groups that cannot separate the machine from a server)."""
    derived, cannot = relative.derive(series, MACHINE)
    tested = [d for d in derived if len(d.values) >= 2 * confirm.MIN_SIDE]
    least_share = min(confirm.STEP_SHARE, 1 - confirm.STEP_SHARE)  # a p at the draws' floor must pass BH at rank 1
    most = max(confirm.FIRST_DRAWS, math.ceil(4 * len(tested) / (FALSE_DISCOVERY_RATE * least_share)))
    searches = [functools.partial(confirm.search, d.values, d.se, d.floor, d.smallest, _seed(d), most) for d in tested]
    verdicts = in_processes(searches, least=16)  # each seeded by its series: the same verdicts in any process
    p_values = [t.p_value for v in verdicts for t in v.tests if not t.revert]  # a revert shares its change's test
    q = iter(confirm.q_values(p_values))
    found: list[SeriesChange] = []
    for d, verdict in zip(tested, verdicts):
        tests: list[tuple[confirm.Split, float]] = []
        for t in verdict.tests:
            tests.append((t, tests[-1][1] if t.revert else next(q)))
        found += _kept_changes(d, verdict, tests)
    kept_p = [c.p_value for c in found]
    notes = (
        [
            f"{len(cannot)} group(s) measured on fewer than {relative.MIN_SERVERS} servers at a run cannot separate the "
            f"machine from a server, and are not tested: {', '.join(cannot[:12])}{' …' if len(cannot) > 12 else ''}"
        ]
        if cannot
        else []
    )
    return (
        found,
        Discovery(len(p_values), max(kept_p, default=0.0)),
        [_seen(d, v) for d, v in zip(tested, verdicts)],
        derived,
        notes,
    )


def _neighbours(change: SeriesChange, d: Derived) -> tuple[str, str]:
    """The commits one run before the change's last run and one run after its first: the range searched again when
    the change's own range holds nothing (a change placed a run early or late)."""
    ids = [info.run_id for info in d.runs]
    before, after = ids.index(change.previous), ids.index(change.at)
    return d.runs[max(0, before - 1)].commit, d.runs[min(len(ids) - 1, after + 1)].commit


def attribute(
    changes: list[SeriesChange], derived: list[Derived], scope_of: ScopeOf, harness: Scope | None = None
) -> None:
    """Each change's cause (the module's docstring); where a server's own change and its group's common series moved
    at the same run, the machine's part beside the server's."""
    commits = Commits()
    by_key = {(d.kind, d.server, d.model.group): d for d in derived}
    common = {(c.group, c.at): c for c in changes if c.kind == COMMON}
    for c in changes:
        environment = [w for w in c.conditions_changed if not w.startswith("server version")]
        harness_commits = commits.touching_code(*c.commit_range, harness) if harness else Touched([])
        if c.kind == COMMON:
            c.cause = HARNESS if environment or harness_commits.code else MACHINE_CAUSE
            c.commits = harness_commits.code
            continue
        day = common.get((c.group, c.at))
        if day:
            c.machine_part = f"machine {day.size()}"
        scope = scope_of(c.server)
        touched = commits.touching_code(*c.commit_range, scope) if scope else Touched([], "its inputs are not known")
        d = by_key.get((OWN, c.server, c.group))
        if scope and not touched.code and d is not None:
            wider = commits.touching_code(*_neighbours(c, d), scope)
            touched = Touched([f"{line} (a run from the change)" for line in wider.code], wider.problem)
        version = [w for w in c.conditions_changed if w.startswith("server version")]
        if touched.code or version:
            c.cause, c.commits = SERVER, touched.code
        elif environment or harness_commits.code:
            c.cause, c.commits = HARNESS, harness_commits.code
        else:
            c.cause = UNEXPLAINED
            c.commits = [f"({touched.problem})"] if touched.problem else []


def find_changes(series: list[Series], scope_of: ScopeOf, harness: Scope | None = None) -> Found:
    """Every change kept over the page, attributed, newest first; how they were kept; what each series could see."""
    changes, discovery, seen, derived, notes = confirmed(series)
    attribute(changes, derived, lambda name: _scope(scope_of(name)), harness)
    order = {p.run.run_id: p.run.started_at or p.run.run_id for s in series for p in s.points}
    newest_first = sorted(
        changes, key=lambda c: (str(order.get(c.at, c.at)), c.kind, c.server, c.scenario, c.run, c.metric), reverse=True
    )
    return Found(newest_first, discovery, seen, notes)


def _scope(given: Scope | Path | None) -> Scope | None:
    return Scope(given) if isinstance(given, Path) else given


def events(changes: list[SeriesChange]) -> list[tuple[str, str, list[SeriesChange]]]:
    """The common series' changes as events: one per run and cause (a machine's day moves every group at once)."""
    out: dict[tuple[str, str], list[SeriesChange]] = {}
    for c in changes:
        if c.kind == COMMON:
            out.setdefault((c.at, c.cause), []).append(c)
    return [(at, cause, members) for (at, cause), members in out.items()]


def spread(members: list[SeriesChange]) -> str:
    sizes = np.array([c.change_percent for c in members])
    return f"{sizes.min():+.0f} … {sizes.max():+.0f} %" if len(sizes) > 1 else f"{sizes[0]:+.1f} %"
