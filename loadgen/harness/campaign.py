"""A campaign: for each server (started here or already up), verify the contract, then measure each scenario."""
from __future__ import annotations

import time

import statistics

from harness import contract, flags, httpclient, inventory, stats, summary_table
from harness.console import console, fail, say, warn
from harness.manifest import REPO, Server
from harness.result import Errors
from harness.runner import measure
from harness.runtime import RunningServer, RuntimeError_
from harness.scenarios import Scenario, Settings, Warmup
from harness.tools import LoadSpec
from harness.session import Session
from harness.store import RunStore

UPSTREAM_DOCUMENT = REPO / "nginx" / "static" / "weather.json"
WARMUP_TIMEOUT_S = 60  # ab scenarios allow 10000 s; wrk sizes its latency histogram by its timeout


def verify(running: RunningServer, server: Server) -> contract.Report:
    report = contract.verify(server.name, running.host, running.port, server.routes, UPSTREAM_DOCUMENT.read_bytes())
    if report.ok:
        say(f"  {server.name}: contract OK ({report.checks} checks)")
    else:
        fail(f"{server.name} fails the contract ({len(report.failures)} of {report.checks} checks):")
        for failure in report.failures:
            say(f"    - {failure}")
    return report


def attempt_record(attempt: int, outcome, store: RunStore, started: float) -> dict:
    m = outcome.measurement
    entry = {
        "attempt": attempt,
        "started_at": time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(started)),
        "tool_processes": len(outcome.commands),
        "commands": [" ".join(c) for c in outcome.commands],
        "raw": [str(p.relative_to(store.dir)) for p in outcome.raw],
        "failed": outcome.failure,
        "samples": outcome.samples,
    }
    if m:
        entry.update(m.to_dict())
    else:
        entry.update({"requests": 0, "good_requests": 0, "errors": Errors().to_dict(), "duration_s": None, "rps": None,
                      "latency_ms": {}})
    return entry


def aggregate(server: Server, scenario: Scenario, run, path: str, attempts: list[dict], warmup: dict) -> dict:
    """One record per (server, scenario, run): sums of counts, the median attempt's rate and latencies, every attempt."""
    measured = [a for a in attempts if a["rps"] is not None]
    median_attempt = sorted(measured, key=lambda a: a["rps"])[(len(measured) - 1) // 2] if measured else None
    errors = Errors()
    for a in attempts:
        errors = errors + Errors(**{k: v for k, v in a["errors"].items() if k != "total"})

    def sample(role: str, key: str, pick):
        values = [a["samples"][role][key] for a in attempts if a["samples"].get(role, {}).get(key) is not None]
        return pick(values) if values else None

    return {
        "server": server.name,
        "scenario": scenario.name,
        "run": run.label,
        "tool": scenario.tool,
        "path": path,
        "concurrency": run.load["concurrency"],
        "threads": run.load.get("threads"),
        "load": run.load,
        "requests": sum(a["requests"] for a in attempts),
        "good_requests": sum(a["good_requests"] for a in attempts),
        "errors": errors.to_dict(),
        "duration_s": round(sum(a["duration_s"] or 0 for a in attempts), 3),
        "rps": median_attempt["rps"] if median_attempt else None,
        "latency_ms": median_attempt["latency_ms"] if median_attempt else {},
        "failed": next((f"attempt {a['attempt']}: {a['failed']}" for a in attempts if a["failed"]), None),
        "attempts": attempts,
        "warmup": warmup,
        "summary": None,
        "samples": {role: {"cpu_util": sample(role, "cpu_util", statistics.median),
                           "peak_rss_mb": sample(role, "peak_rss_mb", max)} for role in ("server", "loadgen")},
        "flags": [],
        "ranked": True,
    }


def run_campaign(session: Session, store: RunStore, servers: list[Server], scenarios: list[Scenario], settings: Settings) -> bool:
    """Returns False when a server could not start or failed its contract (it is then not measured)."""
    all_ok = True
    for server in servers:
        applicable = [s for s in scenarios if s.path_for(server)]
        if scenarios and not applicable:
            say(f"{server.name}: serves none of the routes of {', '.join(s.name for s in scenarios)}; skipped")
            continue
        try:
            running = session.ensure(server)
        except RuntimeError_ as exc:
            fail(str(exc))
            store.set("servers", server.name, {"started": False, "error": str(exc)})
            all_ok = False
            continue
        try:
            report = verify(running, server)
            store.set("verification", server.name, {"ok": report.ok, "checks": report.checks, "failures": report.failures})
            store.set("servers", server.name, {
                "started": True, "version": session.runtime.version(server), "stack": server.stack,
                "port": running.port, "runtime": session.runtime.name, "cpus": running.cpus,
                "placement": session.runtime.describe(running), "startup_s": running.startup_s if server.name in session.started else None,
                "started_by_this_run": server.name in session.started, "log": running.log,
                **inventory.describe(server, session.servers)})
            if not report.ok:
                all_ok = False
                warn(f"{server.name} is not benchmarked: it fails the contract")
                continue
            for scenario in applicable:
                measure_scenario(session, store, server, running, scenario, settings)
        finally:
            session.release(server.name)
    return all_ok


def evaluate_flags(store: RunStore) -> None:
    flags.evaluate(store.data)
    store.save()


def _measure(session: Session, store: RunStore, running: RunningServer, tool: str, spec: LoadSpec, stem: str, label: str):
    with session.measuring(running):
        return measure(session.runtime, tool, spec, list(session.plan.loadgen), store.raw, stem, label,
                       server_pids=lambda: session.runtime.pids(running), server_cores=len(running.cpus))


def warm_up(session: Session, store: RunStore, server: Server, running: RunningServer, scenario: Scenario,
            rule: Warmup) -> dict:
    """A primer (a few sequential requests), then short wrk runs until two in a row agree within the tolerance."""
    path = scenario.path_for(server)
    for _ in range(10):
        try:
            httpclient.get(running.host, running.port, path, timeout=60)
        except (OSError, httpclient.HttpError):
            break
    first = scenario.runs[0].load
    spec = LoadSpec(url=running.base_url + path, concurrency=min(first["concurrency"], rule.concurrency),
                    threads=min(first.get("threads") or rule.threads, rule.threads), duration_s=rule.duration_s,
                    timeout_s=min(first.get("timeout_s") or WARMUP_TIMEOUT_S, WARMUP_TIMEOUT_S))
    runs, steady = [], False
    while len(runs) < rule.max_runs and not steady:
        n = len(runs) + 1
        outcome = _measure(session, store, running, "wrk", spec, f"warmup/{server.name}-{scenario.name}-{n}",
                           f"{server.name} {scenario.name} warm-up {n}")
        rps = outcome.measurement.rps if outcome.measurement and not outcome.failure else None
        runs.append({"rps": round(rps, 1) if rps is not None else None, "duration_s": rule.duration_s,
                     "errors": outcome.measurement.errors.total if outcome.measurement else None})
        if len(runs) >= 2 and runs[-1]["rps"] and runs[-2]["rps"]:
            steady = abs(runs[-1]["rps"] - runs[-2]["rps"]) / runs[-2]["rps"] <= rule.tolerance
    rates = ", ".join(f"{r['rps']:,.0f}" if r["rps"] else "failed" for r in runs)
    verdict = "steady" if steady else f"NOT steady within {rule.tolerance:.0%} after {rule.max_runs} runs"
    say(f"  {server.name} {scenario.name} warm-up: {len(runs)} run(s) of {rule.duration_s:g} s, {verdict} ({rates} req/s)")
    return {"runs": runs, "steady": steady, "tolerance": rule.tolerance, "max_runs": rule.max_runs}


def measure_scenario(session: Session, store: RunStore, server: Server, running: RunningServer, scenario: Scenario,
                     settings: Settings) -> None:
    path = scenario.path_for(server)
    url = running.base_url + path
    repeat = settings.repeat if settings.forced else max(settings.repeat, scenario.attempts)
    warmup = warm_up(session, store, server, running, scenario, settings.warmup)
    for run in scenario.runs:
        attempts = []
        for attempt in range(1, repeat + 1):
            label = f"{server.name} {scenario.name} {run.label}" + (f" #{attempt}" if repeat > 1 else "")
            started = time.time()
            outcome = _measure(session, store, running, scenario.tool, run.spec(url),
                               f"{server.name}-{scenario.name}-{run.label}-{attempt}", label)
            attempts.append(attempt_record(attempt, outcome, store, started))
            say(_line(label, attempts[-1]))
        record = aggregate(server, scenario, run, path, attempts, warmup)
        record["summary"] = stats.summarize(record)
        store.add_record(record)
        evaluate_flags(store)


def _line(label: str, r: dict) -> str:
    if r["failed"]:
        return f"  {label}: FAILED ({r['failed']})"
    errors = r["errors"]["total"]
    p99 = r["latency_ms"].get("p99")
    return (f"  {label}: {r['rps']:,.0f} req/s, {r['requests']:,} requests"
            + (f", p99 {p99:.2f} ms" if p99 is not None else "")
            + (f", {errors:,} ERRORS" if errors else ", 0 errors"))


def print_summary(store: RunStore) -> None:
    records = store.data["records"]
    if records:
        console.print(summary_table.flags_table(records, f"run {store.data['run_id']} ({store.data['conditions']['profile']} "
                                                         f"profile, {store.data['conditions']['runtime']} runtime)"))
    say(f"results: {store.path}")
