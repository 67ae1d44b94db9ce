"""A campaign: for each server (started here or already up), verify the contract, then measure each scenario."""
from __future__ import annotations

import time

from harness import contract
from harness.conditions import server_version
from harness.console import console, fail, results_table, say, warn
from harness.cpus import CpuPlan
from harness.manifest import REPO, Server
from harness.runner import measure
from harness.runtime import RunningServer, RuntimeError_
from harness.scenarios import Scenario
from harness.session import Session
from harness.store import RunStore

UPSTREAM_DOCUMENT = REPO / "nginx" / "static" / "weather.json"


def verify(running: RunningServer, server: Server) -> contract.Report:
    report = contract.verify(server.name, running.host, running.port, server.routes, UPSTREAM_DOCUMENT.read_bytes())
    if report.ok:
        say(f"  {server.name}: contract OK ({report.checks} checks)")
    else:
        fail(f"{server.name} fails the contract ({len(report.failures)} of {report.checks} checks):")
        for failure in report.failures:
            say(f"    - {failure}")
    return report


def record_for(server: Server, scenario: Scenario, run, attempt: int, path: str, outcome, store: RunStore, started: float) -> dict:
    m = outcome.measurement
    load = run.load
    record = {
        "server": server.name,
        "scenario": scenario.name,
        "run": run.label,
        "tool": scenario.tool,
        "path": path,
        "attempt": attempt,
        "attempts": scenario.attempts,
        "concurrency": load["concurrency"],
        "threads": load.get("threads"),
        "load": load,
        "started_at": time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(started)),
        "tool_processes": len(outcome.commands),
        "commands": [" ".join(c) for c in outcome.commands],
        "raw": [str(p.relative_to(store.dir)) for p in outcome.raw],
        "failed": outcome.failure,
    }
    if m:
        record.update(m.to_dict())
    else:
        record.update({"requests": 0, "good_requests": 0, "errors": {"total": 0}, "duration_s": None, "rps": None,
                       "latency_ms": {}})
    return record


def run_campaign(session: Session, store: RunStore, plan: CpuPlan, servers: list[Server], scenarios: list[Scenario]) -> bool:
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
                "started": True, "version": server_version(server), "stack": server.stack, "port": running.port,
                "cpus": running.cpus, "startup_s": running.startup_s if server.name in session.started else None,
                "started_by_this_run": server.name in session.started, "log": running.log})
            if not report.ok:
                all_ok = False
                warn(f"{server.name} is not benchmarked: it fails the contract")
                continue
            for scenario in applicable:
                measure_scenario(session, store, plan, server, running, scenario)
        finally:
            session.release(server.name)
    return all_ok


def measure_scenario(session: Session, store: RunStore, plan: CpuPlan, server: Server, running: RunningServer, scenario: Scenario) -> None:
    path = scenario.path_for(server)
    url = running.base_url + path
    for run in scenario.runs:
        for attempt in range(1, scenario.attempts + 1):
            label = f"{server.name} {scenario.name} {run.label}" + (f" #{attempt}" if scenario.attempts > 1 else "")
            stem = f"{server.name}-{scenario.name}-{run.label}-{attempt}"
            started = time.time()
            with session.measuring(running):
                outcome = measure(session.runtime, scenario.tool, run.spec(url), list(plan.loadgen), store.raw, stem, label)
            record = record_for(server, scenario, run, attempt, path, outcome, store, started)
            store.add_record(record)
            say(_line(label, record))


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
        console.print(results_table(records, f"run {store.data['run_id']} ({store.data['conditions']['profile']} profile, "
                                             f"{store.data['conditions']['runtime']} runtime)"))
    say(f"results: {store.path}")
