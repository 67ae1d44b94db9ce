"""`make calibrate`: every load tool against the calibrated server (calibrated/, the server with the role "calibrated"),
each load's answers known in advance from the server's settings (harness/calibrate/known_answers.py), measured like any
run (a campaign: contract check, warm-up, attempts, CPU sampling, flags) and judged figure by figure: req/s, p50, p99,
p99.9, the server's CPU µs per request, and whether `loadgen-saturated` fired when, and only when, the tool was the
limit. The plan is data: loadgen/calibrate.toml. The run's results.json keeps the judgement under "calibration"; the
report shows it (harness/report/calibration_page.py)."""

from __future__ import annotations

import math
import statistics
import tomllib
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from harness.calibrate import allowance, server_seen
from harness.calibrate import known_answers as ka
from harness.config.scenarios import LoadRun, Scenario, ScenarioError, Settings, WarmupRule, parse_run
from harness.judging import flags
from harness.results import flag_kinds as kinds
from harness.results.records import Record, Run
from harness.tools import TOOLS

PLAN_FILE = Path(__file__).resolve().parents[2] / "calibrate.toml"
SCENARIO_PREFIX = "calibrate-"
SERVER_ROUTE = "hello"


@dataclass(frozen=True)
class CalibrationLoad:
    """One load of the plan: its tool, label, the server's settings and the load itself."""

    tool: str
    label: str
    server: ka.ServerSettings
    run: LoadRun

    @property
    def scenario(self) -> str:
        return f"{SCENARIO_PREFIX}{self.tool}-{self.label}"

    @property
    def open_loop(self) -> bool:
        """Sent on a schedule rather than when answers come back: Gatling always, oha when given a rate, httperf where
        each connection makes one call (its rate is one of new connections; with more calls each is a closed loop)."""
        load = self.run.load
        return (
            self.tool in ka.OPEN_LOOP_TOOLS
            or (self.tool == "oha" and bool(load.get("rate")))
            or (self.tool == "httperf" and load.get("calls_per_connection") == 1)
        )


@dataclass(frozen=True)
class Plan:
    loads: tuple[CalibrationLoad, ...]
    settings: Settings


def read_plan(path: Path | None = None, attempts: int | None = None) -> Plan:
    """The calibration plan from `path` (default: PLAN_FILE); a bad entry is one ScenarioError naming it."""
    path = path or PLAN_FILE
    try:
        data = tomllib.loads(path.read_text())
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ScenarioError(f"{path}: {exc}; fix it (git diff {path.name} shows what changed)") from None
    table = data.get("settings") or {}
    warmup = table.get("warmup") or {"duration_s": 1, "runs": 2}
    count = attempts or table.get("attempts", 1)
    if not isinstance(count, int) or isinstance(count, bool) or count < 1:
        raise ScenarioError(f"{path.name} [settings] attempts = {count!r}: give a positive integer")
    runs = max(2, int(warmup.get("runs", 2)))
    # the server has no JIT to warm: a fixed number of runs, whatever their trend (tolerance 100 %)
    settings = Settings(
        repeat=count,
        warmup=WarmupRule(
            duration_s=float(warmup.get("duration_s", 1)), tolerance=1.0, max_runs=runs, window=runs, max_s=60.0
        ),
        forced=True,
    )
    loads = []
    for index, raw in enumerate(data.get("load") or []):
        where = f"{path.name} [[load]] {index + 1}"
        if not isinstance(raw, dict) or raw.get("tool") not in TOOLS:
            raise ScenarioError(
                f"{where}: tool {raw.get('tool') if isinstance(raw, dict) else raw!r} is not one of {', '.join(TOOLS)}"
            )
        server = raw.get("server") or {}
        known_names = set(ka.ServerSettings.__dataclass_fields__)
        if (
            not isinstance(server, dict)
            or set(server) - known_names
            or not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in server.values())
        ):
            raise ScenarioError(
                f"{where}: server = {server!r}: give whole numbers ≥ 0 for some of {', '.join(sorted(known_names))}"
            )
        label = str(raw.get("label") or f"load{index + 1}")
        loads.append(
            CalibrationLoad(
                raw["tool"],
                label,
                ka.ServerSettings(**server),
                parse_run({"label": label, **(raw.get("run") or {})}, where, 0),
            )
        )
    if not loads:
        raise ScenarioError(f"{path.name} lists no [[load]]: add one (see the file's header)")
    return Plan(tuple(loads), settings)


def scenarios(plan: Plan) -> list[Scenario]:
    """Each load as a scenario of its own on the calibrated server's /hello, its settings in the query."""
    return [
        Scenario(
            load.scenario,
            f"calibration: {load.tool} {load.label}",
            load.tool,
            ((SERVER_ROUTE, "/hello" + load.server.query()),),
            (load.run,),
            None,
            in_bench=False,
        )
        for load in plan.loads
    ]


def measured(record: Record) -> ka.Observed:
    """What `record` (flags evaluated) measured, as the judgement reads it."""
    cost = (record.summary.cost_us or {}).get("median") if record.summary else None
    latency = {name: record.latency_ms.get(name) for name in ka.FIGURES}
    samples = [s for a in record.attempts if a.measured and (s := a.samples.get("server"))]
    waits = [s.run_delay_s for s in samples if s.run_delay_s is not None]
    steals = [s.steal_s for s in samples if s.steal_s is not None]
    return ka.Observed(
        record.rps,
        latency,
        cost,
        kinds.LOADGEN_BOUND.name in flags.names(record),
        flags.utilization(record, "server"),
        flags.utilization(record, "loadgen"),
        round(sum(waits) * 1000, 2) if waits else None,
        round(sum(steals) * 1000) if steals else None,
        record.duration_s or next((a.duration_s for a in record.attempts if a.duration_s), None),
    )


def server_cores(record: Record) -> int:
    sample = next((a.samples.get("server") for a in record.attempts if a.samples.get("server")), None)
    return (sample.cores if sample and sample.cores else None) or 1


def tool_note(
    load: CalibrationLoad, record: Record, name: str, known_ms: float | None, k: ka.Known
) -> tuple[float | None, str]:
    """What `load`'s tool should read for percentile `name` where it cannot be exact (None: the truth), and why."""
    if known_ms is None:
        return None, ""
    if load.tool == "ab" and name == "p99.9":
        return None, "ab's p99.9 is from its per-request file (-g), whose times are whole ms (±0.5 ms)"
    if load.tool == "ab" and all(float(record.latency_ms.get(p) or 0.5).is_integer() for p in ("p50", "p99")):
        return round(known_ms), "ab's figures are its table's whole ms (±0.5 ms)"
    if load.tool == "wrk" and k.limit == ka.PACE_LIMIT and record.rps and load.run.load.get("concurrency"):
        interval = load.run.load["concurrency"] * 1000 / record.rps
        corrected = ka.wrk_corrected(k.latencies, interval)
        wrk_reads = ka.figure_ms(tuple(corrected), name)
        if wrk_reads is not None and abs(wrk_reads - known_ms) > 1e-9:
            return wrk_reads, (
                f"wrk adds a sample every {interval:.2f} ms a slow answer held its connection "
                f"(coordinated omission): it should read {wrk_reads:.3f} ms, "
                f"{wrk_reads - known_ms:+.3f} ms from the truth"
            )
        added = len(corrected) - len(k.latencies)
        if added:
            return None, (
                f"wrk's correction of coordinated omission adds {added} sample(s) per delayed answer here "
                f"(every {interval:.2f} ms it held its connection): not enough to move {name}"
            )
    if load.tool == "httperf" and name != "mean":
        return None, "httperf gives no percentiles, only a mean"
    if load.tool == "gatling":
        return None, "Gatling's percentiles are whole ms, and each user opens its own connection"
    return None, ""


GATLING_RESOLUTION_MS = 1.0  # its times are differences of whole-ms timestamps: within 1 ms of the truth either way
AB_SLOWEST_RESOLUTION_MS = 0.5  # ab's -g file has whole ms, rounded


def resolution_ms(load: CalibrationLoad, name: str) -> float:
    """How far the tool's reading of figure `name` may lie from the time it measured, by its own resolution."""
    if load.tool == "gatling":
        return GATLING_RESOLUTION_MS
    return AB_SLOWEST_RESOLUTION_MS if load.tool == "ab" and name == "p99.9" else 0.0


def within_resolution(load: CalibrationLoad, figure: ka.Figure, known_ms: float | None) -> ka.Figure:
    """`figure` judged by what the tool can read: within the tolerance and the tool's resolution. Gatling times a
    request by two timestamps in whole ms, so a 10.3 ms answer reads 10 or 11 ms (its mean too); ab's p99.9 is from its
    -g file's whole ms. (Gatling's own JVM start is in its warm-up, outside its figures: tools/gatling.py.)"""
    resolution = resolution_ms(load, figure.name)
    if not resolution or known_ms is None or not isinstance(figure.measured, float | int):
        return figure
    off = figure.measured - known_ms
    if figure.ok is False and abs(off) <= max(ka.LATENCY_TOLERANCE * known_ms, ka.LATENCY_FLOOR_MS) + resolution:
        figure.ok = True
        figure.note = f"within the tolerance and the tool's reading (±{resolution:g} ms of its time); {figure.note}"
    return figure


def rate_note(load: CalibrationLoad, record: Record) -> str:
    """Where `load`'s tool measures its rate other than over the load as asked, and by how much."""
    asked = load.run.load.get("duration_s")
    if load.tool == "oha" and asked and asked != int(asked):  # wrk is ended at the time asked (wrk.stop_after_s)
        return f"{load.tool} takes whole seconds: it ran {math.ceil(asked)} s for the {asked:g} s asked"
    return ""


def with_connection_opening(load: CalibrationLoad, record: Record, k: ka.Known) -> ka.Known:
    """httperf runs a count, not a time: its c connections open one by one at its --rate r (the last (c-1)/r after
    the first), each makes its n calls, and the run lasts until the slowest is done: n·S plus D for each of its
    calls among the 1 in k delayed, which the server deals over all connections together (taken here as each call's
    independent chance 1/k: the unluckiest of c connections has E[max] of c Binomial(n, 1/k) counts). The known rate is
    the c·n requests over that."""
    connections, opened, s = load.run.load.get("concurrency"), load.run.load.get("rate"), load.server
    measured = [a for a in record.attempts if a.measured and a.requests]
    if load.tool != "httperf" or load.open_loop or not (connections and opened and k.rps and measured):
        return k
    requests = sum(a.requests for a in measured) / len(measured)
    calls = max(1, round(requests / connections))
    ramp_s = (connections - 1) / opened
    delayed = ka.expected_most(calls, 1 / s.every, connections) if s.every and s.delay_us else 0.0
    slowest_s = (
        (calls * max(s.service_us, s.burn_us) + delayed * s.delay_us) / 1e6 if s.service_us else requests / k.rps
    )
    return replace(
        k,
        rps=requests / (ramp_s + slowest_s),
        why=f"{k.why}; its connections opened at {opened:g}/s, the last {ramp_s * 1000:.0f} ms after the "
        f"first, and it ends with its slowest connection ({delayed:.1f} of its {calls} calls delayed, "
        "expected)",
    )


@dataclass(frozen=True)
class Aside:
    """What the judgement knows beside the tool's figures: the server's own account of each load (None: not asked)
    and the run's steadiness probe (its largest CV; None: not probed)."""

    accounts: server_seen.Accounts | None = None
    probe_cv: float | None = None
    stalls: allowance.Stalls | None = None  # the machine's, by its steadiness probes (None: not counted)


def rate_figure(load: CalibrationLoad, record: Record, k: ka.Known, m: ka.Observed, beside: Aside) -> ka.Figure:
    """req/s: a closed loop held by time outside the server (its sleeps, the tool's turnaround) against what the
    server itself saw (server_seen.py says why); open loops, the cap and the burn against the construction."""
    seen = beside.accounts.of_record(record) if beside.accounts else None
    connections = load.run.load.get("concurrency") or 0
    s = load.server
    if seen and not load.open_loop and k.limit == ka.PACE_LIMIT:
        ideal_ms = (s.service_us + (s.delay_us / s.every if s.every else 0)) / 1000
        judged = server_seen.judge_rate(k, m, seen, connections, ideal_ms)
        if judged:
            return judged
    rate = ka.judge_rate(k, m)
    if seen and k.limit == ka.TOOL_LIMIT and all(x.rate for x in seen):
        rate.note = (
            f"the server saw {statistics.median(x.rate or 0 for x in seen):,.1f} req/s (its answers over its span)"
        )
    return rate


def latency_figures(
    load: CalibrationLoad, record: Record, k: ka.Known, m: ka.Observed, beside: Aside
) -> list[ka.Figure]:
    """Each latency figure judged; a miss says what the figures show about it, whether the server's answers left on
    time and whether the machine was steady (a miss on an unsteady one is the machine's, and still a miss)."""
    seen = beside.accounts.of_record(record) if beside.accounts else None
    figures = []
    for name in ka.FIGURES:
        known_ms = ka.figure_ms(k.latencies, name)
        _, note = tool_note(load, record, name, known_ms, k)
        measured_ms = m.latency_ms.get(name)
        given = name not in ka.NOT_GIVEN.get(load.tool, ())
        figure = within_resolution(load, ka.judge_latency(name, known_ms, measured_ms, note, given), known_ms)
        if figure.ok is False and known_ms is not None and measured_ms is not None:
            figure = within_stalls(figure, known_ms, resolution_ms(load, name), beside, (seen, m.server_steal_ms))
        if figure.ok is False:  # a figure missing is the parser's, not the machine's
            miss = measured_ms - known_ms if known_ms is not None and measured_ms is not None else None
            whose = server_seen.latency_verdict(seen, miss, beside.probe_cv) if miss is not None else ""
            figure.note = "; ".join(n for n in (whose, figure.note, ka.latency_context(k, m, known_ms, miss)) if n)
        figures.append(figure)
    return figures


def within_stalls(
    figure: ka.Figure,
    known_ms: float,
    resolution: float,
    beside: Aside,
    server: tuple[list[server_seen.ServerSeen] | None, float | None],
) -> ka.Figure:
    """A tail figure above its known value judged within the tolerance, the tool's resolution and what the machine's
    stalls, the server's late answers and the hypervisor's steal add (`server`: its account, its CPUs' steal in ms;
    allowance.py: each measured)."""
    seen, steal_ms = server
    late = max((s.late_max_ms for s in seen or [] if s.late_max_ms is not None), default=None)
    allowed, why = allowance.allowance_ms(figure.name, beside.stalls, late, steal_ms)
    off = float(figure.measured or 0) - known_ms
    if allowed and 0 < off <= max(ka.LATENCY_TOLERANCE * known_ms, ka.LATENCY_FLOOR_MS) + resolution + allowed:
        figure.ok = True
        figure.note = f"within the tolerance and {allowed:.2f} ms for {why}; {figure.note}"  # the note has the offset
    return figure


def judge(load: CalibrationLoad, record: Record | None, beside: Aside | None = None) -> dict[str, Any]:
    """One load's verdict: its known answers and, figure by figure, what was measured and whether it is within
    tolerance (the miss explained)."""
    beside = beside or Aside()
    entry = {
        "tool": load.tool,
        "label": load.label,
        "scenario": load.scenario,
        "server_settings": vars(load.server),
        "load": load.run.load,
    }
    if record is None or record.rps is None:
        return {**entry, "figures": [], "failed": (record.failed if record else None) or "not measured"}
    cores = server_cores(record)
    offered = load.run.load.get("rate") if load.open_loop else None
    k = with_connection_opening(
        load, record, ka.known(load.server, load.run.load.get("concurrency") or 0, cores, offered)
    )
    m = measured(record)
    rate = rate_figure(load, record, k, m, beside)
    extra = rate_note(load, record)
    rate.note = "; ".join(n for n in (rate.note, extra) if n)
    figures = [rate, *latency_figures(load, record, k, m, beside)]
    flag = ka.judge_flag(k, m, kinds.LOADGEN_BOUND.name)
    if load.tool == "httperf":  # its CPU cannot tell (it polls at 100 %): judged by its own pace (flags.httperf_held)
        flag.note += (
            f"; httperf judged by what it shows, not its CPU: {ka.fmt_share(m.loadgen_util)} of each "
            "connection's cycle its own, its connect bursts, its connection rate against the one asked"
        )
    figures += [ka.judge_cost(k, m), flag]
    if load.server.fail_every:
        figures.append(failures(load, record))
    return {
        **entry,
        "server_cores": cores,
        "limit": k.limit,
        "why": k.why,
        "figures": [with_cause(f, beside) for f in figures],
        "server_seen": [vars(s) for s in beside.accounts.of_record(record) or []] if beside.accounts else [],
        "failed": None,
    }


def with_cause(figure: ka.Figure, beside: Aside) -> dict[str, Any]:
    """The figure as results.json keeps it; a latency miss on an unsteady machine marked the machine's."""
    out = figure.to_dict()
    latency_miss = figure.ok is False and figure.name in ka.FIGURES and figure.measured is not None
    if latency_miss and server_seen.unsteady(beside.probe_cv):
        out["cause"] = "machine"
    return out


def failures(load: CalibrationLoad, record: Record) -> ka.Figure:
    """The 503s of the error mode as the tool counted them (non_2xx; Gatling has one count of every KO)."""
    measured = [a for a in record.attempts if a.measured]
    counted = sum(a.errors.total if load.tool == "gatling" else a.errors.non_2xx for a in measured)
    in_flight = (load.run.load.get("concurrency") or 0) * len(measured)
    note = "Gatling counts every failed request (KO) in one figure" if load.tool == "gatling" else ""
    return ka.judge_failures(load.server.fail_every, sum(a.requests for a in measured), counted, in_flight, note)


def judge_run(run: Run, plan: Plan, server: str, accounts: server_seen.Accounts | None = None) -> list[dict[str, Any]]:
    """Every load of `plan` judged from `run`'s records of `server` (flags evaluated first), beside the server's own
    `accounts` of its loads and the run's steadiness probe."""
    flags.evaluate(run)
    by_scenario = {r.scenario: r for r in run.records if r.server == server}
    beside = Aside(accounts, server_seen.probe_cv(run.conditions), allowance.probe_stalls(run.conditions))
    return [judge(load, by_scenario.get(load.scenario), beside) for load in plan.loads]
