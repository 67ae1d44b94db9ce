"""summary.csv: one row per record (server, scenario, run) with its statistics, samples and flags. `rank` is the
report's rank (the range of places the intervals allow, "1–5", or one place, "2"; empty when not ranked), `rank_best` and
`rank_worst` its two ends as numbers; rps_ci_* the req/s median's confidence interval and its level;
`rps_lower_bound` yes where the load generator or the upstream was the limit; cost_us_* the server's CPU µs per request
(and `conn_cost_us_*` per connection, for one-request-per-connection loads) with its interval;
`run` the record's label (the run label, with runtime and round in an overhead run); `ordered_by` "paired rounds" where
its group compared it with others round by round (harness/judging/round_pairs.py), "intervals" for the other ranked,
each with " ÷ CPU speed" where it was compared with another on rates divided by their CPU's speed (CPU_METER=1)."""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Any

from harness.judging import flags as flag_rules
from harness.judging import ranking
from harness.report.cells import latency, peak_rss, summary
from harness.report.model import Model
from harness.results.records import Record

COLUMNS = [
    "scenario",
    "run",
    "server",
    "rank",
    "rank_best",
    "rank_worst",
    "ordered_by",
    "ranked",
    "flags",
    "flag_reasons",
    "tool",
    "path",
    "concurrency",
    "threads",
    "attempts",
    "rps_median",
    "rps_min",
    "rps_max",
    "rps_cv",
    "rps_ci_low",
    "rps_ci_high",
    "rps_ci_level",
    "rps_ci_method",
    "rps_lower_bound",
    "cost_us_median",
    "cost_us_ci_low",
    "cost_us_ci_high",
    "cost_us_ci_level",
    "conn_cost_us_median",
    "conn_cost_us_ci_low",
    "conn_cost_us_ci_high",
    "remeasured",
    "p50_ms",
    "p90_ms",
    "p99_ms",
    "max_ms",
    "p99_median_ms",
    "p99_min_ms",
    "p99_max_ms",
    "p99_cv",
    "requests",
    "good_requests",
    "errors",
    "error_rate",
    "server_cpu_util",
    "loadgen_cpu_util",
    "server_peak_rss_mb",
    "loadgen_peak_rss_mb",
    "attempt_rps",
    "warmup_runs",
    "warmup_steady",
    "failed",
    "offered_rps",
    "p99_9_ms",
    "capacity_rps",
    "capacity_slo_p99_ms",
]


def _num(value: Any, digits: int = 4) -> Any:
    if value is None:
        return ""
    return round(value, digits) if isinstance(value, float) else value


def _rate_fields(r: Record) -> dict[str, Any]:
    """req/s: the median, its attempts' range and spread, its interval, whether it is a lower bound."""
    rps = summary(r).rps or {}
    ci = rps.get("ci") or {}
    return {
        "rps_median": _num(rps.get("median", r.rps), 2),
        "rps_min": _num(rps.get("min"), 2),
        "rps_max": _num(rps.get("max"), 2),
        "rps_cv": _num(rps.get("cv")),
        "rps_ci_low": _num(ci.get("low"), 2),
        "rps_ci_high": _num(ci.get("high"), 2),
        "rps_ci_level": _num(ci.get("level"), 6),
        "rps_ci_method": ci.get("method", ""),
        "rps_lower_bound": "yes" if ranking.is_lower_bound(r) else "no",
    }


def _cost_fields(r: Record) -> dict[str, Any]:
    """The server's CPU µs per request and per connection, with their intervals."""
    cost, conn = summary(r).cost_us or {}, summary(r).cost_us_per_connection or {}
    cost_ci, conn_ci = cost.get("ci") or {}, conn.get("ci") or {}
    return {
        "cost_us_median": _num(cost.get("median"), 2),
        "cost_us_ci_low": _num(cost_ci.get("low"), 2),
        "cost_us_ci_high": _num(cost_ci.get("high"), 2),
        "cost_us_ci_level": _num(cost_ci.get("level"), 6),
        "conn_cost_us_median": _num(conn.get("median"), 2),
        "conn_cost_us_ci_low": _num(conn_ci.get("low"), 2),
        "conn_cost_us_ci_high": _num(conn_ci.get("high"), 2),
    }


def _latency_fields(r: Record) -> dict[str, Any]:
    p99 = summary(r).p99 or {}
    return {
        "p50_ms": _num(latency(r, "p50")),
        "p90_ms": _num(latency(r, "p90")),
        "p99_ms": _num(latency(r, "p99")),
        "max_ms": _num(latency(r, "max")),
        "p99_median_ms": _num(p99.get("median")),
        "p99_min_ms": _num(p99.get("min")),
        "p99_max_ms": _num(p99.get("max")),
        "p99_cv": _num(p99.get("cv")),
        "p99_9_ms": _num(latency(r, "p99.9")),
    }


def _load_fields(r: Record) -> dict[str, Any]:
    """What was sent and answered, and what each side used."""
    warmup = r.warmup
    return {
        "requests": r.requests,
        "good_requests": r.good_requests,
        "errors": r.errors.total,
        "error_rate": _num(flag_rules.error_rate(r), 6),
        "server_cpu_util": _num(flag_rules.utilization(r, "server"), 3),
        "loadgen_cpu_util": _num(flag_rules.utilization(r, "loadgen"), 3),
        "server_peak_rss_mb": _num(peak_rss(r, "server"), 1),
        "loadgen_peak_rss_mb": _num(peak_rss(r, "loadgen"), 1),
        "attempt_rps": ";".join("" if a.rps is None else f"{a.rps:.2f}" for a in r.attempts),
        "warmup_runs": len(warmup.runs) if warmup else "",
        "warmup_steady": ("yes" if warmup.steady else "no") if warmup else "",
        "failed": r.failed or "",
        "offered_rps": _num(flag_rules.offered_rps(r), 1),
    }


def row(r: Record, rank: str, capacity: dict[str, Any] | None = None, ordered_by: str = "") -> dict[str, Any]:
    """`capacity`: the server's capacity in a stepped scenario (harness.judging.capacity), repeated on each of its steps;
    `ordered_by`: the rule that placed it (empty where not ranked)."""
    out = {
        "scenario": r.scenario,
        "run": r.label,
        "server": r.server,
        "rank": rank,
        "rank_best": rank.split("–")[0] if rank[:1].isdigit() else "",
        "rank_worst": rank.split("–")[-1] if rank[:1].isdigit() else "",
        "ordered_by": ordered_by,
        "ranked": "yes" if r.ranked else "no",
        "flags": ";".join(flag_rules.names(r)),
        "flag_reasons": " | ".join(f"{f.name}: {f.reason}" for f in r.flags),
        "tool": r.tool or "",
        "path": r.path or "",
        "concurrency": _num(r.concurrency),
        "threads": r.threads or "",
        "attempts": len(r.attempts),
        "remeasured": (r.remeasured or {}).get("why", ""),
        "capacity_rps": _num(capacity["rps"], 1) if capacity else "",
        "capacity_slo_p99_ms": _num(capacity["slo_p99_ms"]) if capacity else "",
    }
    out |= _rate_fields(r) | _cost_fields(r) | _latency_fields(r) | _load_fields(r)
    return {column: out[column] for column in COLUMNS}  # the columns' order


def render(model: Model) -> str:
    out = io.StringIO()
    writer = csv.DictWriter(out, COLUMNS, lineterminator="\n")
    writer.writeheader()
    for scenario in model.scenarios:
        for group in scenario.groups:
            rules = {
                id(s.record): ("paired rounds" if s.paired else "intervals") + (" ÷ CPU speed" if s.by_speed else "")
                for s in group.ranked
            }
            for r in ([group.ceiling] if group.ceiling else []) + [s.record for s in group.ranked] + group.flagged:
                writer.writerow(
                    row(r, group.rank_label(r), model.capacity.get(r.server, {}).get(r.scenario), rules.get(id(r), ""))
                )
    return out.getvalue()


def write(model: Model, path: Path) -> Path:
    path.write_text(render(model))
    return path
