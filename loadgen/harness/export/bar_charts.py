"""The bar charts of the report (style: chart_style.py): each measurement's median req/s per server with its interval
and the nginx ceiling, its latency percentiles, and each scenario's server CPU per request."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
from matplotlib.axes import Axes
from matplotlib.patches import Patch

from harness.basics.formats import fmt_ms, fmt_rate, fmt_us
from harness.export.chart_style import FLAGGED_ALPHA, RATE_AXIS, log_ms_axis, save, short_flags
from harness.judging import ranking
from harness.report.cells import cost, latency, summary
from harness.report.model import CEILING_COLOR, Group, Model, ScenarioView
from harness.results.records import Record

PERCENTILES = (("p50", 0.45), ("p90", 0.7), ("p99", 1.0))  # key, opacity


def _bar(ax: Axes, model: Model, x: float, value: float, r: Record) -> None:
    """A record's bar: its server's colour, faded and hatched where kept out of the ranking."""
    ax.bar(
        x,
        value,
        width=0.65,
        color=model.colors.get(r.server),
        alpha=1.0 if r.ranked else FLAGGED_ALPHA,
        hatch=None if r.ranked else "//",
        edgecolor=model.colors.get(r.server),
        linewidth=0.8,
    )


def _whisker(ax: Axes, x: float, value: float, ci: dict[str, Any]) -> None:
    """The interval of a median drawn as a whisker through the bar's top."""
    yerr = [[max(value - ci["low"], 0)], [max(ci["high"] - value, 0)]]
    ax.errorbar(x, value, yerr=yerr, fmt="none", ecolor="#222", capsize=3, lw=1)


def _rate_bar(ax: Axes, model: Model, x: int, r: Record) -> float:
    """One record's req/s bar with its whisker and label ("≥" and an arrow for a lower bound); returns its top."""
    s = summary(r).rps
    value = r.rps or 0.0
    _bar(ax, model, x, value, r)
    ci = s.get("ci") if s else None
    label_at, top = value, value
    if s and s["n"] >= 2 and ci:
        _whisker(ax, x, value, ci)
        top = max(top, ci["high"])
        label_at = max(value, ci["high"])  # above the whisker, not through it
    bound = ranking.is_lower_bound(r) and bool(ci)
    if bound:
        ax.annotate("", (x, label_at * 1.06), (x, label_at), arrowprops={"arrowstyle": "->", "color": "#222", "lw": 1})
        label_at *= 1.06
    label = ("≥ " + fmt_rate(ci["low"]) if bound and ci else fmt_rate(value)) if r.rps is not None else "failed"
    ax.annotate(
        label,
        (x, label_at),
        textcoords="offset points",
        xytext=(0, 3),
        ha="center",
        va="bottom",
        fontsize=8,
        fontweight="bold" if r.ranked else "normal",
    )
    return top


def _ceiling_line(ax: Axes, group: Group) -> float:
    """nginx's req/s as a dashed line across the bars; returns it (0 without a ceiling)."""
    ceiling = group.ceiling.rps if group.ceiling else None
    if not group.ceiling or not ceiling:
        return 0.0
    flagged = "" if group.ceiling.ranked else f" (⚑ {short_flags(group.ceiling)})"
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
    return ceiling


def _rank_ticks(ax: Axes, group: Group, rows: list[Record]) -> None:
    """Under each bar: the rank (a range of places) above the server's name, a kept-out record's flags in red."""
    labels = [
        (f"{group.rank_label(r)}\n" if r.ranked else "")
        + r.server
        + (("\n⚑ " if not r.ranked else "\n") + short_flags(r).replace(", ", "\n") if r.flags else "")
        for r in rows
    ]
    ax.set_xticks(list(range(len(rows))), labels)
    for tick, r in zip(ax.get_xticklabels(), rows):
        if not r.ranked:
            tick.set_color("#a30000")


def rps_bars(model: Model, group: Group, path: Path) -> Path | None:
    """Median req/s per server (whiskers: the median's confidence interval), ranks (ranges of places, "1–5") above the
    names, in rank order; a lower bound (the load generator or the upstream was the limit) labelled "≥" with an open
    top; records kept out of the ranking faded and hatched, their flags under their names (red); nginx drawn as a
    horizontal ceiling line."""
    rows = [s.record for s in group.ranked] + group.flagged
    if not rows and not group.ceiling:
        return None
    fig, ax = plt.subplots(figsize=(max(4.8, 1.0 + 0.8 * len(rows)), 3.6))
    top = max([0.0] + [_rate_bar(ax, model, x, r) for x, r in enumerate(rows)])
    top = max(top, _ceiling_line(ax, group))
    _rank_ticks(ax, group, rows)
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
            ax.bar(
                x + (i - 1) * width,
                value,
                width=width * 0.95,
                color=model.colors.get(r.server),
                alpha=alpha * (1.0 if r.ranked else 0.5),
                hatch=None if r.ranked else "//",
                edgecolor="white",
                lw=0.3,
            )
            if key == "p99":
                at = (x + (i - 1) * width, value)
                ax.annotate(
                    fmt_ms(value), at, textcoords="offset points", xytext=(0, 2), ha="center", va="bottom", fontsize=7
                )
    log_ms_axis(ax)
    drawn = [value for r in rows for k, _ in PERCENTILES if (value := latency(r, k))]
    ax.set_ylim(bottom=min(drawn) / 2.5)  # the smallest bar stays visible on the log scale
    ax.set_xticks(range(len(rows)), [r.server + (" ⚑" if not r.ranked else "") for r in rows])
    ax.set_ylabel("latency, ms (log scale)")
    ax.set_title(f"{group.scenario} · {group.run}: latency p50 / p90 / p99")
    pad = max(0, 3 - len(rows)) / 2
    ax.set_xlim(-0.6 - pad, len(rows) - 0.4 + pad)
    handles = [Patch(facecolor="#555", alpha=a, label=k) for k, a in PERCENTILES]
    ax.legend(handles=handles, loc="upper left", fontsize=7, frameon=False, ncols=3)
    ax.set_ylim(top=ax.get_ylim()[1] * 2.5)
    return save(fig, path)


def _cost_panels(scenario: ScenarioView) -> list[tuple[Group, list[Record]]]:
    """(group, its records that have a CPU cost, cheapest first) for each run of the scenario that has one."""
    panels = []
    for group in scenario.groups:
        everyone = ([group.ceiling] if group.ceiling else []) + [s.record for s in group.ranked] + group.flagged
        rows = [r for r in everyone if cost(r)]
        if rows:
            panels.append((group, sorted(rows, key=lambda r: (cost(r) or {})["median"])))
    return panels


def _cost_panel(ax: Axes, model: Model, group: Group, rows: list[Record]) -> None:
    for x, r in enumerate(rows):
        s = cost(r) or {}  # each row has one
        _bar(ax, model, x, s["median"], r)
        ci = s.get("ci")
        if ci and s["n"] >= 2:
            _whisker(ax, x, s["median"], ci)
        at = (x, ci["high"] if ci else s["median"])
        ax.annotate(
            fmt_us(s["median"]), at, textcoords="offset points", xytext=(0, 3), ha="center", va="bottom", fontsize=7
        )
    ax.set_xticks(
        range(len(rows)),
        [("≥ " if ranking.is_lower_bound(r) else "") + r.server + (" ⚑" if not r.ranked else "") for r in rows],
        rotation=45,
        ha="right",
    )
    ax.set_title(group.run, fontsize=9)
    ax.set_ylim(0, max(((cost(r) or {})["ci"] or {}).get("high", (cost(r) or {})["median"]) for r in rows) * 1.2)


def cost_bars(model: Model, scenario: ScenarioView, path: Path) -> Path | None:
    """The server's CPU per request (µs, median; whiskers: its interval), one panel per run of the scenario, cheapest
    first; a lower bound's server (the load generator was the limit) marked "≥" beside its name, records kept out of
    the ranking faded."""
    panels = _cost_panels(scenario)
    if not panels:
        return None
    width = sum(max(2.4, 0.55 * len(rows) + 0.8) for _, rows in panels)
    fig, axes = plt.subplots(1, len(panels), figsize=(max(4.8, width), 3.6), squeeze=False)
    for ax, (group, rows) in zip(axes[0], panels):
        _cost_panel(ax, model, group, rows)
    axes[0][0].set_ylabel("server CPU µs per request")
    fig.suptitle(f"{scenario.name}: server CPU per request (lower is cheaper)", fontweight="bold", fontsize=11)
    return save(fig, path)
