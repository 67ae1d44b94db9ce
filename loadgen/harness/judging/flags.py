"""Flags: why a record's number cannot be read as a clean measurement of the server. `evaluate(run)` sets, on every record of a harness.results.records.Run, its summary, its flags (`Flag(name, reason)`) and
`ranked`: whether it takes part in the ordering (harness.judging.ranking; what keeps a record out and what makes its
figure a lower bound is each flag's own declaration, harness.results.flag_kinds). Flags are a pure function of the
data, so the report can evaluate an older results.json again. What each flag means is written once, in flag_kinds;
each rule here is one function (`_failed`, `_contract`, …) writing the reason with the record's own figures."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from harness.basics import formats
from harness.config.manifest import UPSTREAM_PATH
from harness.judging import ranking, round_trend
from harness.results import flag_kinds as kinds
from harness.results import mix
from harness.results import summary as summaries
from harness.results.flag_kinds import (
    LOADGEN_SATURATED,
    RATE_HELD,
    SERVER_BUSY,
    SPREAD_MAX_CV,
    SPREAD_MAX_HALF_WIDTH,
    TREND_TOLERANCE,
    UPSTREAM_MARGIN,
)
from harness.results.records import Attempt, Flag, Record, Run, Summary, Verification
from harness.stats import intervals as stats
from harness.stats import trend
from harness.tools.load_plan import OWN, SINGLE, threading_of

if TYPE_CHECKING:  # annotations only: the store saves what these rules judge
    from harness.results.store import RunStore

SPREAD_METRICS = ("rps",)  # p99's CV is shown but not flagged: tail latency of a few seconds' run is noisy by nature

UPSTREAM_SCENARIO = "weather"
HARNESS = (
    "harness"  # the sample of this harness's own threads, on the load generator's cores (measuring/tool_processes.py)
)
BESIDE_LOADGEN = "beside_loadgen:"  # + a server's name: one that runs on them (the upstream with no core of its own)
TREND_FLAGS = {trend.WARMING: kinds.WARMING.name, trend.DRIFTING: kinds.DRIFTING.name}
HTTPERF_BEHIND = 0.03  # a connection rate this far under httperf's --rate: it could not keep its schedule


def error_rate(record: Record) -> float | None:
    """Failed requests over all attempted requests (good + failed)."""
    total = record.good_requests + record.errors.total
    return record.errors.total / total if total else None


def _errors(record: Record) -> Flag | None:
    errors = record.errors.to_dict()
    total = errors.pop("total")
    if not total:
        return None
    causes = ", ".join(f"{k} {v:,}" for k, v in errors.items() if v)
    attempted = record.good_requests + total
    return Flag(
        kinds.ERRORS.name,
        f"{total:,} of {attempted:,} requests failed ({error_rate(record):.2%})" + (f": {causes}" if causes else ""),
    )


def _pct(value: float) -> str:
    return f"{value * 100:.0f} %"


def utilization(record: Record, role: str) -> float | None:
    """The share of its CPUs `role` ("server" or "loadgen") used while the load ran: the median over the measured
    attempts of cpu_s / (the tool's own duration × cores). The tool's duration rather than the sampler's wall time,
    which also holds the tool's start and exit and the harness's polling and so dilutes a short run's figure (a 2 s
    wrk run at 98 % of its CPU samples as 88 %). For the load generator, the cores are those the tool can keep busy
    (`loadgen_busy`). Falls back to the record's sampled cpu_util."""
    values = []
    for attempt in record.attempts:
        sample = attempt.samples.get(role)
        if not attempt.measured or sample is None:
            continue
        if role == "loadgen":
            busy = httperf_held(record, attempt) if record.tool == "httperf" else None
            busy = loadgen_busy(record, attempt) if busy is None else busy
            if busy is not None:
                values.append(busy)
        elif sample.cpu_s is not None and sample.cores and attempt.duration_s:
            values.append(sample.cpu_s / (attempt.duration_s * sample.cores))
        elif sample.cpu_util is not None:
            values.append(sample.cpu_util)
    if values:
        return round(stats.median(values), 3)
    summary = record.samples.get(role)
    return summary.cpu_util if summary else None


def usable_cores(record: Record, attempt: Attempt, cores: int) -> float:
    """The load generator's cores the attempt's tool could keep busy: each process's threads or cores, whichever is
    fewer (tools/load_plan.py); for a record written before processes were kept (schema 3), from its tool and
    `tool_processes`: one core per process of a single-threaded tool, its threads for a multi-threaded one."""
    if attempt.processes:
        return min(cores, sum(p.get("capacity") or 0 for p in attempt.processes)) or cores
    threading = threading_of(record.tool)  # type: ignore[arg-type]  # None (a test's record) is a tool of its own
    processes = max(1, attempt.tool_processes)
    if threading == SINGLE:
        return min(cores, processes)
    if threading == OWN:
        return cores
    return min(cores, processes * (record.threads or 1))


def httperf_held(record: Record, attempt: Attempt) -> float | None:
    """httperf polls its core at 100 % whatever its rate, so its CPU cannot tell whether it set the pace; what it shows
    can (tools/httperf.py's `_pace`): 1 where it fell behind its schedule (a connection rate under the one asked where
    each connection makes one call; a connect burst of 2 alone is one late timer tick, not a lost schedule) or could
    not open connections; else, where each
    connection makes many calls, the share of each connection's cycle (connections ÷ req/s) that its reply time does
    not explain, the time httperf itself held the connection. None without those figures (older records, a split)."""
    pace = attempt.details.get("httperf") or {}
    if not pace or not attempt.rps or not record.concurrency:
        return None
    asked, achieved = record.load.get("rate"), pace.get("connection_rate")
    if pace.get("client_errors"):
        return 1.0
    if (pace.get("replies_per_connection") or 0) <= 1:
        return 1.0 if asked and achieved is not None and achieved < asked * (1 - HTTPERF_BEHIND) else 0.0
    reply_ms: float | None = pace.get("reply_ms")
    if reply_ms is None:
        return None
    return round(max(0.0, 1 - reply_ms / (record.concurrency * 1000 / attempt.rps)), 3)


def loadgen_busy(record: Record, attempt: Attempt) -> float | None:
    """How busy the load generator was in one attempt: the highest of each tool process's share of the cores it can
    use, the tool's share of all the cores it can use, and the share of every load-generator core taken by the tool
    together with what else ran there (the harness's own threads, the upstream nginx where it has no core of its
    own). Any of them at LOADGEN_SATURATED means the tool, not the server, set the pace."""
    sample = attempt.samples.get("loadgen")
    if sample is None:
        return None
    duration = attempt.duration_s
    if sample.cpu_s is None or not sample.cores or not duration:
        return sample.cpu_util
    # each part over its own time where it was split (a part started later or done sooner ran for less than the whole)
    values: list[float] = [
        p["cpu_s"] / ((p.get("duration_s") or duration) * p["capacity"])
        for p in attempt.processes
        if p.get("cpu_s") is not None and p.get("capacity")
    ]
    values.append(sample.cpu_s / (duration * usable_cores(record, attempt, sample.cores)))
    # what else ran there, each as the share of the load generator's cores it took over its own sampled time
    beside = sum(
        s.cpu_util or 0 for role, s in attempt.samples.items() if role == HARNESS or role.startswith(BESIDE_LOADGEN)
    )
    values.append(sample.cpu_s / (duration * sample.cores) + beside)
    return max(values)


def _saturated(record: Record) -> Flag | None:
    loadgen = utilization(record, "loadgen")
    server = utilization(record, "server")
    if loadgen is None or loadgen < LOADGEN_SATURATED:
        return None
    if server is not None and server >= SERVER_BUSY:
        return None
    if record.tool == "httperf" and any(httperf_held(record, a) is not None for a in record.attempts):
        return Flag(
            kinds.LOADGEN_BOUND.name,
            f"httperf set the pace ({_pct(loadgen)} of each connection's cycle was "
            "its own, or it fell behind its connection rate, or could not open connections): the number "
            "measures the tool, not the server",
        )
    cores = _cores(record, "loadgen")
    server_cores = _cores(record, "server")
    last = next((a for a in reversed(record.attempts) if a.measured), None)
    usable = usable_cores(record, last, cores) if last and cores else None
    processes = f"{last.tool_processes} {record.tool or 'tool'} process(es) on " if last else ""
    what = (
        f"load generator at {_pct(loadgen)} of the {f'{usable:g}' if usable else '?'} core(s) its tool could use "
        f"({processes}{cores or '?'} CPU(s)) while the server used "
        + (
            f"{_pct(server)} of its {server_cores or '?'}"
            if server is not None
            else "an unknown share of its CPUs (not sampled)"
        )
        + ": the number measures the tool, not the server"
    )
    return Flag(kinds.LOADGEN_BOUND.name, what)


def offered_rps(record: Record) -> float | None:
    """The rate an open-model step offered (oha -q), or None for a closed-loop record."""
    return record.details.get("offered_rps")


def _rate_not_held(record: Record) -> Flag | None:
    offered = offered_rps(record)
    if not offered or record.rps is None or record.rps >= RATE_HELD * offered:
        return None
    server, loadgen = utilization(record, "server"), utilization(record, "loadgen")
    if server is not None and server >= SERVER_BUSY and (loadgen is None or loadgen < LOADGEN_SATURATED):
        return None  # the server is the limit: that is what the step measures
    return Flag(
        kinds.RATE_NOT_HELD.name,
        f"{formats.fmt_rate(record.rps)} req/s achieved of {formats.fmt_rate(offered)} offered "
        f"({record.rps / offered:.1%}) while the server used "
        + (f"{_pct(server)} of its CPUs" if server is not None else "an unknown share of its CPUs")
        + (f" and the load generator {_pct(loadgen)} of its own" if loadgen is not None else ""),
    )


def _cores(record: Record, role: str) -> int | None:
    return next((a.samples[role].cores for a in record.attempts if role in a.samples and a.samples[role].cores), None)


def _upstream_rates(run: Run) -> dict[str, tuple[str, float]]:
    """Per run label, the upstream's own /weather.json req/s (and its name), from records that measured something
    without errors."""
    upstreams = run.with_role("upstream")
    return {
        r.label: (r.server, r.rps)
        for r in run.records
        if r.server in upstreams
        and r.scenario == UPSTREAM_SCENARIO
        and r.path == UPSTREAM_PATH
        and r.rps
        and not r.failed
        and not r.errors.total
    }


def _upstream(record: Record, upstream_rates: dict[str, tuple[str, float]]) -> Flag | None:
    if record.scenario != UPSTREAM_SCENARIO or record.path == UPSTREAM_PATH or record.label not in upstream_rates:
        return None
    upstream, ceiling = upstream_rates[record.label]
    rps = record.rps
    if record.server == upstream or not rps or rps < ceiling * (1 - UPSTREAM_MARGIN):
        return None
    return Flag(
        kinds.UPSTREAM_BOUND.name,
        f"{formats.fmt_rate(rps)} req/s is {rps / ceiling:.0%} of {upstream}'s own "
        f"{UPSTREAM_PATH} ({formats.fmt_rate(ceiling)} req/s at {record.label}): the upstream "
        "is the limit, not the server",
    )


def spread_reasons(s: dict[str, Any]) -> list[str]:
    """Why a `describe` result (two attempts or more) is truly unsteady: which rule fired, with its figures; [] if
    neither does. The rules: CV > SPREAD_MAX_CV; interval (high − low) > 2 × SPREAD_MAX_HALF_WIDTH × median."""
    out = []
    if s.get("cv") is not None and s["cv"] > SPREAD_MAX_CV:
        out.append(
            f"CV {s['cv']:.1%} between attempts, above {SPREAD_MAX_CV:.0%} "
            f"({formats.fmt_rate(s['min'])} to {formats.fmt_rate(s['max'])})"
        )
    ci, median = s.get("ci"), s.get("median")
    if ci and median and (ci["high"] - ci["low"]) > 2 * SPREAD_MAX_HALF_WIDTH * median:
        half = (ci["high"] - ci["low"]) / 2 / median
        out.append(
            f"interval {formats.fmt_rate(ci['low'])} – {formats.fmt_rate(ci['high'])} "
            f"({formats.fmt_level(ci['level'])}) is ±{half:.1%} of the median {formats.fmt_rate(median)}, "
            f"wider than ±{SPREAD_MAX_HALF_WIDTH:.0%}"
        )
    return out


def _spread(summary: Summary) -> Flag | None:
    for metric in SPREAD_METRICS:
        s = getattr(summary, metric)
        if not s:
            continue
        if s["n"] < 2:
            return Flag(kinds.SPREAD.name, "a single attempt: no spread measured (REPEAT=3 or more measures it)")
        reasons = spread_reasons(s)
        if reasons:
            label = "req/s" if metric == "rps" else metric
            return Flag(kinds.SPREAD.name, f"{label}: " + "; ".join(reasons))
    return None


def attempts_trend(attempts: list[Attempt], mates: Sequence[list[Attempt]] = ()) -> tuple[trend.Trend, int] | None:
    """The trend of the measured attempts' req/s in the order they were taken (three attempts or more), each divided by
    its round's shared effect where `mates` (the other servers' attempts of the same rounds) read it, and how many
    did (0: on its own rates): the rule of the warming and drifting flags, and of measuring a record again."""
    return round_trend.judged(attempts, list(mates), TREND_TOLERANCE)


def _trend(record: Record, mates: Sequence[list[Attempt]]) -> Flag | None:
    found = attempts_trend(record.attempts, mates)
    if not found or not found[0].moving:
        return None
    moved, count = found
    rates = " → ".join(formats.fmt_rate(a.rps) for a in record.attempts if a.measured)
    against = f" against the other {count} servers of its rounds" if count else ""
    return Flag(
        TREND_FLAGS[moved.kind],
        f"req/s {rates}: {moved.change:+.0%} over the attempts{against} (Theil–Sen trend), "
        f"direction agreement {moved.agreement:+.2f}",
    )


WARMUP_WINDOW = 3  # the runs a warm-up's end is judged on, where an older file does not say (scenarios.toml's window)


def _unsettled(record: Record) -> Flag | None:
    """A warm-up that ended without settling (at its cap of runs or seconds: a server that died is flagged failed)
    while its latest runs still climbed: `steady` false and their trend rising beyond its tolerance."""
    warmup = record.warmup
    if warmup is None or warmup.steady or warmup.after is not None:
        return None
    runs = warmup.runs[-(warmup.window or WARMUP_WINDOW) :]
    latest = [r.rps for r in runs if r.rps]
    tolerance = warmup.tolerance if warmup.tolerance is not None else TREND_TOLERANCE
    if len(latest) < 2 or len(latest) < len(runs):  # a failed run among them: judged as failed, not as climbing
        return None
    change = trend.relative_change(latest)
    if change <= tolerance:
        return None
    rates = " → ".join(formats.fmt_rate(r) for r in latest)
    return Flag(
        kinds.UNSETTLED.name,
        f"the warm-up stopped after {len(warmup.runs)} runs, not settled: its latest "
        f"{len(latest)} runs {rates} req/s, {change:+.0%} (more than {tolerance:.0%})",
    )


def _contract(record: Record, verification: dict[str, Verification] | None, outside: bool) -> Flag | None:
    if outside:
        return Flag(kinds.OUTSIDE.name, "started from its own folder and checked only to answer 200 with a body")
    if verification is None:
        return None  # a results file without a verification section: nothing to say
    result = verification.get(record.server)
    if result is None:
        return Flag(kinds.CONTRACT_FAILED.name, "no contract verification recorded for this server in this run")
    if result.ok:
        return None
    failures = result.failures
    first = f": {failures[0]}" if failures else ""
    more = f" (and {len(failures) - 1} more)" if len(failures) > 1 else ""
    checks = "?" if result.checks is None else result.checks
    return Flag(kinds.CONTRACT_FAILED.name, f"{len(failures)} of {checks} contract checks failed{first}{more}")


def _failed(record: Record) -> Flag | None:
    if record.failed:
        return Flag(kinds.FAILED.name, str(record.failed))
    if record.rps is None:
        return Flag(kinds.FAILED.name, "no attempt produced a measurement")
    return None


def flags_for(
    record: Record,
    upstream_rates: dict[str, tuple[str, float]],
    verification: dict[str, Verification] | None,
    mates: Sequence[list[Attempt]] = (),
    outside: bool = False,
) -> list[Flag]:
    """The record's flags in the reported order; `record.summary` must be set (evaluate sets it); `mates`: the attempts
    of the other servers of its rounds, which its trend is judged against."""
    found = [
        _failed(record),
        Flag(kinds.INCOMPLETE.name, record.incomplete) if record.incomplete else None,
        _contract(record, verification, outside),
        _errors(record),
        _saturated(record),
        _rate_not_held(record),
        _upstream(record, upstream_rates),
        _unsettled(record),
        mix.shares_flag(record.endpoints),
    ]
    # an open-model step's req/s is the rate it was offered, not the server's: its spread and trend say nothing; a
    # trend explains a spread, so a record that is warming or drifting is not also flagged spread
    if record.rps is not None and not offered_rps(record):
        found.append(_trend(record, mates) or _spread(record.summary))  # type: ignore[arg-type]  # evaluate() set it
    return [f for f in found if f]


def evaluate(run: Run) -> None:
    """Set every record's flags and ranked; its summary stays the one computed when it was made, completed only where an
    older harness wrote none or one without intervals (harness.results.summary.completed)."""
    upstream_rates = _upstream_rates(run)
    calibrated = run.with_role("calibrated")  # judged against known answers (make calibrate), never ranked
    mates = round_trend.mates_of(run.records)
    outside = {name for name, entry in run.servers.items() if entry.get("outside")}  # make twin's entry
    for record in run.records:
        record.summary = summaries.completed(record)
        mated = mates.get(id(record), [])
        record.flags = flags_for(record, upstream_rates, run.verification, mated, record.server in outside)
        record.ranked = ranking.takes_part(record) and record.server not in calibrated


def evaluate_and_save(store: RunStore) -> None:
    """Every record of `store`'s run (a RunStore) evaluated, and results.json saved with its flags: after each run of a
    scenario and at the run's end."""
    evaluate(store.run)
    store.save()


def names(record: Record) -> list[str]:
    return [f.name for f in record.flags]
