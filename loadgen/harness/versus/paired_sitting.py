"""The paired engine: two sides, already named, built and placed on their ports, measured in one sitting and judged.

Three commands name the two sides, and this is all of what they share: `make versus` (two builds of one server,
flow.py), `make duel` (two servers, or two processes of one, duel.py), `make twin` (ours beside an outside
implementation, then beside itself: twin.py; the outside one answers on its paths, never held to the contract). Here:
the session that starts and always stops them, the load tools checked, the run's store opened with the steadiness
probe before, both started and verified, every scenario run compared in starts of ABBA rounds within its share of the
budget (sitting.py, the clock deciding the shape: stats/sitting_shape.py), each verdict given its evidence
(evidence.py), and the answer printed last."""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from harness.basics import httpclient
from harness.basics.cpus import CpuPlan
from harness.basics.messages import fail, say, warn
from harness.config import scenarios as scenario_data
from harness.config.manifest import Server
from harness.config.scenarios import Scenario, Settings
from harness.measuring import steadiness
from harness.measuring.executor import LoadExecutor
from harness.measuring.lifecycle import RunOptions, closing, open_run
from harness.results.store import RunStore, new_run_id
from harness.runtime import Runtime
from harness.runtime.protocol import RuntimeFailure
from harness.servers.preflight import tools_needed
from harness.servers.readiness import Readiness, Target
from harness.servers.session import Session
from harness.servers.turns import Turns, idle_pids
from harness.stats import paired, sitting_shape
from harness.tools.availability import check_tools
from harness.versus import evidence
from harness.versus.checkout import RevisionError
from harness.versus.sitting import Pair, Side, Sitting, ratios_by_start

DEFAULT_BUDGET_PER_RUN_S = 120.0  # without BUDGET_S: this much per scenario run (SCENARIOS=hello: 2 minutes)


@dataclass(frozen=True)
class Where:
    """Where and how the sitting runs: the runtime, its CPU plan, the profile and its settings, PORTS, the command."""

    runtime: Runtime
    plan: CpuPlan
    profile: str
    settings: Settings
    ports: dict[str, int]
    command: str


@dataclass(frozen=True)
class Sides:
    """The two sides as their command named them: `base` is compared against (A), `head` is the one answered for (B);
    `names`: how the verdict says them ("B faster than A by …"), or None for make versus's "faster by …"; `run_name`:
    the run id's suffix; `note`: the run's conditions' `versus` entry before any round."""

    base: Side
    head: Side
    names: tuple[str, str] | None
    run_name: str
    note: dict[str, Any]


@dataclass(frozen=True)
class SittingPlan:
    """The sitting's measuring time (warm-ups and rounds, every scenario run together), the seed of which side leads
    the first start, and the sides' build, made once every check has passed."""

    budget_s: float
    seed: int
    build: Callable[[], None]


def drawn_seed(asked: int | None) -> int:
    """The seed of which side leads the first start: SEED, or drawn (and then recorded with the run)."""
    return asked if asked is not None else random.SystemRandom().randrange(2**32)


def budget_of(asked: float | None, picked: list[Scenario]) -> float:
    """The sitting's measuring time: BUDGET_S, or DEFAULT_BUDGET_PER_RUN_S for each scenario run."""
    return asked or DEFAULT_BUDGET_PER_RUN_S * sum(len(s.runs) for s in picked)


def sitting_note(base: Side, head: Side, scenarios: list[Scenario], budget: float, seed: int | None) -> dict[str, Any]:
    """What every sitting's `versus` conditions say before any round: its budget and seed, the interval's level, the
    rounds a start may have, each side's name, port and revision, the scenarios; the command adds its own."""
    return {
        "budget_s": budget,
        "seed": seed,
        "level": paired.LEVEL,
        "rounds_per_start": [sitting_shape.MIN_ROUNDS, sitting_shape.MAX_ROUNDS],
        "builds": {
            side.role: {"name": side.server.name, "port": side.server.port, **side.revision.to_dict()}
            for side in (base, head)
        },
        "scenarios": [s.name for s in scenarios],
        "results": [],
    }


def both_take(base: Side, head: Side, profile: str, names: tuple[str, ...], rule: str) -> list[Scenario]:
    """The scenarios both sides take on the same path and protocol (the same work); one asked for that either does
    not take alike is a RevisionError (`rule`: why it must, in the command's words), one left out otherwise is said."""
    picked = scenario_data.select(scenario_data.load(profile), list(names))
    out, left = [], []
    for scenario in picked:
        paths = [scenario.path_for(side.server) for side in (base, head)]
        if paths[0] and paths[0] == paths[1]:
            out.append(scenario)
            continue
        why = f"{scenario.name}: {base.server.name} on {paths[0] or 'no path'}, {head.server.name} on {paths[1] or 'no path'}"
        if names:
            raise RevisionError(f"SCENARIOS={' '.join(names)}: {why} ({rule})")
        left.append(why)
    if left:
        say("left out, not taken alike by both: " + "; ".join(left))
    if not out:
        raise RevisionError(f"{base.server.name} and {head.server.name} take no scenario asked for on one path")
    return out


def sit(sides: Sides, picked: list[Scenario], others: dict[str, Server], where: Where, plan: SittingPlan) -> int:
    """The sitting, the two sides' processes stopped however it ends (`others`: every other server the session knows,
    for their ports). 0 when every run has a verdict; 1 when a side could not be started, failed the contract or
    died, or a run reached no interval or had its verdict withheld."""
    base, head = sides.base, sides.head
    pair = {side.server.name: side.server for side in (base, head)}
    with Session(where.runtime, where.plan, {**others, **pair}, where.ports) as session:
        session.check_ports(list(pair.values()))  # and what a killed command left, stopped
        check_tools(tools_needed(picked))
        plan.build()  # only once every check has passed: a JVM's or a fresh cargo build takes minutes
        store = open_run(
            new_run_id(sides.run_name),
            where.runtime,
            where.plan,
            RunOptions(where.profile, where.settings, where.command),
            {"versus": sides.note},
            how=f"{head.server.name} against {base.server.name}, rounds in ABBA order",
        )
        with closing(store, where.runtime):
            steadiness.probe_and_record(store, where.plan, where.settings, "before")
            results = measure(session, store, where.settings, sides, picked, plan)
        announce(results)
    runs = sum(len(s.runs) for s in picked)
    return 0 if results and all(r["reached"] for r in results) and len(results) == runs else 1


def measure(
    session: Session, store: RunStore, settings: Settings, sides: Sides, scenarios: list[Scenario], plan: SittingPlan
) -> list[dict[str, Any]]:
    """Both sides started and verified, then every scenario run compared within its share of the budget."""
    both = (sides.base, sides.head)
    results: list[dict[str, Any]] = []
    readiness = Readiness(session, store)
    for side in both:
        server = side.server
        if server.ready_path:  # an outside implementation (make twin's entry): its paths answer, no contract
            side.target = start_outside(session, store, server, [s.path_for(server) or "/" for s in scenarios])
        else:
            side.target = readiness.bring_up(server)
    if not all(side.target for side in both):
        return results
    targets = [side.target for side in both if side.target]  # updated in place at every start
    turns = Turns(session, targets)
    bench = LoadExecutor(session, store, turn=turns, idle_pids=idle_pids(session, targets))
    pair = Pair(bench, turns, targets, both, settings)
    sitting = Sitting(pair, both, settings, first=random.Random(plan.seed).choice(["base", "head"]))
    runs = [(s, r) for s in scenarios for r in s.runs]
    ends_at = time.monotonic() + plan.budget_s
    try:
        for index, (scenario, load_run) in enumerate(runs):
            share = (ends_at - time.monotonic()) / (len(runs) - index)
            result = sitting.compare_run(scenario, load_run, share, restart_first=index > 0)
            results.append(judged(result, store, sides))
            store.update_conditions(versus={**store.run.conditions["versus"], "results": results})
            if bench.dead:
                break
    finally:
        turns.wake_all()
        for side in both:
            readiness.memory_after(side.server.name)
    return results


def start_outside(session: Session, store: RunStore, server: Server, paths: list[str]) -> Target | None:
    """An outside server up (runtime/starting.py waits for its `ready_path`) and each of `paths` answering 200 with a
    body, as a Target; None, said and recorded, when it could not start or a path answered otherwise."""
    try:
        running = session.ensure(server)
    except RuntimeFailure as exc:
        fail(str(exc))
        store.set_server(server.name, {"started": False, "error": str(exc), "outside": True})
        return None
    wrong = [f"GET {p}: {why}" for p in dict.fromkeys(paths) if (why := _not_answering(running.host, running.port, p))]
    store.set_server(
        server.name,
        {
            "started": True,
            "outside": True,
            "stack": server.stack,
            "port": running.port,
            "runtime": session.runtime.name,
            "cpus": running.cpus,
            "log": running.log,
            "contract": "not checked: an outside implementation, whose paths must answer 200 with a body",
            **({"error": "; ".join(wrong)} if wrong else {}),
        },
    )
    if wrong:
        fail(f"{server.name} is not measured: {'; '.join(wrong)}")
        return None
    return Target(server, running)


def _not_answering(host: str, port: int, path: str) -> str | None:
    """Why GET `path` is not a 200 with a body (None when it is)."""
    try:
        response = httpclient.get(host, port, path, timeout=2)
    except (OSError, httpclient.HttpError) as exc:
        return str(exc)
    if response.status == 200 and response.body:
        return None
    return f"answered {response.status} with {len(response.body)} bytes, not 200 with a body"


def judged(result: dict[str, Any], store: RunStore, sides: Sides) -> dict[str, Any]:
    """`result` with each metric's verdict line given its evidence (evidence.py), and whether it reached an answer."""
    both = (sides.base, sides.head)
    records = {r.server: r for r in store.run.records if r.scenario == result["scenario"] and r.run == result["run"]}
    cv = steadiness.worst_cv(store.run.conditions.get("steadiness", {}).get("before"))
    by_start = {metric: ratios_by_start(both, result["starts"], metric) for metric in result["metrics"]}
    intervals = {metric: paired.grouped_interval(ratios) for metric, ratios in by_start.items()}
    shown = {"base": "A", "head": "B"} if sides.names else {}  # a duel says its sides as A and B
    proof = evidence.Evidence(
        tuple(  # type: ignore[arg-type]
            evidence.side_evidence(shown.get(s.role, s.role), s.server.name, s.attempts, records.get(s.server.name))
            for s in both
        ),
        len([s for s in result["starts"] if s]),
        cv,
        evidence.rounds_spread(by_start["rps"]),
        evidence.starts_spread(by_start["rps"]),
        result.get("rounds_per_start"),
    )
    for metric, figures in result["metrics"].items():
        line = evidence.verdict_line(intervals[metric], metric, proof, sides.names)
        said = figures.get("speed_note") if evidence.withheld(proof) is None else None
        figures["verdict"] = f"{line} — {said}" if said else line
    metric, why = evidence.headline([records.get(s.server.name) for s in both])
    return {
        **result,
        "answer": {"metric": metric, "why": why, "verdict": result["metrics"][metric]["verdict"]},
        "reached": evidence.reached(intervals[metric], proof),
        "evidence": {
            "machine_cv": cv,
            "rounds_spread": proof.rounds_spread,
            "starts_spread": proof.starts_spread,
            "sides": {
                s.role: {"good": s.good, "errors": s.errors, "loadgen_saturated": s.saturated} for s in proof.sides
            },
        },
    }


def time_text(result: dict[str, Any]) -> str:
    """A run's seconds by what they went to, and the spreads the interval is made of."""
    t, spread = result.get("timing") or {}, result.get("evidence") or {}
    restarts, warmups = sum(t.get("restart_s") or []), sum(t.get("warmup_s") or [])
    rounds = (t.get("round_s") or 0) * result["rounds"]
    parts = [
        f"restarts {restarts:.0f} s",
        f"warm-ups {warmups:.0f} s",
        f"rounds {rounds:.0f} s",
        f"of {result['seconds']:g} s",
    ]
    sds = [
        f"{name} ±{value:.1%}"
        for name, value in (
            ("a round's ratio", spread.get("rounds_spread")),
            ("a start's mean", spread.get("starts_spread")),
        )
        if value
    ]
    return ", ".join(parts) + (f"; spread: {', '.join(sds)}" if sds else "")


def announce(results: list[dict[str, Any]]) -> None:
    """The answer, printed last: per scenario and run, the figure that answers (evidence.headline) and the verdict for
    req/s, p99 and CPU per request, then where the time went."""
    if not results:
        warn("nothing was compared")
    for r in results:
        say(
            f"{r['scenario']} {r['run']} ({r['rounds']} rounds in {len(r['starts'])} starts, {r['seconds']:g} s; "
            f"{r['stopped']}):"
        )
        answer = r.get("answer") or {}
        if answer:
            say(f"  ANSWER, by {paired.METRICS[answer['metric']][1]}: {answer['verdict']}\n    ({answer['why']})")
        for metric, (_, title, _, _) in paired.METRICS.items():
            say(f"  {title}: {r['metrics'][metric]['verdict']}")
        say(f"  where the time went: {time_text(r)}")
        if not r["reached"]:
            warn(f"{r['scenario']} {r['run']}: no answer (see above); exit status 1")
