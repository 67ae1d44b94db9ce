"""The timeline's charts (matplotlib, Agg; loaded only when the page is drawn): per scenario, req/s, p99 and CPU µs per
request of every server across the runs (and req/s divided by the machine's speed where the runs have it), each
change point marked at its run and annotated; and the machine's own speed."""
from __future__ import annotations

import io
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from harness.history.changes import Change  # noqa: E402
from harness.history.timeline import ADJUSTED, MACHINE, Series  # noqa: E402

DPI = 100
TITLES = {"rps": "req/s", "p99": "p99 (ms)", "cost_us": "CPU µs/req", "rps" + ADJUSTED: "req/s ÷ machine speed",
          "loops_per_s": "loops/s (pinned busy loop)"}


def _png(fig: Any) -> bytes:
    out = io.BytesIO()
    fig.savefig(out, format="png", dpi=DPI, bbox_inches="tight", metadata={"Software": None})
    plt.close(fig)
    return out.getvalue()


def _draw(ax: Any, series: list[Series], changes: list[Change], order: dict[str, int], metric: str) -> None:
    """Every series of `metric` as a line over the runs' positions, intervals as error bars, changes marked."""
    for s in series:
        xs = [order[p.run.run_id] for p in s.points]
        ys = [p.value for p in s.points]
        low = [max(0.0, p.value - p.low) if p.low is not None else 0.0 for p in s.points]
        high = [max(0.0, p.high - p.value) if p.high is not None else 0.0 for p in s.points]
        label = s.server if s.server != MACHINE else s.run
        ax.errorbar(xs, ys, yerr=[low, high], marker="o", markersize=3, linewidth=1, capsize=2,
                    label=f"{label} {s.run}" if s.server != MACHINE else label)
    for c in changes:
        if c.metric == metric and c.at in order:
            x = order[c.at] - 0.5
            ax.axvline(x, color="#b91c1c" if c.cause == "server" else "#6b7280", linestyle=":", linewidth=1)
            ax.annotate(f"{c.server}{' ' + c.run if c.server != MACHINE else ''} {c.change_percent:+.0f} % "
                        f"({c.cause}; {'..'.join(c.commit_range)})", (x, c.after), fontsize=7, rotation=90,
                        va="bottom", ha="right", color="#7f1d1d" if c.cause == "server" else "#374151")
    ax.set_ylabel(TITLES.get(metric, metric))


def scenario_chart(scenario: str, series: list[Series], changes: list[Change], order: dict[str, int]) -> bytes:
    """One scenario: a panel per metric present, the runs along the bottom."""
    metrics = [m for m in TITLES if any(s.metric == m for s in series)]
    fig, axes = plt.subplots(len(metrics), 1, figsize=(10, 2.8 * len(metrics)), sharex=True, squeeze=False)
    for ax, metric in zip(axes[:, 0], metrics):
        _draw(ax, [s for s in series if s.metric == metric], [c for c in changes if c.scenario == scenario],
              order, metric)
    last = axes[-1, 0]
    last.set_xticks(list(order.values()), [run[:13] for run in order], rotation=45, ha="right", fontsize=7)
    axes[0, 0].set_title(scenario)
    axes[0, 0].legend(fontsize=7, ncol=4, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return _png(fig)
