"""`make versus`'s charts (matplotlib, as charts.py): head ÷ base per scenario run with its intervals, and the
rounds' series of both builds."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
from matplotlib.ticker import FuncFormatter

from harness.export.chart_style import RATE_AXIS, save

VERSUS_METRICS = (("rps", "req/s", "#1f77b4"), ("p99", "p99", "#ff7f0e"), ("cost_us", "CPU µs/req", "#2ca02c"))


def versus_ratios(results: list[dict[str, Any]], resolution: float | None, path: Path) -> Path | None:
    """A sitting's head ÷ base per scenario run and metric, whiskers its interval, the band ±`resolution` around 1
    where the command set a goal (make versus; a duel's or a twin's has none)."""
    rows = [r for r in results if any(r["metrics"][m]["interval"] for m, _, _ in VERSUS_METRICS)]
    if not rows:
        return None
    fig, ax = plt.subplots(figsize=(7.5, 0.9 + 0.75 * len(rows)))
    if resolution:
        ax.axvspan(1 - resolution, 1 + resolution, color="#e8f0fe", zorder=0, label=f"±{resolution * 100:g} %")
    resolution = resolution or 0.0
    ax.axvline(1, color="#444", lw=1)
    for i, r in enumerate(rows):
        for j, (metric, title, color) in enumerate(VERSUS_METRICS):
            iv = r["metrics"][metric]["interval"]
            if not iv:
                continue
            y = i + (j - 1) * 0.22
            ax.errorbar(
                iv["ratio"],
                y,
                xerr=[[iv["ratio"] - iv["low"]], [iv["high"] - iv["ratio"]]],
                fmt="o",
                color=color,
                capsize=3,
                label=title if i == 0 else None,
            )
    ends = [
        e
        for r in rows
        for m, _, _ in VERSUS_METRICS
        if r["metrics"][m]["interval"]
        for e in (r["metrics"][m]["interval"]["low"], r["metrics"][m]["interval"]["high"])
    ]
    ax.set_xlim(max(min(ends + [1 - resolution]) / 1.05, 0.25), min(max(ends + [1 + resolution]) * 1.05, 4))  # 0.25–4×
    ax.set_yticks(range(len(rows)), [f"{r['scenario']} {r['run']}\n{r['rounds']} rounds" for r in rows])
    ax.invert_yaxis()
    ax.set_xscale("log")
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:.2f}×"))
    ax.xaxis.set_minor_formatter(FuncFormatter(lambda v, _: f"{v:.2f}×"))
    ax.set_xlabel("head ÷ base (95 % interval)")
    ax.set_title("head ÷ base")
    ax.legend(loc="best", fontsize=8)
    return save(fig, path)


def versus_rounds(result: dict[str, Any], names: tuple[str, str], path: Path) -> Path | None:
    """`make versus`: each round's req/s of both builds (top) and their ratio (bottom), in the order measured."""
    rps = result["metrics"]["rps"]
    if not rps["base"] or not rps["head"]:
        return None
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(7.5, 4.2), sharex=True, height_ratios=(2, 1))
    for role, name, color in (
        ("base", names[0], "#888"),
        ("head", names[1], "#1f77b4"),
    ):  # by round: a missed one leaves a gap
        rounds = rps.get(f"{role}_rounds") or range(1, len(rps[role]) + 1)  # older runs: by index
        top.plot(rounds, rps[role], marker="o", ms=3, lw=1, color=color, label=name)
    top.yaxis.set_major_formatter(RATE_AXIS)
    top.set_ylabel("req/s")
    top.legend(fontsize=8)
    top.set_title(f"{result['scenario']} {result['run']}: the rounds")
    bottom.axhline(1, color="#444", lw=1)
    bottom.plot(
        rps.get("ratio_rounds") or range(1, len(rps["ratios"]) + 1),
        rps["ratios"],
        marker="o",
        ms=3,
        lw=1,
        color="#d62728",
    )
    bottom.set_ylabel("head ÷ base")
    bottom.set_xlabel("round")
    return save(fig, path)
