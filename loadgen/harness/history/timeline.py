"""Run folders read into one timeline: per (server, scenario, run label, metric) the median of each run with its
interval and flags, the run's commit, runtime and machine; the machine's own speed (the steadiness probe's loops per
second) as a series of its own, and each figure divided by it. Reads results.json files only: starts nothing.

A series never joins runs whose conditions differ in what moves every figure (runtime, CPU plan, machine, profile):
those are series of their own, with `conditions` naming the difference. Nor does it join runs whose results schema
gives the figure another meaning (`make compare`'s rule, harness.history.compare.meaning_changed: ab's percentiles
were whole ms before schema 4): the part from the first such run on is a series of its own, `since` that run. What may
change inside a series (commit, kernel, tool versions, the server's version, attempts per record) is named at the run
where it changed.
"""

from __future__ import annotations

import functools
import glob
import math
import statistics
from datetime import datetime
from pathlib import Path
from typing import Any

from harness.basics.parallel import in_processes
from harness.basics.paths import REPO
from harness.history.compare import meaning_changed
from harness.history.points import PairedPoint as PairedPoint  # re-exported: the timeline's types
from harness.history.points import Point as Point
from harness.history.points import RunInfo as RunInfo
from harness.history.points import Selection as Selection
from harness.history.points import Series as Series
from harness.history.points import figure, is_commit, since_prefix
from harness.history.run_cache import RunCache, slim
from harness.results import readable
from harness.results.flag_kinds import LOADGEN_BOUND
from harness.results.records import Record, ResultsError, Run

METRICS = ("rps", "p99", "cost_us")
FASTER_IS_HIGHER = {"rps"}  # rates: divided by the machine's relative speed; times (p99, CPU µs/req) multiplied by it
ADJUSTED = "_adjusted"  # a metric's name with this suffix: the figure divided by the machine's speed
MACHINE = "machine"  # the server name of the probe's series
PROBE_METRIC = "loops_per_s"
ROLES = ("server", "loadgen")
READ_ERRORS = (ResultsError, TypeError, AttributeError, ValueError, KeyError, OverflowError)


def run_folders(patterns: list[str]) -> list[Path]:
    """Every folder with a results.json that the patterns name (relative to the repository's root), once each."""
    found: dict[Path, None] = {}
    for pattern in patterns:
        base = pattern if Path(pattern).is_absolute() else str(REPO / pattern)
        for name in sorted(glob.glob(base)):
            folder = Path(name)
            if folder.name != "latest" and (folder / "results.json").is_file():
                found.setdefault(folder.resolve(), None)
    return list(found)


def _started(conditions: dict[str, Any], run_id: str) -> datetime | None:
    for text, form in ((conditions.get("started_at"), "%Y-%m-%dT%H:%M:%S%z"), (run_id[:15], "%Y%m%d-%H%M%S")):
        try:
            return datetime.strptime(str(text), form).replace(tzinfo=None)
        except ValueError:
            continue
    return None


def _rate(conditions: dict[str, Any]) -> dict[str, float]:
    """Role -> loops per second, the probes before and after the run averaged; {} for runs before it was kept."""
    probes = [p for p in (conditions.get("steadiness") or {}).values() if isinstance(p, dict)]
    out = {}
    for role in ROLES:
        rates = [figure(p["rate"][role], f"the probe's {role} rate") for p in probes if (p.get("rate") or {}).get(role)]
        if rates:
            out[role] = statistics.fmean(rates)
    return out


def _rate_spread(conditions: dict[str, Any]) -> dict[str, float]:
    """Role -> |log(after / before)|: how far the probe's two readings of one run disagree (none: one reading)."""
    probes = conditions.get("steadiness") or {}
    before, after = (
        (probes.get(k) or {}).get("rate") or {} if isinstance(probes.get(k), dict) else {} for k in ("before", "after")
    )
    return {
        r: abs(math.log(figure(after[r], "a probe rate") / figure(before[r], "a probe rate")))
        for r in ROLES
        if before.get(r) and after.get(r)
    }


def _commit(conditions: dict[str, Any]) -> str:
    """The run's commit ("?" where none is recorded); a ValueError where it is not a commit."""
    text = conditions.get("git_commit")
    if text is None:
        return "?"
    commit = str(text).removesuffix("-dirty")
    if not is_commit(commit):
        raise ValueError(f"conditions.git_commit {str(text)[:60]!r} is not a commit (7 to 40 hex digits)")
    return commit


def run_info(run: Run) -> RunInfo:
    c = run.conditions
    machine = c.get("machine") or {}
    cpus = c.get("cpus") or {}
    plan = " ".join(f"{role} {','.join(map(str, cores))}" for role, cores in sorted(cpus.items()))
    key = (
        f"{c.get('runtime', 'unknown runtime')} · CPUs {plan or '?'} · {machine.get('hostname', '?')} "
        f"({machine.get('cpu_model', '?')}, {machine.get('logical_cpus', '?')} CPUs) · {c.get('profile', '?')}"
    )
    details = {
        "kernel": str(machine.get("kernel", "?")),
        "attempts": str(c.get("repeat", "?")),
        "schema": str(run.schema),
        **{f"tool {t}": str(v) for t, v in (c.get("tools") or {}).items()},
    }
    return RunInfo(
        run.run_id,
        _started(c, run.run_id),
        _commit(c),
        str(c.get("runtime", "?")),
        key,
        details,
        _rate(c),
        c.get("versus"),
        _rate_spread(c),
    )


def read_runs(
    selection: Selection, skipped: list[str] | None = None, cache: RunCache | None = None
) -> list[tuple[RunInfo, Run]]:
    """The runs selected, oldest first. A folder whose results.json cannot be read (harness/results/readable.py), or
    holds what the harness never writes where the timeline looks, is left out and named in `skipped`: one bad file
    never costs the history. `cache`: the runs read before (harness.history.run_cache), read again when changed."""
    paths = [folder / "results.json" for folder in run_folders(selection.patterns)]
    kept = {path: cache.get(path) if cache else None for path in paths}
    unread = [path for path in paths if kept[path] is None]  # read in processes: a bench's file takes about 50 ms
    read = dict(zip(unread, in_processes([functools.partial(_read_summaries, path) for path in unread], least=8)))
    runs = []
    for path in paths:
        fresh = read.get(path)  # None: the cache kept it (RunCache.get keeps it for the next read too)
        try:
            run = kept[path] or _summaries_run(path, fresh)
            info = run_info(run)
            if kept[path]:
                _check_figures(info, run)  # a fresh read was checked where it was read
            if cache and isinstance(fresh, dict):
                cache.put(path, fresh)
        except READ_ERRORS as exc:
            if skipped is not None:
                text = " ".join(str(exc).split())[:300]
                skipped.append(text if str(path) in text else f"{path}: {text}")
            continue
        when = info.started_at.isoformat() if info.started_at else info.run_id
        if selection.since and when < (since_prefix(selection.since) or selection.since):
            continue
        runs.append((info, run))
    return sorted(runs, key=lambda r: (r[0].started_at or datetime.min, r[0].run_id))


def _check_figures(info: RunInfo, run: Run) -> None:
    """Every figure the timeline reads, read once: one that cannot be raises, and the run is left out."""
    for record in run.records:
        for metric in METRICS:
            _point(info, run, record, metric)
    versus_answers(info)


def _read_summaries(path: Path) -> dict[str, Any] | str:
    """What the timeline keeps of the run in `path` (harness.history.run_cache.slim), its figures checked, or why it
    cannot be read."""
    try:
        run = readable.load(path, attempts=False)
        _check_figures(run_info(run), run)
        return slim(run)
    except READ_ERRORS as exc:
        return str(exc) or type(exc).__name__


def _summaries_run(path: Path, read: dict[str, Any] | str | None) -> Run:
    if not isinstance(read, dict):
        raise ResultsError(read if read and str(path) in read else f"{path}: {read}")
    return Run.from_dict(read, str(path))


def _point(info: RunInfo, run: Run, record: Record, metric: str) -> Point | None:
    described = getattr(record.summary, metric, None) if record.summary else None
    if not described or (described.get("median") in (None, 0) and metric != "rps"):  # p99 of 0 whole ms (ab, schema 3)
        return None
    where = f"record {record.server!r} {record.scenario!r} {record.label!r} {metric}"
    median = figure(described["median"], f"{where}: the median")
    ci = described.get("ci") or {}
    low, high = (None if ci.get(k) is None else figure(ci[k], f"{where}: the interval's {k}") for k in ("low", "high"))
    server = run.servers.get(record.server) or {}
    return Point(
        info,
        median,
        low,
        high,
        ci.get("level"),
        tuple(f.name for f in record.flags),
        server.get("version"),
    )


def _wanted(record: Record, selection: Selection) -> bool:
    return (
        (not selection.servers or record.server in selection.servers)
        and (not selection.scenarios or record.scenario in selection.scenarios)
        and not record.failed
    )


def build_series(runs: list[tuple[RunInfo, Run]], selection: Selection) -> list[Series]:
    """Raw series of every metric, then the machine's probe series, then each metric divided by the machine's
    speed at the runs that have it."""
    series: dict[tuple[str, ...], Series] = {}  # the part of each series read up to now
    earlier: list[Series] = []  # parts that a change of the figure's meaning ended
    last: dict[tuple[str, ...], tuple[Run, str | None]] = {}  # the run and tool of the latest point
    for info, run in runs:
        if info.versus:  # paired rounds of two builds: answers of their own (paired_points), not points of a series
            continue
        for record in run.records:
            if not _wanted(record, selection):
                continue
            for metric in METRICS:
                point = _point(info, run, record, metric)
                if point:
                    tool, load = record.tool or "?", load_of(record)
                    key = (record.server, record.scenario, record.label, metric, info.conditions_key, tool, load)
                    why = _meaning_changed(last.get(key), run, record.tool, metric)
                    if why:
                        earlier.append(series.pop(key))
                    since = run.run_id if why else ""
                    series.setdefault(key, Series(*key[:5], since=since, why=why or "", tool=tool, load=load))
                    series[key].points.append(point)
                    last[key] = (run, record.tool)
    raw = earlier + list(series.values())
    machine = probe_series([info for info, _ in runs])
    return raw + machine + adjusted_series(raw, machine)


def load_of(record: Record) -> str:
    """The load a record's tool offered, as a series' key: its connections and threads."""
    return " ".join(f"{k} {v}" for k, v in (("c", record.concurrency), ("t", record.threads)) if v is not None)


def _meaning_changed(before: tuple[Run, str | None] | None, run: Run, tool: str | None, metric: str) -> str | None:
    """How the figure means something else in `run` than at the series' latest point (`before`: its run and tool), by
    make compare's rule for either run's tool; None where it does not."""
    if before is None:
        return None
    return next(
        filter(None, (meaning_changed(before[0], run, t, metric) for t in dict.fromkeys((before[1], tool)))), None
    )


def probe_series(infos: list[RunInfo]) -> list[Series]:
    """The pinned busy loop's loops per second, one series per role and conditions."""
    out: dict[tuple[str, str], Series] = {}
    for info in infos:
        for role, rate in info.rate.items():
            s = out.setdefault(
                (role, info.conditions_key), Series(MACHINE, "probe", f"{role} CPU", PROBE_METRIC, info.conditions_key)
            )
            s.points.append(Point(info, rate, None, None, None))
    return list(out.values())


def probe_noise(machine: list[Series]) -> dict[tuple[str, str], float]:
    """Per probe series (role, conditions): the median disagreement |log(after / before)| of a run's two readings,
    the probe's own noise; 0 where no run has both."""
    out = {}
    for s in machine:
        role = s.run.removesuffix(" CPU")
        spreads = [p.run.rate_spread[role] for p in s.points if role in p.run.rate_spread]
        out[(s.run, s.conditions)] = statistics.median(spreads) if spreads else 0.0
    return out


def machine_speed(rate: float, reference: float, noise: float) -> float:
    """A run's rate over its conditions' median; 1 while the two are no further apart than the probe's own noise
    (within it, dividing adds the probe's noise to the figure and takes nothing of the machine's away)."""
    speed = rate / reference
    return speed if abs(math.log(speed)) > noise else 1.0


def adjusted_series(raw: list[Series], machine: list[Series]) -> list[Series]:
    """Each series divided by the machine's relative speed (`machine_speed`) at the points whose run has the probe's
    rate (the others left out): the rate of its role (the load generator's for a loadgen-saturated req/s) over the
    median rate of its conditions."""
    reference = {(s.run, s.conditions): statistics.median(p.value for p in s.points) for s in machine}
    noise = probe_noise(machine)
    out = []
    for s in raw:
        points = []
        for p in s.points:
            role = "loadgen" if s.metric == "rps" and LOADGEN_BOUND.name in p.flags else "server"
            key = (f"{role} CPU", s.conditions)
            rate = p.run.rate.get(role)
            if not reference.get(key) or not rate:
                continue
            speed = machine_speed(rate, reference[key], noise[key])
            scale = 1 / speed if s.metric in FASTER_IS_HIGHER else speed
            points.append(
                Point(
                    p.run,
                    p.value * scale,
                    p.low * scale if p.low is not None else None,
                    p.high * scale if p.high is not None else None,
                    p.level,
                    p.flags,
                    p.version,
                    speed,
                )
            )
        if points:
            out.append(
                Series(
                    s.server,
                    s.scenario,
                    s.run,
                    s.metric + ADJUSTED,
                    s.conditions,
                    points,
                    s.since,
                    s.why,
                    s.tool,
                    s.load,
                )
            )
    return out


def versus_answers(info: RunInfo) -> list[PairedPoint]:
    """A `make versus` run's answers: per scenario run and metric, head ÷ base with its interval (a TypeError,
    KeyError or ValueError where the section is not what make versus writes)."""
    if info.versus is None:
        return []
    v = dict(info.versus)
    server, builds = str(v.get("server", "?")), dict(v.get("builds") or {})
    labels = [str(dict(builds.get(k) or {}).get("label", "?")) for k in ("base", "head")]
    out = []
    for result in list(v.get("results") or []):
        for metric, answer in dict(result.get("metrics") or {}).items():
            iv = answer.get("interval")
            if iv:
                ratio, low, high = (figure(iv[k], f"versus {metric} {k}") for k in ("ratio", "low", "high"))
                out.append(
                    PairedPoint(
                        info,
                        server,
                        str(result["scenario"]),
                        str(result["run"]),
                        str(metric),
                        ratio,
                        low,
                        high,
                        str(answer.get("verdict", "")),
                        *labels,
                    )
                )
    return out


def paired_points(runs: list[tuple[RunInfo, Run]], selection: Selection) -> list[PairedPoint]:
    """Every `make versus` answer of the runs that the selection wants."""
    return [
        p
        for info, _ in runs
        for p in versus_answers(info)
        if (not selection.servers or p.server in selection.servers)
        and (not selection.scenarios or p.scenario in selection.scenarios)
    ]


def what_changed(before: RunInfo, after: RunInfo, version_before: str | None, version_after: str | None) -> list[str]:
    """What differs between two runs of one series beside the numbers: the server's version, kernel, tools, ..."""
    changed = [
        f"{name}: {before.details.get(name, '-')} → {value}"
        for name, value in after.details.items()
        if before.details.get(name) != value
    ]
    if version_before != version_after:
        changed.insert(0, f"server version: {version_before or '-'} → {version_after or '-'}")
    return changed
