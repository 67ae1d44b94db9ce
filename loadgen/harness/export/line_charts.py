"""The line charts of the report (style: chart_style.py): req/s and p99 against concurrency for a matrix scenario
(weather), p99 against the offered rate for an open-model scenario, and each scenario's percentile spectrum (every
record's whole latency distribution)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
from matplotlib.axes import Axes
from matplotlib.ticker import NullFormatter

from harness.basics.distribution import Distribution
from harness.export.chart_style import FLAGGED_ALPHA, RATE_AXIS, legend_beside, log_ms_axis, points, save
from harness.judging import flags as flag_rules
from harness.report.cells import latency, summary
from harness.report.model import Group, Model, ScenarioView


def _server_line(model: Model, scenario: ScenarioView, server: str, metric: str, ax: Axes) -> bool:
    """One server's line across the scenario's runs (req/s with its intervals' band, or p99); False when it has no
    point."""
    xs: list[Any] = []
    ys: list[Any] = []
    flagged: list[bool] = []
    for x, g in enumerate(scenario.groups):
        r = next((r for r in g.records if r.server == server), None)
        value = None if r is None else (r.rps if metric == "rps" else latency(r, "p99"))
        if r is None or value is None:
            continue
        xs.append(x)
        ys.append(value)
        flagged.append(not r.ranked)
    if not xs:
        return False
    color = model.colors.get(server)
    ceiling = model.is_ceiling(server)
    first = scenario.groups[0].ceiling
    name = f"{server} {first.path} (ceiling)" if ceiling and first else server
    ax.plot(xs, ys, color=color, lw=2.2 if ceiling else 1.6, ls="--" if ceiling else "-", label=name, zorder=3)
    points(ax, xs, ys, flagged, color)
    if metric == "rps":  # a band of the medians' confidence intervals; a point without an interval: its median
        lo: list[Any] = []
        hi: list[Any] = []
        for x in xs:
            r = next(r for r in scenario.groups[x].records if r.server == server)
            ci = (summary(r).rps or {}).get("ci")
            lo.append(ci["low"] if ci else r.rps)
            hi.append(ci["high"] if ci else r.rps)
        ax.fill_between(xs, lo, hi, color=color, alpha=0.07 if ceiling else 0.15, lw=0)
    return True


def _matrix(model: Model, scenario: ScenarioView, path: Path, metric: str) -> Path | None:
    labels = [g.run for g in scenario.groups]
    fig, ax = plt.subplots(figsize=(9.5, 4.2))
    drawn = [_server_line(model, scenario, server, metric, ax) for server in scenario.servers]
    if not any(drawn):
        plt.close(fig)
        return None
    ax.set_xticks(range(len(labels)), labels)
    ax.set_xlabel("load (connections c, wrk threads t)")
    if metric == "rps":
        ax.set_ylim(bottom=0)
        ax.yaxis.set_major_formatter(RATE_AXIS)
        ax.set_ylabel("req/s (median; band: interval)")
        ax.set_title(f"{scenario.name}: requests per second against concurrency")
    else:
        log_ms_axis(ax)
        ax.set_ylabel("p99 latency, ms (log scale)")
        ax.set_title(f"{scenario.name}: p99 latency against concurrency")
    legend_beside(ax)
    return save(fig, path)


def rps_matrix(model: Model, scenario: ScenarioView, path: Path) -> Path | None:
    return _matrix(model, scenario, path, "rps")


def p99_matrix(model: Model, scenario: ScenarioView, path: Path) -> Path | None:
    return _matrix(model, scenario, path, "p99")


def latency_steps(model: Model, scenario: ScenarioView, path: Path) -> Path | None:
    """p99 (from each request's planned start) against the offered rate, one line per server; the target's line."""
    fig, ax = plt.subplots(figsize=(9.5, 4.2))
    drawn = False
    for server in scenario.servers:
        found = sorted(
            (flag_rules.offered_rps(r), latency(r, "p99"), r.ranked)
            for g in scenario.groups
            for r in g.records
            if r.server == server and latency(r, "p99") is not None
        )
        if not found:
            continue
        drawn = True
        color = model.colors.get(server)
        xs: list[Any] = [p[0] for p in found]
        ys: list[Any] = [p[1] for p in found]
        ax.plot(xs, ys, color=color, lw=1.6, label=server, zorder=3)
        points(ax, xs, ys, [not p[2] for p in found], color)
    if not drawn:
        plt.close(fig)
        return None
    ax.axhline(model.slo_p99_ms, color="#c0392b", ls=":", lw=1.2, label=f"target p99 ≤ {model.slo_p99_ms:g} ms")
    log_ms_axis(ax)
    ax.set_xlim(left=0)
    ax.xaxis.set_major_formatter(RATE_AXIS)
    ax.set_xlabel("offered req/s (steps: shares of each server's closed-loop maximum)")
    ax.set_ylabel("p99 latency, ms (log scale)")
    ax.set_title(f"{scenario.name}: p99 from each request's planned start against offered load")
    legend_beside(ax)
    return save(fig, path)


SPECTRUM_TICKS = (0.0, 90.0, 99.0, 99.9, 99.99, 99.999)


def _spectrum_axis(ax: Axes) -> None:
    """HdrHistogram's plotter's x axis: 1 / (1 − percentile) on a log scale, labelled as percentiles."""
    ax.set_xscale("log")
    ticks = [1 / (1 - p / 100) for p in SPECTRUM_TICKS]
    ax.set_xticks(ticks, [f"{p:g} %" for p in SPECTRUM_TICKS])
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_xlim(left=1)


def _spectrum_panel(model: Model, group: Group, ax: Axes) -> bool:
    """One line per record of the group that has a histogram (all its attempts' requests together), the max at
    "1 in n requests"; False when none has one."""
    drawn = False
    for r in group.records:
        if not r.latency_histogram:
            continue
        whole = Distribution.decode(r.latency_histogram)
        found = [(p, ms) for p, ms in whole.spectrum() if p < 100]
        if not found:
            continue
        xs = [1 / (1 - p / 100) for p, _ in found] + [float(whole.count)]
        ys = [ms for _, ms in found] + [whole.max_ms()]
        ax.plot(
            xs,
            ys,
            color=model.colors.get(r.server),
            lw=1.4,
            alpha=1.0 if r.ranked else FLAGGED_ALPHA,
            ls="-" if r.ranked else "--",
            label=r.server,
            drawstyle="steps-post",
        )
        drawn = True
    return drawn


def latency_spectrum(model: Model, scenario: ScenarioView, path: Path) -> Path | None:
    """Each run of the scenario in a panel: every record's latency at every percentile, from its whole distribution
    (ab: 1 % slices, so flat above p99 at its max; wrk: its quantile levels; h2load: every request). Dashed: kept out
    of the ranking."""
    groups = [g for g in scenario.groups if any(r.latency_histogram for r in g.records)]
    if not groups:
        return None
    columns = min(3, len(groups))
    rows = -(-len(groups) // columns)
    fig, axes = plt.subplots(rows, columns, figsize=(4.6 * columns + 1.6, 3.4 * rows), squeeze=False)
    for ax in axes.flat[len(groups) :]:
        ax.set_visible(False)
    for ax, group in zip(axes.flat, groups):
        _spectrum_panel(model, group, ax)
        _spectrum_axis(ax)
        log_ms_axis(ax)
        ax.set_title(group.run, fontsize=9)
        ax.set_ylabel("latency, ms (log scale)")
    handles = {name: h for ax in axes.flat for h, name in zip(*ax.get_legend_handles_labels())}
    fig.legend(
        handles.values(), handles.keys(), loc="upper left", bbox_to_anchor=(1.0, 0.95), fontsize=8, frameon=False
    )
    fig.suptitle(f"{scenario.name}: latency by percentile (every request of every attempt)", fontweight="bold")
    fig.tight_layout()
    return save(fig, path)
