"""The timeline's charts (matplotlib, Agg; loaded only when the page is drawn): per scenario, req/s, p99 and CPU µs per
request of every server across the runs (and req/s divided by the machine's speed where the runs have it), each
change point marked at its run and annotated; and the machine's own speed."""

from __future__ import annotations

import io
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.ticker import FuncFormatter, NullLocator  # noqa: E402

from harness.history.changes import SeriesChange  # noqa: E402
from harness.history.timeline import ADJUSTED, MACHINE, PairedPoint, Series  # noqa: E402
from harness.results.flag_kinds import LOADGEN_BOUND  # noqa: E402

DPI = 100
MAX_TICKS = 40
TITLES = {
    "rps": "req/s",
    "p99": "p99 (ms)",
    "cost_us": "CPU µs/req",
    "rps" + ADJUSTED: "req/s ÷ machine speed",
    "loops_per_s": "loops/s (pinned busy loop)",
}


def plain(text: str) -> str:
    """`text` as matplotlib draws it literally: a `$` would start its math notation (a name `$\\foo$` fails to parse)."""
    return text.replace("$", r"\$")


def _png(fig: Any) -> bytes:
    out = io.BytesIO()
    fig.subplots_adjust(left=0.07, right=0.74, bottom=0.12, top=0.95)  # the legend on the right (no second drawing)
    fig.savefig(out, format="png", dpi=DPI, metadata={"Software": None})
    plt.close(fig)
    return out.getvalue()


def _draw(ax: Any, series: list[Series], changes: list[SeriesChange], order: dict[str, int], metric: str) -> None:
    """Every series of `metric` as a line over the runs' positions, intervals as a band, changes marked: a
    server keeps its colour in every panel; a series under other conditions (runtime, CPU plan, machine) is dashed,
    never joined to the first."""
    servers = sorted({s.run if s.server == MACHINE else s.server for s in series})  # the probe: a colour per role
    conditions = sorted({s.conditions for s in series})
    palette = plt.get_cmap("tab20")
    for s in series:
        xs = [order[p.run.run_id] for p in s.points]
        other = conditions.index(s.conditions)
        color = palette(servers.index(s.run if s.server == MACHINE else s.server) % 20)
        ax.plot(
            xs,
            [p.value for p in s.points],
            marker="o",
            markersize=3,
            linewidth=1,
            color=color,
            linestyle="--" if other else "-",
            label=plain(
                (s.run if s.server == MACHINE else f"{s.server} {s.run}")
                + (f" (conditions {other + 1})" if other else "")
                + (f" (from {s.since[:13]})" if s.since else "")
            ),
        )
        nan = float("nan")
        lows = [p.low if p.low is not None else nan for p in s.points]
        highs = [p.high if p.high is not None else nan for p in s.points]
        if any(low == low for low in lows):  # the intervals as a band: error bars one by one are slow at 200 runs
            ax.fill_between(xs, lows, highs, color=color, alpha=0.15, linewidth=0)
    bounds = [(order[p.run.run_id], p.value) for s in series for p in s.points if LOADGEN_BOUND.name in p.flags]
    if bounds and metric.startswith("rps"):  # a loadgen-saturated req/s: the server's is at least that
        ax.scatter(*zip(*bounds), marker="^", s=40, facecolors="none", edgecolors="#111827", label="≥ lower bound")
    _mark_changes(ax, [c for c in changes if c.metric == metric and c.at in order], order)
    ax.set_yscale("log")
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.4g}"))  # plain numbers: no math text to parse
    ax.yaxis.set_minor_locator(NullLocator())  # no minor ticks: their objects took a third of the drawing at 200 runs
    ax.set_ylabel(TITLES.get(metric, metric))


def _mark_changes(ax: Any, changes: list[SeriesChange], order: dict[str, int]) -> None:
    """Each change a vertical line before the run it starts at, with a note: a server's own in red (an unexplained
    one in amber), with its commit range; those that came with the machine one dashed grey line and one note for
    every series that moved with it."""
    machine_days: dict[str, list[SeriesChange]] = {}
    for c in changes:
        x = order[c.at] - 0.5
        if c.kind == "common":  # one mark and one note for every group that changed with the machine
            machine_days.setdefault(c.at, []).append(c)
            continue
        what = c.commits[0] if c.commits else (c.conditions_changed[0] if c.conditions_changed else "")
        note = f"{c.server} {c.run} own {c.change_percent:+.0f} % ({c.cause}; {'..'.join(c.commit_range)}"
        style = ("#b91c1c", ":", "#7f1d1d") if c.cause == "server" else ("#b45309", ":", "#78350f")
        _mark(ax, x, plain(note + f"{'; ' + what[:50] if what else ''})"), style)
    for at, shared in machine_days.items():
        x, sizes = order[at] - 0.5, [c.change_percent for c in shared]
        what = next((c.conditions_changed[0] for c in shared if c.conditions_changed), "")
        note = f"{shared[0].cause}: {len(shared)} group(s) {min(sizes):+.0f}…{max(sizes):+.0f} %"
        _mark(ax, x, plain(note + f"{'; ' + what[:50] if what else ''}"), ("#374151", "--", "#374151"))


def _mark(ax: Any, x: float, note: str, style: tuple[str, str, str]) -> None:
    """A vertical line at `x` with `note` written up along it; `style`: the line's colour and dashes, the note's colour."""
    line_color, dashes, text_color = style
    ax.axvline(x, color=line_color, linestyle=dashes, linewidth=1)
    ax.annotate(
        note,
        (x, 0.02),
        xycoords=("data", "axes fraction"),
        fontsize=7,
        rotation=90,
        va="bottom",
        ha="right",
        color=text_color,
    )


def scenario_chart(scenario: str, series: list[Series], changes: list[SeriesChange], order: dict[str, int]) -> bytes:
    """One scenario: a panel per metric present, the runs along the bottom."""
    metrics = [m for m in TITLES if any(s.metric == m for s in series)]
    fig, axes = plt.subplots(len(metrics), 1, figsize=(13, 2.8 * len(metrics)), sharex=True, squeeze=False)
    for ax, metric in zip(axes[:, 0], metrics):
        _draw(
            ax, [s for s in series if s.metric == metric], [c for c in changes if c.scenario == scenario], order, metric
        )
    last = axes[-1, 0]
    step = max(1, len(order) // MAX_TICKS)  # at most MAX_TICKS run ids along the bottom
    shown = list(order)[::step]
    last.set_xticks([order[r] for r in shown], [plain(r[:13]) for r in shown], rotation=45, ha="right", fontsize=7)
    axes[0, 0].set_title(plain(scenario))
    axes[0, 0].legend(fontsize=7, ncol=4, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return _png(fig)


def paired_chart(paired: list[PairedPoint], order: dict[str, int]) -> bytes:
    """The `make versus` answers on the same time axis: head ÷ base with its interval per scenario run, a panel per
    metric, the line of no change at 1."""
    metrics = [m for m in ("rps", "p99", "cost_us") if any(p.metric == m for p in paired)]
    fig, axes = plt.subplots(len(metrics), 1, figsize=(13, 2.4 * len(metrics)), sharex=True, squeeze=False)
    for ax, metric in zip(axes[:, 0], metrics):
        shown = [p for p in paired if p.metric == metric]
        labels = sorted({f"{p.server} {p.scenario} {p.label}" for p in shown})
        for k, label in enumerate(labels):
            mine = [p for p in shown if f"{p.server} {p.scenario} {p.label}" == label]
            ax.errorbar(
                [order[p.run.run_id] for p in mine],
                [p.ratio for p in mine],
                yerr=[[p.ratio - p.low for p in mine], [p.high - p.ratio for p in mine]],
                fmt="o",
                capsize=3,
                color=plt.get_cmap("tab10")(k % 10),
                label=plain(label),
            )
        ax.axhline(1.0, color="#6b7280", linewidth=1)
        ax.set_yscale("log")
        ax.set_ylabel(f"head ÷ base, {TITLES.get(metric, metric)}")
    axes[-1, 0].set_xticks(list(order.values()), [plain(r[:13]) for r in order], rotation=45, ha="right", fontsize=7)
    axes[0, 0].set_title("make versus: head ÷ base (95 % interval)")
    axes[0, 0].legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return _png(fig)
