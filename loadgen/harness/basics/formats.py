"""Numbers for people: req/s, µs, ms and a coverage level as the report prints them and the flags' reasons quote them
(the reasons are written in results/, below the report, so these live here rather than in report/)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def fmt_level(level: float | None) -> str:
    """A coverage for people: 75 %, 87.5 %, 96.9 %."""
    if level is None:
        return "-"
    return f"{level * 100:.1f}".rstrip("0").rstrip(".") + " %"


def fmt_rate(value: float | None) -> str:
    """A req/s figure for people: 12,345 / 123.4 / 0.52."""
    if value is None:
        return "-"
    if abs(value) >= 1000:
        return f"{value:,.0f}"
    if abs(value) >= 10:
        return f"{value:,.1f}".rstrip("0").rstrip(".")
    return f"{value:.2f}"


def fmt_us(value: float | None) -> str:
    """A CPU cost in microseconds for people: 24.5, 125, 20,556."""
    if value is None:
        return "-"
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:.1f}"


def fmt_ms(value: float | None) -> str:
    """A latency in milliseconds for people: 3 significant digits (0.421, 4.63, 12.3, 1,234)."""
    if value is None:
        return "-"
    if abs(value) >= 100:
        return f"{value:,.0f}"
    if abs(value) >= 10:
        return f"{value:.1f}"
    if abs(value) >= 1:
        return f"{value:.2f}"
    return f"{value:.3f}"


def fmt_figure(value: float | bool | None) -> str:
    """A known or measured figure of a calibration: 'n/a', 'yes'/'no' for a flag, three decimals under 100."""
    if value is None:
        return "n/a"
    if isinstance(value, bool):
        return "yes" if value else "no"
    return f"{value:,.3f}".rstrip("0").rstrip(".") if abs(value) < 100 else f"{value:,.0f}"


def interval_text(s: dict[str, Any] | None, fmt: Callable[[float | None], str] | None = None) -> str:
    """'35,266 – 40,867 (75 %)' for a harness.stats.intervals.describe result; '-' without an interval, the point with one
    attempt."""
    fmt = fmt or fmt_rate
    ci = (s or {}).get("ci")
    if not s or not ci:
        return "-"
    if ci["low"] == ci["high"] and s.get("n", 0) < 2:
        return f"{fmt(ci['low'])} (one attempt)"
    return f"{fmt(ci['low'])} – {fmt(ci['high'])} ({fmt_level(ci['level'])})"
