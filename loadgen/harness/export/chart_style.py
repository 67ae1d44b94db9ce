"""What every chart of the report shares (charts.py draws them): matplotlib on its Agg backend (no display needed), the
house style, the saving of a figure, and the axes and marks several charts use (a log-scale milliseconds axis,
filled and hollow points, a legend beside the plot)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.axes import Axes  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter  # noqa: E402

from harness.basics.formats import fmt_ms, fmt_rate  # noqa: E402
from harness.report.cells import flag_names  # noqa: E402
from harness.results.records import Record  # noqa: E402

DPI = 110
FLAGGED_ALPHA = 0.35

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


def save(fig: Figure, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=DPI, bbox_inches="tight", metadata={"Software": None})
    plt.close(fig)
    return path


def log_ms_axis(ax: Axes) -> None:
    """A log-scale milliseconds axis labelled 1, 2, 5, 10, 20, 50... in plain numbers (no 2×10¹)."""
    ax.set_yscale("log")
    ax.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: fmt_ms(v)))
    ax.yaxis.set_minor_formatter(NullFormatter())


def short_flags(r: Record) -> str:
    return ", ".join(flag_names(r))


def points(ax: Axes, xs: list[Any], ys: list[Any], flagged: list[bool], color: str | None) -> None:
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


def legend_beside(ax: Axes) -> None:
    """The lines' legend to the right of the plot, with what a hollow point means."""
    handles, names = ax.get_legend_handles_labels()
    handles.append(Line2D([], [], marker="o", ls="", markerfacecolor="white", markeredgecolor="#555"))
    names.append("hollow point: flagged")
    ax.legend(handles, names, loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=8, frameon=False)
