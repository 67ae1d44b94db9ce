"""PNG charts (matplotlib, Agg backend: no display needed): req/s bars per (scenario, run) with the nginx ceiling,
latency percentiles, the server's CPU per request per scenario, req/s and p99 against concurrency for a matrix
scenario (weather), and each scenario's percentile spectrum (every record's whole latency distribution)."""

from __future__ import annotations

import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.axes import Axes  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter  # noqa: E402

from harness.basics.distribution import Distribution  # noqa: E402
from harness.basics.formats import fmt_ms, fmt_rate, fmt_us  # noqa: E402
from harness.report.cells import cost, flag_names, latency, summary
from harness.report.model import CEILING_COLOR, Group, Model, ScenarioView, slug  # noqa: E402
from harness.results import flags as flag_rules  # noqa: E402
from harness.results import ranking  # noqa: E402
from harness.results.records import Record  # noqa: E402

DPI = 110
FLAGGED_ALPHA = 0.35
PERCENTILES = (("p50", 0.45), ("p90", 0.7), ("p99", 1.0))  # key, opacity

plt.rcParams.update(
    {
        "font.size": 9,
        "axes.titlesize": 11,
        "axes.titleweight": "bold",
        "axes.spines.top": False,
        "axes.spines.right": False,
        "axes.grid": True,
        "grid.alpha": 0.3,
        "axes.axisbelow": True,
        "figure.facecolor": "white",
        "savefig.facecolor": "white",
    }
)

RATE_AXIS = FuncFormatter(lambda v, _: fmt_rate(v) if v else "0")


def save(fig, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=DPI, bbox_inches="tight", metadata={"Software": None})
    plt.close(fig)
    return path


def _log_ms_axis(ax) -> None:
    """A log-scale milliseconds axis labelled 1, 2, 5, 10, 20, 50... in plain numbers (no 2×10¹)."""
    ax.set_yscale("log")
    ax.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: fmt_ms(v)))
    ax.yaxis.set_minor_formatter(NullFormatter())


def _short_flags(r: Record) -> str:
    return ", ".join(flag_names(r))


def rps_bars(model: Model, group: Group, path: Path) -> Path | None:
    """Median req/s per server (whiskers: the median's confidence interval), ranks (ranges of places, "1–5") above the
    names, in rank order;
    a lower bound (the load generator or the upstream was the limit) labelled "≥" with an open top; records kept out
    of the ranking faded and hatched, their flags under their names (red); nginx drawn as a horizontal ceiling line."""
    rows = [s.record for s in group.ranked] + group.flagged
    if not rows and not group.ceiling:
        return None
    fig, ax = plt.subplots(figsize=(max(4.8, 1.0 + 0.8 * len(rows)), 3.6))
    xs = list(range(len(rows)))
    top = 0.0
    for x, r in zip(xs, rows):
        s = summary(r).rps
        value = r.rps or 0.0
        clean = r.ranked
        ax.bar(
            x,
            value,
            width=0.65,
            color=model.colors.get(r.server),
            alpha=1.0 if clean else FLAGGED_ALPHA,
            hatch=None if clean else "//",
            edgecolor=model.colors.get(r.server),
            linewidth=0.8,
        )
        label_at = value
        if s and s["n"] >= 2 and s.get("ci"):
            low, high = s["ci"]["low"], s["ci"]["high"]
            ax.errorbar(
                x,
                value,
                yerr=[[max(value - low, 0)], [max(high - value, 0)]],
                fmt="none",
                ecolor="#222",
                capsize=3,
                lw=1,
            )
            top = max(top, high)
            label_at = max(value, high)  # above the whisker, not through it
        top = max(top, value)
        bound = ranking.is_lower_bound(r)
        if bound and s and s.get("ci"):
            ax.annotate(
                "", (x, label_at * 1.06), (x, label_at), arrowprops={"arrowstyle": "->", "color": "#222", "lw": 1}
            )
            label_at *= 1.06
        label = (
            ("≥ " + fmt_rate(s["ci"]["low"]) if bound and s and s.get("ci") else fmt_rate(value))
            if r.rps is not None
            else "failed"
        )
        ax.annotate(
            label,
            (x, label_at),
            textcoords="offset points",
            xytext=(0, 3),
            ha="center",
            va="bottom",
            fontsize=8,
            fontweight="bold" if clean else "normal",
        )
    ceiling = group.ceiling.rps if group.ceiling else None
    if group.ceiling and ceiling:
        flagged = "" if group.ceiling.ranked else f" (⚑ {_short_flags(group.ceiling)})"
        ax.axhline(ceiling, color=CEILING_COLOR, ls="--", lw=1.3)
        ax.annotate(
            f"{group.ceiling.server} ceiling {fmt_rate(ceiling)} req/s{flagged}",
            (0, ceiling),
            xycoords=("axes fraction", "data"),
            textcoords="offset points",
            xytext=(3, 3),
            fontsize=8,
            color=CEILING_COLOR,
            va="bottom",
            bbox={"facecolor": "white", "edgecolor": "none", "alpha": 0.85, "pad": 1},
        )
        top = max(top, ceiling)
    ax.set_xticks(
        xs,
        [
            (f"{group.rank_label(r)}\n" if r.ranked else "")
            + r.server  # the rank: a range of places
            + (("\n⚑ " if not r.ranked else "\n") + _short_flags(r).replace(", ", "\n") if r.flags else "")
            for r in rows
        ],
    )
    for tick, r in zip(ax.get_xticklabels(), rows):
        if not r.ranked:
            tick.set_color("#a30000")
    pad = max(0, 3 - len(rows)) / 2  # one or two bars keep a bar's width, centred
    ax.set_xlim(-0.6 - pad, len(rows) - 0.4 + pad)
    ax.set_ylim(0, top * 1.18 if top else 1)
    ax.yaxis.set_major_formatter(RATE_AXIS)
    ax.set_ylabel("req/s (median; whiskers: interval)")
    ax.set_title(f"{group.scenario} · {group.run}: requests per second")
    return save(fig, path)


def latency_bars(model: Model, group: Group, path: Path) -> Path | None:
    """p50, p90, p99 per server on a log scale (the tool's median attempt); nginx included as the reference."""
    rows = ([group.ceiling] if group.ceiling else []) + [s.record for s in group.ranked] + group.flagged
    rows = [r for r in rows if any(latency(r, k) for k, _ in PERCENTILES)]
    if not rows:
        return None
    fig, ax = plt.subplots(figsize=(max(4.8, 1.0 + 0.9 * len(rows)), 3.6))
    width = 0.8 / len(PERCENTILES)
    for i, (key, alpha) in enumerate(PERCENTILES):
        for x, r in enumerate(rows):
            value = latency(r, key)
            if not value:
                continue
            clean = r.ranked
            ax.bar(
                x + (i - 1) * width,
                value,
                width=width * 0.95,
                color=model.colors.get(r.server),
                alpha=alpha * (1.0 if clean else 0.5),
                hatch=None if clean else "//",
                edgecolor="white",
                lw=0.3,
            )
            if key == "p99":
                ax.annotate(
                    fmt_ms(value),
                    (x + (i - 1) * width, value),
                    textcoords="offset points",
                    xytext=(0, 2),
                    ha="center",
                    va="bottom",
                    fontsize=7,
                )
    _log_ms_axis(ax)
    drawn = [value for r in rows for k, _ in PERCENTILES if (value := latency(r, k))]
    ax.set_ylim(bottom=min(drawn) / 2.5)  # the smallest bar stays visible on the log scale
    ax.set_xticks(range(len(rows)), [r.server + (" ⚑" if not r.ranked else "") for r in rows])
    ax.set_ylabel("latency, ms (log scale)")
    ax.set_title(f"{group.scenario} · {group.run}: latency p50 / p90 / p99")
    pad = max(0, 3 - len(rows)) / 2
    ax.set_xlim(-0.6 - pad, len(rows) - 0.4 + pad)
    ax.legend(
        handles=[Patch(facecolor="#555", alpha=a, label=k) for k, a in PERCENTILES],
        loc="upper left",
        fontsize=7,
        frameon=False,
        ncols=3,
    )
    ax.set_ylim(top=ax.get_ylim()[1] * 2.5)
    return save(fig, path)


def cost_bars(model: Model, scenario: ScenarioView, path: Path) -> Path | None:
    """The server's CPU per request (µs, median; whiskers: its interval), one panel per run of the scenario, cheapest
    first; a lower bound's server (the load generator was the limit) marked "≥" beside its name, records kept out of
    the ranking faded."""
    panels = []
    for group in scenario.groups:
        rows = [
            r
            for r in ([group.ceiling] if group.ceiling else []) + [s.record for s in group.ranked] + group.flagged
            if cost(r)
        ]
        if rows:
            panels.append((group, sorted(rows, key=lambda r: (cost(r) or {})["median"])))
    if not panels:
        return None
    width = sum(max(2.4, 0.55 * len(rows) + 0.8) for _, rows in panels)
    fig, axes = plt.subplots(1, len(panels), figsize=(max(4.8, width), 3.6), squeeze=False)
    for ax, (group, rows) in zip(axes[0], panels):
        for x, r in enumerate(rows):
            s = cost(r) or {}  # each row has one
            clean = r.ranked
            ax.bar(
                x,
                s["median"],
                width=0.65,
                color=model.colors.get(r.server),
                alpha=1.0 if clean else FLAGGED_ALPHA,
                hatch=None if clean else "//",
                edgecolor=model.colors.get(r.server),
                linewidth=0.8,
            )
            ci = s.get("ci")
            if ci and s["n"] >= 2:
                ax.errorbar(
                    x,
                    s["median"],
                    yerr=[[max(s["median"] - ci["low"], 0)], [max(ci["high"] - s["median"], 0)]],
                    fmt="none",
                    ecolor="#222",
                    capsize=3,
                    lw=1,
                )
            ax.annotate(
                fmt_us(s["median"]),
                (x, ci["high"] if ci else s["median"]),
                textcoords="offset points",
                xytext=(0, 3),
                ha="center",
                va="bottom",
                fontsize=7,
            )
        ax.set_xticks(
            range(len(rows)),
            [("≥ " if ranking.is_lower_bound(r) else "") + r.server + (" ⚑" if not r.ranked else "") for r in rows],
            rotation=45,
            ha="right",
        )
        ax.set_title(group.run, fontsize=9)
        ax.set_ylim(0, max(((cost(r) or {})["ci"] or {}).get("high", (cost(r) or {})["median"]) for r in rows) * 1.2)
    axes[0][0].set_ylabel("server CPU µs per request")
    fig.suptitle(f"{scenario.name}: server CPU per request (lower is cheaper)", fontweight="bold", fontsize=11)
    return save(fig, path)


def _points(ax: Axes, xs: list[Any], ys: list[Any], flagged: list[bool], color: str | None) -> None:
    """A line's points: filled where clean, hollow where flagged."""
    ax.scatter(
        [x for x, f in zip(xs, flagged) if not f],
        [y for y, f in zip(ys, flagged) if not f],
        color=color,
        s=28,
        zorder=4,
    )
    ax.scatter(
        [x for x, f in zip(xs, flagged) if f],
        [y for y, f in zip(ys, flagged) if f],
        facecolor="white",
        edgecolor=color,
        s=34,
        lw=1.4,
        zorder=4,
    )


def _legend_beside(ax) -> None:
    """The lines' legend to the right of the plot, with what a hollow point means."""
    handles, names = ax.get_legend_handles_labels()
    handles.append(plt.Line2D([], [], marker="o", ls="", markerfacecolor="white", markeredgecolor="#555"))
    names.append("hollow point: flagged")
    ax.legend(handles, names, loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=8, frameon=False)


def _matrix(model: Model, scenario: ScenarioView, path: Path, metric: str) -> Path | None:
    labels = [g.run for g in scenario.groups]
    fig, ax = plt.subplots(figsize=(9.5, 4.2))
    drawn = False
    for server in scenario.servers:
        xs, ys, flagged = [], [], []
        for x, g in enumerate(scenario.groups):
            r = next((r for r in g.records if r.server == server), None)
            if r is None:
                continue
            value = r.rps if metric == "rps" else latency(r, "p99")
            if value is None:
                continue
            xs.append(x)
            ys.append(value)
            flagged.append(not r.ranked)
        if not xs:
            continue
        drawn = True
        color = model.colors.get(server)
        ceiling = model.is_ceiling(server)
        name = (
            f"{server} {scenario.groups[0].ceiling.path} (ceiling)"
            if ceiling and scenario.groups[0].ceiling
            else server
        )
        ax.plot(xs, ys, color=color, lw=2.2 if ceiling else 1.6, ls="--" if ceiling else "-", label=name, zorder=3)
        _points(ax, xs, ys, flagged, color)
        if metric == "rps":  # a band of the medians' confidence intervals
            lo: list[Any] = []  # a point without an interval: its median
            hi: list[Any] = []
            for x in xs:
                r = next(r for r in scenario.groups[x].records if r.server == server)
                ci = (summary(r).rps or {}).get("ci")
                lo.append(ci["low"] if ci else r.rps)
                hi.append(ci["high"] if ci else r.rps)
            ax.fill_between(xs, lo, hi, color=color, alpha=0.07 if ceiling else 0.15, lw=0)
    if not drawn:
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
        _log_ms_axis(ax)
        ax.set_ylabel("p99 latency, ms (log scale)")
        ax.set_title(f"{scenario.name}: p99 latency against concurrency")
    _legend_beside(ax)
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
        points = sorted(
            (flag_rules.offered_rps(r), latency(r, "p99"), r.ranked)
            for g in scenario.groups
            for r in g.records
            if r.server == server and latency(r, "p99") is not None
        )
        if not points:
            continue
        drawn = True
        color = model.colors.get(server)
        xs: list[Any] = [p[0] for p in points]
        ys: list[Any] = [p[1] for p in points]
        ax.plot(xs, ys, color=color, lw=1.6, label=server, zorder=3)
        _points(ax, xs, ys, [not p[2] for p in points], color)
    if not drawn:
        plt.close(fig)
        return None
    ax.axhline(model.slo_p99_ms, color="#c0392b", ls=":", lw=1.2, label=f"target p99 ≤ {model.slo_p99_ms:g} ms")
    _log_ms_axis(ax)
    ax.set_xlim(left=0)
    ax.xaxis.set_major_formatter(RATE_AXIS)
    ax.set_xlabel("offered req/s (steps: shares of each server's closed-loop maximum)")
    ax.set_ylabel("p99 latency, ms (log scale)")
    ax.set_title(f"{scenario.name}: p99 from each request's planned start against offered load")
    _legend_beside(ax)
    return save(fig, path)


SPECTRUM_TICKS = (0.0, 90.0, 99.0, 99.9, 99.99, 99.999)


def _spectrum_axis(ax) -> None:
    """HdrHistogram's plotter's x axis: 1 / (1 − percentile) on a log scale, labelled as percentiles."""
    ax.set_xscale("log")
    ticks = [1 / (1 - p / 100) for p in SPECTRUM_TICKS]
    ax.set_xticks(ticks, [f"{p:g} %" for p in SPECTRUM_TICKS])
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_xlim(left=1)


def _spectrum_panel(model: Model, group: Group, ax) -> bool:
    """One line per record of the group that has a histogram (all its attempts' requests together), the max at
    "1 in n requests"; False when none has one."""
    drawn = False
    for r in group.records:
        if not r.latency_histogram:
            continue
        whole = Distribution.decode(r.latency_histogram)
        points = [(p, ms) for p, ms in whole.spectrum() if p < 100]
        if not points:
            continue
        xs = [1 / (1 - p / 100) for p, _ in points] + [float(whole.count)]
        ys = [ms for _, ms in points] + [whole.max_ms()]
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
        _log_ms_axis(ax)
        ax.set_title(group.run, fontsize=9)
        ax.set_ylabel("latency, ms (log scale)")
    handles = {name: h for ax in axes.flat for h, name in zip(*ax.get_legend_handles_labels())}
    fig.legend(
        handles.values(), handles.keys(), loc="upper left", bbox_to_anchor=(1.0, 0.95), fontsize=8, frameon=False
    )
    fig.suptitle(f"{scenario.name}: latency by percentile (every request of every attempt)", fontweight="bold")
    fig.tight_layout()
    return save(fig, path)


def write(model: Model, folder: Path) -> dict[str, Path]:
    """Every chart of the run into folder; returns {chart id: path} (ids: '<group key>-rps', '<scenario>-rps-matrix'...).
    Drawn by as many processes as this process may use CPUs (a bench's 30 charts took 12 s in one)."""
    jobs = _jobs(model, folder)
    workers = min(len(jobs), len(os.sched_getaffinity(0)))
    if workers < 2:
        drawn = [draw(*args) for _, draw, args in jobs]
    else:
        global _PENDING
        _PENDING = jobs  # the forked workers inherit it: nothing but a job's index is sent to them
        try:
            with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork")) as pool:
                drawn = list(pool.map(_draw_pending, range(len(jobs))))
        finally:
            _PENDING = []
    return {key: path for (key, _, _), path in zip(jobs, drawn) if path}


_PENDING: list[tuple[str, Any, tuple]] = []


def _draw_pending(index: int) -> Path | None:
    _, draw, args = _PENDING[index]
    return draw(*args)


def _jobs(model: Model, folder: Path) -> list[tuple[str, Any, tuple]]:
    """(chart id, drawing function, its arguments) for every chart of the run, in the report's order."""
    jobs: list[tuple[str, Any, tuple]] = []
    for scenario in model.scenarios:
        if not scenario.is_stepped:
            jobs.append(
                (f"{scenario.name}-cost", cost_bars, (model, scenario, folder / f"{slug(scenario.name)}-cost.png"))
            )
        jobs.append(
            (
                f"{scenario.name}-spectrum",
                latency_spectrum,
                (model, scenario, folder / f"{slug(scenario.name)}-spectrum.png"),
            )
        )
        if scenario.is_stepped:
            jobs.append(
                (
                    f"{scenario.name}-latency-steps",
                    latency_steps,
                    (model, scenario, folder / f"{slug(scenario.name)}-latency-steps.png"),
                )
            )
            continue
        if scenario.is_matrix:
            for kind, draw in (("rps-matrix", rps_matrix), ("p99-matrix", p99_matrix)):
                key = f"{scenario.name}-{kind}"
                jobs.append((key, draw, (model, scenario, folder / f"{slug(scenario.name)}-{kind}.png")))
            continue
        for group in scenario.groups:
            for kind, draw_group in (("rps", rps_bars), ("latency", latency_bars)):
                key = f"{group.key}-{kind}"
                jobs.append((key, draw_group, (model, group, folder / f"{key}.png")))
    return jobs
