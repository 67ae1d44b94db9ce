"""The run's resolution on the report's first screen: what it could tell apart, read from its own records (the noise
of their interleaved rounds as the ranking's model reads it, harness.judging.noise, turned into the gap its ranking
tells apart 9 times in 10 by harness.judging.resolution), its median interval, the forecast taken before the run
(measuring/forecast.py) beside them; and, for each at-a-glance row whose first places are tied, the `make duel` that
would settle it and about how long it would take at the noise measured (a duel's start costs what this run's records
took: each side's start and warm-up, and a round of an attempt of each)."""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from typing import Any

from harness.config.manifest import TWIN_SUFFIX
from harness.judging import resolution
from harness.report.first_screen import Glance
from harness.report.model import Model
from harness.results.records import Record
from harness.stats.sitting_shape import ATTEMPT_OVERHEAD_S, START_S, Costs


@dataclass(frozen=True)
class Achieved:
    """What the run's records show: their noise, the gap its ranking tells apart, its records' median interval."""

    noise: resolution.Noise
    gap: float  # inf: no gap up to the grid's end
    median_half_width: float | None  # of the records' req/s 95 % intervals, a fraction of their medians


def achieved(model: Model) -> Achieved | None:
    """The run's resolution, or None where its groups hold too few servers or rounds to read its noise."""
    measured = resolution.measured_noise(model.records, model.ceilings)
    if measured is None:
        return None
    ranked = [r for r in model.records if r.ranked and not model.is_ceiling(r.server)]
    widths = [w for r in ranked if (w := _half_width(r)) is not None]
    return Achieved(measured, resolution.bench_gap(measured), statistics.median(widths) if widths else None)


def _half_width(record: Record) -> float | None:
    rps = getattr(record.summary, "rps", None) if record.summary else None
    ci = (rps or {}).get("ci") or {}
    median = (rps or {}).get("median")
    if not median or ci.get("low") is None or ci.get("high") is None:
        return None
    return float((ci["high"] - ci["low"]) / 2 / median)


def _gap_text(gap: float | None) -> str:
    return f"≥ {gap:.0%} apart" if gap is not None and math.isfinite(gap) else "none up to 2× apart"


def resolution_line(model: Model) -> str | None:
    """ "Resolution: told apart 9 times in 10 …, median interval …; forecast before the run …", or None."""
    got = achieved(model)
    forecast = (model.run.conditions.get("resolution") or {}).get("forecast")
    if got is None and not forecast:
        return None
    parts = []
    if got:
        width = f", its records' median interval ±{got.median_half_width:.1%}" if got.median_half_width else ""
        parts.append(
            f"this run tells apart servers {_gap_text(got.gap)} 9 times in 10 (an attempt's noise "
            f"±{math.hypot(got.noise.own, got.noise.shared):.1%}, {got.noise.attempts} attempts a record{width})"
        )
    if forecast:
        parts.append(f"forecast before it: {_gap_text(forecast.get('gap'))} ({forecast_noise(forecast)})")
    return "Resolution: " + "; ".join(parts) + ". Closer servers read tied: `make duel` settles a pair."


def forecast_noise(forecast: dict[str, Any]) -> str:
    """The forecast's noise and where it came from: the machine's on nginx, and the servers' own part where the
    latest benches gave one (measuring/forecast.py): as the report's resolution line and the bench's first line say it."""
    noise = f"±{math.hypot(forecast['own_sd'], forecast['shared_sd']):.1%}"
    machine, servers = forecast.get("machine"), forecast.get("servers")
    if not (machine and servers):
        return f"{noise} on {forecast['probe']}"
    return (
        f"{noise}: the machine's ±{math.hypot(machine['own_sd'], machine['shared_sd']):.1%} on {forecast['probe']}, "
        f"the servers' own ±{math.hypot(servers['own_sd'], servers['shared_sd']):.1%} from "
        f"{len(servers['from'])} earlier bench{'es' if len(servers['from']) != 1 else ''}"
    )


def duel_suggestions(model: Model, rows: list[Glance]) -> list[str]:
    """For each row whose first places are tied: the duel that settles its top two, and its time at this noise. None
    in a duel's or versus's own report (the run is that sitting), nor for a server and its A/A twin (tied is what
    two processes of one server should read)."""
    if model.run.conditions.get("versus"):
        return []
    got = achieved(model)
    out = []
    for row in rows:
        if len(row.leaders) < 2:
            continue
        a, b = sorted((leader.record for leader in row.leaders), key=lambda r: -(r.rps or 0))[:2]
        # an A/A twin is its server's second process: the duel names the server (each start is a fresh process anyway)
        faster, slower = a.server.removesuffix(TWIN_SUFFIX), b.server.removesuffix(TWIN_SUFFIX)
        if faster == slower:
            continue
        command = f"make duel A={slower} B={faster} SCENARIOS={row.scenario}"
        gap = (a.rps or 0) / (b.rps or 1) - 1 if b.rps else 0.0
        if got is None:
            out.append(f"{row.scenario} {row.run}: `{command}`")
            continue
        aim = max(gap / 2, 0.01)
        seconds = resolution.duel_seconds(got.noise, aim, _costs(model, a, b))
        when = f"about {seconds / 60:.0f} min" if seconds else "more than two hours"
        out.append(
            f"{row.scenario} {row.run}: `{command}` — {when} to reach ±{aim:.1%} (their medians are {gap:.1%} apart)"
        )
    return out


def _costs(model: Model, *records: Record) -> Costs:
    """A duel start's costs as this run's records took them: each side's start and the longest warm-up its server took
    in the run (a duel's every start is a fresh process, whose JIT climbs as in its server's first warm-up here, not as
    in a record measured after others had warmed it); a round's two attempts."""
    setup, rounds = 0.0, 0.0
    for r in records:
        started = (model.run.servers.get(r.server) or {}).get("startup_s") or START_S
        setup += started + max(_warmup_s(other) for other in model.run.records if other.server == r.server)
        lengths = [a.duration_s for a in r.attempts if a.measured and a.duration_s]
        rounds += (statistics.median(lengths) if lengths else 1.0) + ATTEMPT_OVERHEAD_S
    return Costs(setup, rounds)


def _warmup_s(record: Record) -> float:
    runs = record.warmup.runs if record.warmup else []
    return sum(run.duration_s or 0 for run in runs) + ATTEMPT_OVERHEAD_S * len(runs)
