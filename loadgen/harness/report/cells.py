"""One record's figures as every table shows them: req/s with its interval, CPU per request, latencies, errors, CPU
and memory, flags; and the servers' own (artifact size, lines of code, start-up)."""

from __future__ import annotations

from typing import Any

from harness.basics.formats import fmt_level, fmt_rate, fmt_us, interval_text
from harness.judging import flags as flag_rules
from harness.judging import ranking
from harness.results.records import Record, Summary


def summary(r: Record) -> Summary:
    """The record's summary: set on every record by flags.evaluate before a report is built (an empty one else)."""
    return r.summary or Summary()


INTERVAL_NOTE = (
    "The interval beside a median is a distribution-free confidence interval of the median from order statistics: "
    "for n attempts, [x(k), x(n+1-k)] contains the true median with probability 1 − 2·BinomCDF(k−1; n, ½). The "
    "narrowest one reaching 95 % is used; with 5 attempts or fewer none does, and it is the attempts' min–max at the "
    "level it has (75 % with 3 attempts, 87.5 % with 4, 93.75 % with 5). The level shown is the one reached. Not a "
    "bootstrap: with 3–5 attempts a bootstrap of the median only ever draws the attempts themselves and labels their "
    "min–max 95 % where it covers 75 %."
)


def capacity_text(c: dict[str, Any]) -> str:
    """ "12,345 req/s", "≥ 12,345 req/s" (the load generator was the limit above it), or why there is none."""
    if not c["rps"]:
        return "none: " + str(c.get("why", ""))
    return ("≥ " if c["lower_bound"] else "") + f"{fmt_rate(c['rps'])} req/s"


def rps_interval(r: Record) -> str:
    """The req/s median's confidence interval with its level: '35,266 – 40,867 (75 %)'; a lower bound (the load
    generator or the upstream was the limit) as '≥ 35,266 (75 %)'."""
    ci = (summary(r).rps or {}).get("ci")
    if ranking.is_lower_bound(r) and ci:
        return f"≥ {fmt_rate(ci['low'])} ({fmt_level(ci['level'])})"
    return interval_text(summary(r).rps)


def figure(r: Record) -> float | None:
    """The req/s a table shows for the record: the median, or its interval's low end for a lower bound."""
    ci = (summary(r).rps or {}).get("ci")
    return float(ci["low"]) if ranking.is_lower_bound(r) and ci else r.rps


def rps_text(r: Record) -> str:
    """The median req/s, '≥ 21,492' (the interval's low end) for a lower bound."""
    ci = (summary(r).rps or {}).get("ci")
    return ("≥ " if ranking.is_lower_bound(r) and ci else "") + fmt_rate(figure(r))


def cost(r: Record, per_connection: bool = False) -> dict[str, Any] | None:
    return (summary(r).cost_us_per_connection if per_connection else summary(r).cost_us) if r.summary else None


def cost_text(r: Record) -> str:
    """The median server CPU per request in µs: '24.5'."""
    s = cost(r)
    return fmt_us(s["median"]) if s else "-"


def cost_interval_text(r: Record) -> str:
    """'24.4 – 24.7 (87.5 %)': the cost median's interval."""
    return interval_text(cost(r), fmt_us)


def cv_text(r: Record, metric: str = "rps") -> str:
    s = getattr(r.summary, metric)
    return "-" if not s or s.get("cv") is None else f"{s['cv']:.1%}"


def latency(r: Record, key: str) -> float | None:
    return r.latency_ms.get(key)


def errors_text(r: Record) -> str:
    total = r.errors.total
    if not total:
        return "0"
    rate = flag_rules.error_rate(r)
    return f"{total:,} ({rate:.1%})" if rate is not None else f"{total:,}"


def cpu(r: Record, role: str) -> float | None:
    """The same utilisation the loadgen-saturated flag judges by."""
    return flag_rules.utilization(r, role)


def cpu_text(r: Record, role: str) -> str:
    value = cpu(r, role)
    return "-" if value is None else f"{value * 100:.0f} %"


def peak_rss(r: Record, role: str = "server") -> float | None:
    sample = r.samples.get(role)
    return sample.peak_rss_mb if sample else None


def rss_text(r: Record, role: str = "server") -> str:
    value = peak_rss(r, role)
    return "-" if value is None else f"{value:,.0f} MB"


def attempts_text(r: Record) -> str:
    return " / ".join(fmt_rate(a.rps) if a.measured else "failed" for a in r.attempts)


def flag_names(r: Record) -> list[str]:
    return flag_rules.names(r)


def bytes_text(n: float | None) -> str:
    if n is None:
        return "-"
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:,.0f} {unit}" if unit == "B" else f"{n:,.1f} {unit}"
        n /= 1024
    return "-"


def loc_text(loc: dict[str, Any] | None) -> str:
    if not loc:
        return "-"
    if "program" in loc:
        return f"{loc['program']:,} + {loc['config']:,} build/config"
    return f"{loc.get('code', 0):,}"


def startup_text(s: float | None) -> str:
    return "-" if s is None else (f"{s * 1000:.0f} ms" if s < 1 else f"{s:.2f} s")


def memory_text(entry: dict[str, Any]) -> str:
    """A server's resident memory while idle: after its start and after the run ("54 / 80 MB")."""
    idle, after = entry.get("rss_idle_mb"), entry.get("rss_after_run_mb")
    if idle is None and after is None:
        return "-"
    return f"{'-' if idle is None else f'{idle:,.0f}'} / {'-' if after is None else f'{after:,.0f}'} MB"


def image_text(entry: dict[str, Any]) -> str:
    """Its Docker image's size, where it ran in one."""
    return bytes_text((entry.get("placement") or {}).get("image_bytes"))
