"""`make history`: the selected run folders on one timeline, its changes found, the page written
(results/history/index.html and index.md), a summary or (FORMAT=json) one JSON object printed. Reads results only:
starts nothing and takes no lock, so it runs beside a bench."""

from __future__ import annotations

import json
import math
import shlex
import statistics
from dataclasses import dataclass
from typing import Any

from harness.basics.messages import console, say
from harness.basics.paths import REPO, RESULTS
from harness.config.manifest import SHARED_BUILD, TWIN_SUFFIX, Server
from harness.history import adjustment, changes, confirm, history_page, relative
from harness.history.changes import HARNESS_PATHS, Discovery, ScopeOf, Seen
from harness.history.commits import Scope
from harness.history.points import since_prefix
from harness.history.run_cache import RunCache
from harness.history.timeline import (
    ADJUSTED,
    MACHINE,
    PairedPoint,
    Point,
    Selection,
    Series,
    build_series,
    machine_speed,
    paired_points,
    probe_noise,
    read_runs,
)

DEFAULT_RUNS = "results/*"  # inside the repository; anything else only when RUNS names it


@dataclass
class Timeline:
    """Everything `make history` found: the runs read, every series, the changes, the paired answers, notes."""

    runs: list[str]
    series: list[Series]
    changes: list[changes.SeriesChange]
    paired: list[PairedPoint]
    notes: list[str]
    discovery: Discovery
    seen: list[Seen]


def gather(
    selection: Selection, scope_of: ScopeOf, harness: Scope | None = None, cache: RunCache | None = None
) -> Timeline:
    """The runs selected, their series, the changes kept and attributed (`scope_of`: a server's inputs, or a folder;
    `harness`: the harness's measuring code, for a change of the harness; `cache`: the runs read before), the paired
    answers and the notes."""
    skipped: list[str] = []
    runs = read_runs(selection, skipped, cache)
    series = build_series(runs, selection)
    found = changes.find_changes(series, scope_of, harness)
    notes = [f"left out: {s}" for s in skipped] + found.notes + _notes(series, found)
    return Timeline(
        [info.run_id for info, _ in runs],
        series,
        found.changes,
        paired_points(runs, selection),
        notes,
        found.discovery,
        found.seen,
    )


def _notes(series: list[Series], found: changes.Found) -> list[str]:
    """What a reader must know to read the page: series too short for a test, episodes set aside, series split by
    conditions or by a results schema that changed a figure's meaning, runs without the probe's rate."""
    notes = []
    own = {(s.server, s.group) for s in series if s.server != MACHINE and s.metric in relative.TESTED}
    short = sorted(own - {(seen.server, seen.group) for seen in found.seen if seen.kind == "own"})
    if short:
        notes.append(
            f"a change needs at least {confirm.MIN_SIDE} runs on each side: of {len(own)} series, {len(short)} have "
            "too few runs (or too few servers beside them at their runs: a lower bound is not a figure) for a "
            "server's own change to be tested: "
            + ", ".join(f"{server} {' '.join(group[:3])}" for server, group in short[:12])
            + (" …" if len(short) > 12 else "")
        )
    episodes = [(seen, run) for seen in found.seen for run in seen.episodes]
    if episodes:
        notes.append(
            f"{len(episodes)} run(s) set aside as episodes (one or two runs away from those around them and back): "
            + ", ".join(f"{seen.server} {' '.join(seen.group[:3])} at {run}" for seen, run in episodes[:12])
            + (" …" if len(episodes) > 12 else "")
        )
    split: dict[tuple[str, str, str, str], set[str]] = {}
    for s in series:
        split.setdefault((s.server, s.scenario, s.run, s.metric), set()).add(s.conditions)
    for (server, scenario, run, metric), keys in sorted(split.items()):
        if len(keys) > 1 and metric == "rps":
            notes.append(
                f"{server} {scenario} {run}: {len(keys)} series, not joined, as their conditions differ: "
                + " | ".join(sorted(keys))
            )
    meaning: dict[tuple[str, str, str], list[str]] = {}  # (metric, split at, why) -> the series split there
    for s in series:
        if s.since and not s.metric.endswith(ADJUSTED):
            meaning.setdefault((s.metric, s.since, s.why), []).append(f"{s.server} {s.scenario} {s.run}")
    for (metric, since, why), split_ones in meaning.items():
        notes.append(
            f"{metric} of {len(split_ones)} series split in two at {since}, not joined: {why} (make compare's rule); "
            f"no change is sought across it: {', '.join(split_ones)}"
        )
    no_rate = sorted({p.run.run_id for s in series for p in s.points if not p.run.rate})
    if no_rate:
        notes.append(
            f"{len(no_rate)} run(s) without the probe's absolute rate (kept from 2026-11-26 on): "
            f"{', '.join(no_rate[:12])}{' …' if len(no_rate) > 12 else ''}; their figures are left out of the "
            "machine-speed-adjusted series"
        )
    return notes + _probe_notes([s for s in series if s.server == MACHINE])


def _probe_notes(machine: list[Series]) -> list[str]:
    """Per probe series: its own noise, and how many runs moved beyond it (the only ones the adjustment divides)."""
    noise = probe_noise(machine)
    notes = []
    for s in machine:
        reference = statistics.median(p.value for p in s.points)
        moved = [p for p in s.points if machine_speed(p.value, reference, noise[(s.run, s.conditions)]) != 1.0]
        notes.append(
            f"the probe's {s.run} rate: own noise {math.expm1(noise[(s.run, s.conditions)]) * 100:.1f} % (the median "
            f"disagreement of a run's readings before and after); {len(moved)} of {len(s.points)} runs beyond it, "
            "the only ones the machine-speed-adjusted series divide"
            + (f" ({', '.join(f'{p.run.run_id} {p.value / reference:.2f}x' for p in moved)})" if moved else "")
        )
    return notes


def _point_dict(p: Point) -> dict[str, Any]:
    return {
        "run_id": p.run.run_id,
        "started_at": p.run.started_at.isoformat() if p.run.started_at else None,
        "value": p.value,
        "low": p.low,
        "high": p.high,
        "level": p.level,
        "flags": list(p.flags),
        "commit": p.run.commit,
        "runtime": p.run.runtime,
        "machine": p.run.conditions_key,
        "server_version": p.version,
        "machine_speed": p.speed,
    }


def as_json(history: Timeline) -> dict[str, Any]:
    return {
        "runs": history.runs,
        "changes": [c.to_dict() for c in history.changes],
        "series": [
            {
                "server": s.server,
                "scenario": s.scenario,
                "run": s.run,
                "metric": s.metric,
                "conditions": s.conditions,
                "since": s.since,
                "why": s.why,
                "points": [_point_dict(p) for p in s.points],
            }
            for s in history.series
        ],
        "paired": [
            {
                "server": p.server,
                "scenario": p.scenario,
                "run": p.label,
                "metric": p.metric,
                "at": p.run.run_id,
                "ratio": p.ratio,
                "low": p.low,
                "high": p.high,
                "verdict": p.verdict,
                "base": p.base,
                "head": p.head,
            }
            for p in history.paired
        ],
        "notes": history.notes,
        "discovery": {
            "false_discovery_rate": changes.FALSE_DISCOVERY_RATE,
            "tested": history.discovery.tested,
            "threshold": history.discovery.threshold,
        },
        "events": [
            {"at": at, "cause": cause, "groups": len(members), "change_percent": [c.change_percent for c in members]}
            for at, cause, members in changes.events(history.changes)
        ],
        "seen": [
            {
                "kind": s.kind,
                "server": s.server,
                "group": list(s.group),
                "runs": s.runs,
                "detectable_percent": round(s.detectable, 2),
                "detectable_last_runs_percent": round(s.detectable_end, 2),
                "between_runs_percent": round(s.between, 2),
                "episodes": s.episodes,
            }
            for s in history.seen
        ],
    }


def adjustment_lines(series: list[Series]) -> list[str]:
    """How much of each server's day-to-day req/s change the machine-speed division removes, by the probe and by
    the pure-CPU stand-in (harness.history.adjustment)."""
    lines = []
    for name, removed in (
        ("the probe's rate", adjustment.by_probe(series)),
        ("the pure-CPU stand-in (other servers' high-compute ratio)", adjustment.by_pure_cpu_stand_in(series)),
    ):
        total = adjustment.overall(removed)
        if total is None:
            lines.append(f"by {name}: not measurable here (no consecutive runs with it)")
            continue
        per = ", ".join(f"{r.server} {r.share:.0%}" for r in removed)
        lines.append(f"by {name}: {total:.0%} of the day-to-day change removed ({per})")
    return lines


BUILD_FILES = ("pom.xml", "package.json", "package-lock.json", "Cargo.toml", "Cargo.lock")  # a shared build's inputs


def server_scope(servers: dict[str, Server], name: str) -> Scope | None:
    """What a server is built from (an A/A twin's: its original's): its folder, the repository's folders its build
    command names (jvm-contract/ for the JVM servers), a shared build's files in the folder above (the parent
    pom.xml), less the files another server of its folder runs (node's node-server.js is not express's)."""
    server = servers.get(name) or servers.get(name.removesuffix(TWIN_SUFFIX))
    if server is None:
        return None
    try:
        folder = server.folder.resolve().relative_to(REPO)
    except ValueError:
        return Scope(server.folder)
    paths = [str(folder)]
    try:
        tokens = shlex.split(server.build or "")
    except ValueError:
        tokens = []
    paths += [t.split("/")[0] for t in tokens if "/" in t and (REPO / t.split("/")[0]).is_dir()]
    if server.build and SHARED_BUILD in server.build:
        parent = server.folder.parent
        paths += [str((parent / f).relative_to(REPO)) for f in BUILD_FILES if (parent / f).is_file()]
    mine = set(server.run)
    excluded = [
        str(folder / token)
        for other in servers.values()
        if other.folder == server.folder and other.name != server.name
        for token in other.run
        if token not in mine and (server.folder / token).is_file()
    ]
    return Scope(REPO, tuple(dict.fromkeys(paths)), tuple(dict.fromkeys(excluded)))


def cmd_history(runs: str, scenarios: str, since: str, only: list[str], output: str, servers: dict[str, Server]) -> int:
    """The command; `only`: the servers to show (any name a run recorded; none: all); `output`: text or json. 0, or
    2 when no run folder was found."""
    if since and since_prefix(since) is None:
        say(f"SINCE={since} is not understood: a date (2026-11-24, 20261124) or a run id's start (20261124-0726)")
        return 2
    selection = Selection((runs or DEFAULT_RUNS).split(), frozenset(only), frozenset(scenarios.split()), since)
    cache = RunCache(RESULTS / "history" / "runs.json")
    history = gather(selection, lambda name: server_scope(servers, name), Scope(REPO, HARNESS_PATHS), cache)
    if not history.runs:
        say(
            f"no run folder with a results.json under {' '.join(selection.patterns)} (RUNS=, relative to the "
            "repository's root)"
        )
        return 2
    cache.save()
    written = history_page.write(
        history.runs,
        (history.series, history.changes, history.paired),
        history.notes + adjustment_lines(history.series),
        RESULTS / "history",
        (history.discovery, history.seen),
    )
    if output == "json":
        print(json.dumps(as_json(history), ensure_ascii=False))
        return 0
    say(
        f"{len(history.runs)} runs, {len(history.series)} series, {len(history.changes)} changes "
        f"({history.discovery.sentence()}), {len(history.paired)} paired answers"
    )
    for at, cause, members in changes.events(history.changes):
        say(f"  {at} {cause}: {len(members)} group(s) moved, {changes.spread(members)}")
    for c in [c for c in history.changes if c.kind == "own"][:30]:
        say(f"  {history_page.own_sentence(c)}")
    for line in history.notes + adjustment_lines(history.series):
        console.print(f"  note: {line}", markup=False, soft_wrap=True)  # one line each, a bad file's too
    for path in written:
        say(f"wrote {path}")
    return 0
