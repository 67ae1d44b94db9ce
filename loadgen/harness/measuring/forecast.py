"""The forecast, before a bench: what this machine's noise and the run's attempts let it tell apart.

Issue 41 found that the steadiness probe's busy loop does not predict an attempt's noise, so the noise is measured on
the path the bench measures: a second nginx (no JIT, nothing to warm; `<nginx>-forecast`, a port of its own) on the
server CPUs, loaded by the bench's own /hello load (wrk, its connections and attempt length) ATTEMPTS times back to
back through the bench's executor, about 15 s. Its req/s give two spreads on the log scale: the attempts' whole
spread, and half the variance of consecutive attempts' differences (what a back-to-back pair varies by, the slow
drift cancelled: a duel's round). Those, with the attempts a record will have, give (harness.judging.resolution) the
gap the ranking tells apart 9 times in 10 and the interval a `make duel` of one pair reaches in five minutes, said in
the bench's first lines and kept in the run's conditions (`resolution.forecast`), where the report sets them beside
what the run achieved.

The servers add noise of their own, which nginx does not show (JITs still climbing, two processes of one server
apart): the latest benches here measured it (their rounds' noise less their forecast's, servers_part), and the
forecast adds it to the machine's of today."""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from harness.basics.messages import say, warn
from harness.config import scenarios as scenario_data
from harness.config.manifest import Server, twin
from harness.config.scenarios import Scenario, Settings
from harness.judging import resolution
from harness.measuring.executor import LoadExecutor, attempt_spec
from harness.measuring.run_plan import sitting_costs
from harness.report.resolution_text import forecast_noise
from harness.results import readable
from harness.results.records import ResultsError
from harness.results.store import RunStore
from harness.runtime.protocol import RuntimeFailure
from harness.servers.readiness import Target
from harness.servers.session import Session

ATTEMPTS = 10
SCENARIO = "hello"  # the bench's closed-loop keep-alive load: the path most of its records take
DUEL_S = 300.0  # the duel the forecast quotes: five minutes on one pair


def ceiling_of(servers: list[Server]) -> Server | None:
    """The nginx the bench reads servers against (its manifest's `ceiling` role), or None."""
    return next((s for s in servers if "ceiling" in s.roles), None)


def measure(session: Session, store: RunStore, servers: dict[str, Server], settings: Settings, profile: str) -> None:
    """The probe (see the module's docstring), said and kept; a word and nothing else where it cannot be taken."""
    ceiling = ceiling_of(list(servers.values()))
    scenario = scenario_data.load(profile).get(SCENARIO)
    if ceiling is None or scenario is None or not scenario.path_for(ceiling):
        warn("no forecast: it loads the ceiling nginx's /hello, which this run has not")
        return
    taken = {p for s in servers.values() for p in (session.port(s), session.h2c_port(s)) if p}
    probe = replace(twin(ceiling, taken), name=f"{ceiling.name}-forecast", roles=())
    try:
        running = session.ensure(probe)
    except RuntimeFailure as exc:
        warn(f"no forecast: the probe's nginx did not start ({exc})")
        return
    try:
        rates = _rates(LoadExecutor(session, store), Target(probe, running), scenario)
    finally:
        session.stop(probe.name)
    if len(rates) < ATTEMPTS // 2:
        warn(f"no forecast: {ATTEMPTS - len(rates)} of the probe's {ATTEMPTS} attempts measured nothing")
        return
    machine = noise_of(rates, scenario.repeat(settings))
    part = servers_part(store.dir.parent, store.run.run_id)
    forecast = forecast_of(with_servers(machine, part), scenario, settings)
    forecast["probe"] = f"{ceiling.name} {scenario.path_for(ceiling)}, {scenario.tool}, {len(rates)} attempts"
    forecast["machine"] = {"own_sd": round(machine.own, 5), "shared_sd": round(machine.shared, 5)}
    if part:
        forecast["servers"] = {"own_sd": round(part.own, 5), "shared_sd": round(part.shared, 5), "from": part.runs}
    store.update_conditions(resolution={"forecast": forecast})
    say(sentence(forecast))


@dataclass(frozen=True)
class ServersPart:
    """The noise the servers add to the machine's, as the latest benches here measured it (standard deviations)."""

    own: float
    shared: float
    runs: list[str]  # the benches it was read from


def servers_part(results: Path, this_run: str = "", benches: int = 5) -> ServersPart | None:
    """What the servers' processes add to the machine's noise (JITs still climbing, processes apart): in each of the
    latest `benches` benches that took a forecast, the variance its rounds showed less the machine's its forecast
    measured on nginx, not below 0; the median of those, each part apart. None where no bench has both. A bench that
    did not end complete is passed over."""
    own: list[float] = []
    shared: list[float] = []
    runs: list[str] = []
    for path in sorted(results.glob("*-bench/results.json"), reverse=True):
        if len(runs) == benches:
            break
        if path.parent.name == this_run:
            continue
        try:
            run = readable.load(path)
        except ResultsError:
            continue
        if run.conditions.get("ended", "complete") != "complete":
            continue  # an interrupted bench's rounds are a part of its servers' (the JVMs' first scenarios)
        machine = (run.conditions.get("resolution") or {}).get("forecast") or {}
        machine = machine.get("machine") or machine  # before 6 Dec the forecast was the machine's alone
        measured = resolution.measured_noise(run.records, run.with_role("ceiling"))
        if measured is None or not {"own_sd", "shared_sd"} <= set(machine):
            continue
        own.append(max(measured.own**2 - float(machine["own_sd"]) ** 2, 0.0))
        shared.append(max(measured.shared**2 - float(machine["shared_sd"]) ** 2, 0.0))
        runs.append(path.parent.name)
    if not runs:
        return None
    return ServersPart(math.sqrt(statistics.median(own)), math.sqrt(statistics.median(shared)), runs)


def with_servers(machine: resolution.Noise, part: ServersPart | None) -> resolution.Noise:
    """The machine's noise now with the servers' part added (variances add: the two are independent)."""
    if part is None:
        return machine
    return replace(machine, own=math.hypot(machine.own, part.own), shared=math.hypot(machine.shared, part.shared))


def _rates(bench: LoadExecutor, target: Target, scenario: Scenario) -> list[float]:
    run = scenario.runs[0]
    url = target.running.url(scenario.protocol_of(run)) + (scenario.path_for(target.server) or "")
    rates = []
    for k in range(1, ATTEMPTS + 1):
        spec = attempt_spec(scenario, run, url, None)
        outcome = bench.load(
            target, scenario.tool, spec, f"forecast-{k}", f"forecast {target.name} #{k}", f"forecast #{k}", None
        )
        if outcome.measurement and outcome.measurement.rps and not outcome.failure:
            rates.append(outcome.measurement.rps)
    return rates


def noise_of(rates: list[float], attempts: int) -> resolution.Noise:
    """The attempts' spreads (see the module's docstring) as the ranking's model reads them: the back-to-back part as
    each attempt's own, the rest as the rounds' shared drift."""
    logs = [math.log(r) for r in rates]
    whole = statistics.variance(logs)
    own = statistics.fmean((b - a) ** 2 for a, b in zip(logs, logs[1:])) / 2
    return resolution.Noise(math.sqrt(own), math.sqrt(max(whole - own, 0.0)), attempts)


def forecast_of(noise: resolution.Noise, scenario: Scenario, settings: Settings) -> dict[str, Any]:
    """What `noise` buys a bench of the scenario's attempts a record, and a duel of DUEL_S: the run's `forecast`."""
    costs = sitting_costs(scenario, scenario.runs[0], settings)
    return {
        "attempts": noise.attempts,
        "own_sd": round(noise.own, 5),
        "shared_sd": round(noise.shared, 5),
        "gap": gap if math.isfinite(gap := resolution.bench_gap(noise)) else None,
        "duel_s": DUEL_S,
        "duel_half_width": round(resolution.duel_half_width(noise, DUEL_S, costs), 5),
    }


def sentence(forecast: dict[str, Any]) -> str:
    """The forecast in words, as the bench's first lines say it."""
    gap = forecast["gap"]
    told = (
        f"servers ≥ {gap:.0%} apart are told apart 9 times in 10; closer ones will read tied"
        if gap is not None
        else "no gap up to 100 % is told apart 9 times in 10"
    )
    return (
        f"forecast: an attempt's noise here {forecast_noise(forecast)} "
        f"(±{forecast['own_sd'] * math.sqrt(2):.1%} back to back); with "
        f"{forecast['attempts']} attempts a record, {told}; `make duel` settles one pair to about "
        f"±{forecast['duel_half_width']:.1%} in {forecast['duel_s'] / 60:.0f} min"
    )


def from_last_bench(results: Path, settings: Settings, profile: str) -> str | None:
    """For `make plan`, which starts nothing: the forecast at the noise the latest bench here measured (its
    `resolution.forecast`), for this plan's attempts; None where no bench recorded one."""
    scenario = scenario_data.load(profile).get(SCENARIO)
    benches = sorted(results.glob("*-bench/results.json"), reverse=True)
    for path in benches[:5]:
        try:
            last = readable.load(path, attempts=False).conditions.get("resolution") or {}
        except ResultsError:
            continue
        measured = last.get("forecast") if isinstance(last, dict) else None
        if isinstance(measured, dict) and scenario and {"own_sd", "shared_sd", "probe"} <= set(measured):
            machine = measured.get("machine") or measured
            noise = resolution.Noise(float(machine["own_sd"]), float(machine["shared_sd"]), scenario.repeat(settings))
            part = servers_part(results)
            again = {**forecast_of(with_servers(noise, part), scenario, settings), "probe": measured["probe"]}
            if part:
                again |= {
                    "machine": machine,
                    "servers": {"own_sd": part.own, "shared_sd": part.shared, "from": part.runs},
                }
            return f"at the noise {path.parent.name} measured: {sentence(again)}"
    return None
