"""Flags: why a record's number cannot be read as a clean measurement of the server.

`evaluate(data)` takes a whole results.json (v2 shape) and sets, on every record,
  record["flags"]  = [{"flag": name, "reason": text}, ...]
  record["ranked"] = not record["flags"]
A flagged record is shown as such everywhere and never ranked beside clean ones. Flags are a pure function of the
data (re-evaluating gives the same answer), so the report can evaluate an older results.json again.

The flags, in the order they are reported, each explained once, here (`EXPLANATIONS`, `legend()`): the report reads
its legend from this module.
  failed             an attempt produced no measurement
  contract-failed    the server failed (or was not given) the contract verification of this run
  errors             failed requests (connect, read, write, timeout, non-2xx, length, other), with the error rate
  loadgen-saturated  the load generator used ≥ LOADGEN_SATURATED of its CPUs while the server stayed below
                     SERVER_BUSY of its own: the figure measures the tool, not the server (see `utilization`)
  upstream-limit     a /weather/{city} figure within UPSTREAM_MARGIN of what nginx serves its own /weather.json at,
                     at the same load in the same run: the upstream is the limit, not the server
  spread             truly unsteady: the attempts' req/s coefficient of variation is above SPREAD_MAX_CV, or the
                     median's confidence interval (harness.stats.median_interval) is wider than ±SPREAD_MAX_HALF_WIDTH
                     of the median; or a single attempt (no spread measured). Ordinary noise is not flagged: it widens
                     the interval, and the ranking shows overlapping intervals as ties instead.
"""
from __future__ import annotations

import statistics

from harness import stats

LOADGEN_SATURATED = 0.90  # share of the load generator's CPUs (cpu_s / (duration * cores))
SERVER_BUSY = 0.90  # a server at least this busy explains a busy load generator: not flagged
UPSTREAM_MARGIN = 0.10  # weather within 10 % of (or above) nginx's own /weather.json figure
SPREAD_MAX_CV = 0.10  # req/s coefficient of variation over the attempts
SPREAD_MAX_HALF_WIDTH = 0.10  # the median's interval: (high − low) > 2 × this × median is flagged
SPREAD_METRICS = ("rps",)  # p99's CV is shown but not flagged: tail latency of a few seconds' run is noisy by nature

CEILING_SERVER = "nginx"
UPSTREAM_SCENARIO = "weather"
UPSTREAM_PATH = "/weather.json"

# Each flag's explanation, in the order flags are reported: the one place it is written (the report's legend reads it).
EXPLANATIONS = {
    "failed": "an attempt produced no measurement",
    "contract-failed": "the server failed (or was not given) this run's contract verification",
    "errors": "some requests failed (connect, read, write, timeout, non-2xx, length, other): the rate counts them",
    "loadgen-saturated": f"the load generator used ≥ {LOADGEN_SATURATED:.0%} of its CPUs while the server used less "
                         f"than {SERVER_BUSY:.0%} of its own: the number measures the tool, not the server",
    "upstream-limit": f"a weather figure within {UPSTREAM_MARGIN:.0%} of (or above) nginx's own {UPSTREAM_PATH} at the "
                      "same load in the same run: the upstream is the limit, not the server",
    "spread": f"truly unsteady: req/s varies more than {SPREAD_MAX_CV:.0%} between attempts (coefficient of "
              f"variation), or the median's confidence interval is wider than ±{SPREAD_MAX_HALF_WIDTH:.0%} of the median; "
              "or a single attempt was made, so nothing is known of its spread. Smaller noise is not flagged: it widens "
              "the interval, and servers whose intervals overlap are ranked as ties (=)",
}
FLAG_ORDER = tuple(EXPLANATIONS)


def legend() -> list[tuple[str, str]]:
    """(flag, explanation) in the order flags are reported."""
    return list(EXPLANATIONS.items())


def _flag(name: str, reason: str) -> dict:
    return {"flag": name, "reason": reason}


def error_rate(record: dict) -> float | None:
    """Failed requests over all attempted requests (good + failed)."""
    errors = (record.get("errors") or {}).get("total") or 0
    good = record.get("good_requests") or 0
    total = good + errors
    return errors / total if total else None


def _errors(record: dict) -> dict | None:
    errors = record.get("errors") or {}
    total = errors.get("total") or 0
    if not total:
        return None
    rate = error_rate(record)
    causes = ", ".join(f"{k} {v:,}" for k, v in errors.items() if k != "total" and v)
    attempted = (record.get("good_requests") or 0) + total
    return _flag("errors", f"{total:,} of {attempted:,} requests failed ({rate:.2%})" + (f": {causes}" if causes else ""))


def _pct(value: float) -> str:
    return f"{value * 100:.0f} %"


def utilization(record: dict, role: str) -> float | None:
    """The share of its CPUs `role` ("server" or "loadgen") used while the load ran: the median over the measured
    attempts of cpu_s / (the tool's own duration × cores). The tool's duration rather than the sampler's wall time,
    which also holds the tool's start and exit and the harness's polling and so dilutes a short run's figure (a 2 s
    wrk run at 98 % of its CPU samples as 88 %). Falls back to the record's sampled cpu_util."""
    values = []
    for attempt in stats.measured_attempts(record):
        sample = (attempt.get("samples") or {}).get(role) or {}
        cpu_s, cores, duration = sample.get("cpu_s"), sample.get("cores"), attempt.get("duration_s")
        if cpu_s is not None and cores and duration:
            values.append(cpu_s / (duration * cores))
        elif sample.get("cpu_util") is not None:
            values.append(sample["cpu_util"])
    if values:
        return round(statistics.median(values), 3)
    return ((record.get("samples") or {}).get(role) or {}).get("cpu_util")


def _saturated(record: dict) -> dict | None:
    loadgen = utilization(record, "loadgen")
    server = utilization(record, "server")
    if loadgen is None or loadgen < LOADGEN_SATURATED:
        return None
    if server is not None and server >= SERVER_BUSY:
        return None
    cores = _cores(record, "loadgen")
    server_cores = _cores(record, "server")
    what = (f"load generator at {_pct(loadgen)} of its {cores or '?'} CPU(s) while the server used "
            + (f"{_pct(server)} of its {server_cores or '?'}" if server is not None else "an unknown share of its CPUs (not sampled)")
            + ": the number measures the tool, not the server")
    return _flag("loadgen-saturated", what)


def _cores(record: dict, role: str) -> int | None:
    for attempt in record.get("attempts") or []:
        if not isinstance(attempt, dict):
            continue
        cores = ((attempt.get("samples") or {}).get(role) or {}).get("cores")
        if cores:
            return cores
    return None


def _ceilings(records: list[dict]) -> dict[str, float]:
    """nginx's own /weather.json req/s per run label, from records that measured something without errors."""
    out = {}
    for r in records:
        if (r.get("server") == CEILING_SERVER and r.get("scenario") == UPSTREAM_SCENARIO and r.get("path") == UPSTREAM_PATH
                and r.get("rps") and not r.get("failed") and not (r.get("errors") or {}).get("total")):
            out[r.get("run")] = r["rps"]
    return out


def _upstream(record: dict, ceilings: dict[str, float]) -> dict | None:
    if record.get("scenario") != UPSTREAM_SCENARIO or record.get("server") == CEILING_SERVER or record.get("path") == UPSTREAM_PATH:
        return None
    ceiling = ceilings.get(record.get("run"))
    rps = record.get("rps")
    if not ceiling or not rps or rps < ceiling * (1 - UPSTREAM_MARGIN):
        return None
    return _flag("upstream-limit", f"{stats.fmt_rate(rps)} req/s is {rps / ceiling:.0%} of nginx's own {UPSTREAM_PATH} "
                                   f"({stats.fmt_rate(ceiling)} req/s at {record.get('run')}): the upstream is the limit, "
                                   "not the server")


def spread_reasons(s: dict) -> list[str]:
    """Why a `describe` result (two attempts or more) is truly unsteady: which rule fired, with its figures; [] if
    neither does. The rules: CV > SPREAD_MAX_CV; interval (high − low) > 2 × SPREAD_MAX_HALF_WIDTH × median."""
    out = []
    if s.get("cv") is not None and s["cv"] > SPREAD_MAX_CV:
        out.append(f"CV {s['cv']:.1%} between attempts, above {SPREAD_MAX_CV:.0%} "
                   f"({stats.fmt_rate(s['min'])} to {stats.fmt_rate(s['max'])})")
    ci, median = s.get("ci"), s.get("median")
    if ci and median and (ci["high"] - ci["low"]) > 2 * SPREAD_MAX_HALF_WIDTH * median:
        half = (ci["high"] - ci["low"]) / 2 / median
        out.append(f"interval {stats.fmt_rate(ci['low'])} – {stats.fmt_rate(ci['high'])} "
                   f"({stats.fmt_level(ci['level'])}) is ±{half:.1%} of the median {stats.fmt_rate(median)}, "
                   f"wider than ±{SPREAD_MAX_HALF_WIDTH:.0%}")
    return out


def _spread(record: dict, summary: dict) -> dict | None:
    for metric in SPREAD_METRICS:
        s = summary.get(metric)
        if not s:
            continue
        if s["n"] < 2:
            return _flag("spread", "a single attempt: no spread measured (REPEAT=3 or more measures it)")
        reasons = spread_reasons(s)
        if reasons:
            label = "req/s" if metric == "rps" else metric
            return _flag("spread", f"{label}: " + "; ".join(reasons))
    return None


def _contract(record: dict, verification: dict) -> dict | None:
    if verification is None:
        return None  # a results file without a verification section: nothing to say
    result = verification.get(record.get("server"))
    if result is None:
        return _flag("contract-failed", "no contract verification recorded for this server in this run")
    if result.get("ok"):
        return None
    failures = result.get("failures") or []
    first = f": {failures[0]}" if failures else ""
    more = f" (and {len(failures) - 1} more)" if len(failures) > 1 else ""
    return _flag("contract-failed", f"{len(failures)} of {result.get('checks', '?')} contract checks failed{first}{more}")


def _failed(record: dict) -> dict | None:
    if record.get("failed"):
        return _flag("failed", str(record["failed"]))
    if record.get("rps") is None:
        return _flag("failed", "no attempt produced a measurement")
    return None


def flags_for(record: dict, ceilings: dict[str, float], verification: dict | None) -> list[dict]:
    summary = stats.summary_of(record)
    found = [
        _failed(record),
        _contract(record, verification),
        _errors(record),
        _saturated(record),
        _upstream(record, ceilings),
        None if record.get("rps") is None else _spread(record, summary),
    ]
    return [f for f in found if f]


def evaluate(data: dict) -> None:
    """Set record["flags"], record["ranked"] (and a missing record["summary"], or the intervals an older summary lacks)
    on every record of `data`."""
    records = data.get("records") or []
    ceilings = _ceilings(records)
    verification = data.get("verification")
    for record in records:
        record["summary"] = stats.summary_of(record)
        record["flags"] = flags_for(record, ceilings, verification)
        record["ranked"] = not record["flags"]


def names(record: dict) -> list[str]:
    return [f["flag"] for f in record.get("flags") or []]
