"""`make history`: the selected run folders on one timeline, its changes found, the page written
(results/history/index.html and index.md), a summary or (FORMAT=json) one JSON object printed. Reads results only:
starts nothing and takes no lock, so it runs beside a bench."""

from __future__ import annotations

import json
import math
import statistics
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.basics.messages import console, say
from harness.basics.paths import RESULTS
from harness.config.manifest import TWIN_SUFFIX, Server
from harness.history import adjustment, changes, edivisive, history_page
from harness.history.changes import Discovery
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
    since_prefix,
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


def gather(selection: Selection, folder_of: Callable[[str], Path | None]) -> Timeline:
    skipped: list[str] = []
    runs = read_runs(selection, skipped)
    series = build_series(runs, selection)
    found, discovery = changes.find_changes(series, folder_of)
    notes = [f"left out: {s}" for s in skipped] + _notes(series, discovery.tested)
    return Timeline([info.run_id for info, _ in runs], series, found, paired_points(runs, selection), notes, discovery)


def _notes(series: list[Series], tested: int) -> list[str]:
    """What a reader must know to read the page: too few runs for the test, how changes are kept over the page,
    series split by conditions or by a results schema that changed a figure's meaning, runs without the probe's
    rate."""
    notes = []
    least = changes.minimum_runs()
    short = [s for s in series if len(s.points) < least]
    if short:
        notes.append(
            f"{len(short)} of {len(series)} series have fewer than {least} runs, the fewest in which "
            f"E-divisive's permutation test (5 %) can find a change (both sides at least "
            f"{edivisive.MIN_SEGMENT} runs, and enough orderings for p to reach 5 %): they are drawn, and "
            "no change can be significant in them yet"
        )
    if tested:
        alone = changes.minimum_runs(changes.FALSE_DISCOVERY_RATE / tested)
        notes.append(
            f"over {tested} series tested, a change is kept only where its p is at most k × "
            f"{changes.FALSE_DISCOVERY_RATE * 100:g} % / {tested} (k: its rank among the series' p-values, "
            f"smallest first): a series that alone changed needs at least {alone} runs for p to get that low"
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
            f"{', '.join(no_rate)}; their figures are left out of the machine-speed-adjusted series"
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


def server_folder(servers: dict[str, Server], name: str) -> Path | None:
    """The folder of a server's code (an A/A twin's is its original's), for the commits that touched it."""
    server = servers.get(name) or servers.get(name.removesuffix(TWIN_SUFFIX))
    return server.folder if server else None


def cmd_history(runs: str, scenarios: str, since: str, only: list[str], output: str, servers: dict[str, Server]) -> int:
    """The command; `only`: the servers to show (any name a run recorded; none: all); `output`: text or json. 0, or
    2 when no run folder was found."""
    if since and since_prefix(since) is None:
        say(f"SINCE={since} is not understood: a date (2026-11-24, 20261124) or a run id's start (20261124-0726)")
        return 2
    selection = Selection((runs or DEFAULT_RUNS).split(), frozenset(only), frozenset(scenarios.split()), since)
    history = gather(selection, lambda name: server_folder(servers, name))
    if not history.runs:
        say(
            f"no run folder with a results.json under {' '.join(selection.patterns)} (RUNS=, relative to the "
            "repository's root)"
        )
        return 2
    written = history_page.write(
        history.runs,
        (history.series, history.changes, history.paired),
        history.notes + adjustment_lines(history.series),
        RESULTS / "history",
        history.discovery,
    )
    if output == "json":
        print(json.dumps(as_json(history), ensure_ascii=False))
        return 0
    say(
        f"{len(history.runs)} runs, {len(history.series)} series, {len(history.changes)} changes "
        f"({history.discovery.sentence()}), {len(history.paired)} paired answers"
    )
    for c in history.changes[:30]:
        say(
            f"  {c.at} {c.server} {c.scenario} {c.run} {c.metric}: {c.before:,.4g} → {c.after:,.4g} "
            f"({c.change_percent:+.1f} %, confidence {c.confidence:.1%}), {c.cause}"
            + (f"; commits: {'; '.join(c.commits)}" if c.commits else "")
        )
    for line in history.notes + adjustment_lines(history.series):
        console.print(f"  note: {line}", markup=False, soft_wrap=True)  # one line each, a bad file's too
    for path in written:
        say(f"wrote {path}")
    return 0
