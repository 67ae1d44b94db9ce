"""One scenario measured on the servers of a campaign: warm-ups, then rounds of one attempt per server (the first server
of a round rotating), each attempt kept at once; records whose attempts still climb or fall measured again within the
run's budget; the flags evaluated."""
from __future__ import annotations

import math
import time

from harness.basics.messages import say, warn
from harness.config.scenarios import LoadRun, Scenario, Settings
from harness.measuring.attempts import Bench, Target, aggregate, attempt, load_key, pattern, warm_from, warm_up
from harness.measuring.clock import (
    ATTEMPT_OVERHEAD_S,
    Clock,
    attempt_seconds,
    jit_warmup_seconds,
    warmed_runs,
    warmup_seconds,
)
from harness.results import capacity, flags
from harness.results.records import Attempt, Warmup
from harness.results.store import RunStore


def measure_in_rounds(bench: Bench, clock: Clock, members: list[Target], scenario: Scenario, settings: Settings) -> None:
    """Warm-ups, then `repeat` rounds of one attempt per server (one server: its attempts back to back). A server that
    dies (measurement.Bench.died) gets the record of what it did, and no further round, run or warm-up."""
    repeat = scenario.repeat(settings)
    warmups: dict[str, Warmup] = {}
    warm_before = {id(r) for r in warmed_runs(scenario)}
    for run in scenario.runs:
        members = [t for t in members if t.name not in bench.dead]
        if not members:
            return
        if id(run) in warm_before:
            for t in members:
                last = bench.last_load.get(t.name)
                if last and last[0] == load_key(scenario, run, t.server):
                    warmups[t.name] = warm_from(last[1], last[2], scenario.tool)
                    say(f"  {t.name} {scenario.name} {run.label}: no warm-up, the same load as {last[1]} just before")
                    continue
                first = (t.name, pattern(scenario, run)) not in bench.warmed
                bench.warmed.add((t.name, pattern(scenario, run)))
                warmups[t.name] = warm_up(bench, t, scenario, run, settings.warmup, first)
                clock.advance(warmup_seconds(scenario, settings) + (jit_warmup_seconds(t.server, scenario, run)
                                                                    if first else 0.0))
        attempts: dict[str, list[Attempt]] = {t.name: [] for t in members}
        for n in range(1, repeat + 1):
            alive = [t for t in members if t.name not in bench.dead]
            if not alive:
                break
            shift = (n - 1) % len(alive)
            turn = alive[shift:] + alive[:shift]  # whoever went first last round goes later this one
            for position, t in enumerate(turn, 1):
                attempts[t.name].append(attempt(bench, t, scenario, run, n, repeat, warmups[t.name].rate,
                                                (position, len(turn)) if len(turn) > 1 else None))
                clock.advance(attempt_seconds(run) + ATTEMPT_OVERHEAD_S)
                if n < repeat:  # an interrupt loses no attempt (the last one's record is written just below)
                    keep(bench, t, scenario, run, attempts[t.name], warmups[t.name], repeat)
        for t in members:  # complete now (a server that died has its failure): what remeasure does is added after
            keep(bench, t, scenario, run, attempts[t.name], warmups[t.name], repeat, complete=True)
        for t in members:
            if t.name not in bench.dead:
                again = remeasure(bench, clock, t, scenario, run, repeat, attempts[t.name], settings)
                if again:
                    keep(bench, t, scenario, run, attempts[t.name], warmups[t.name], repeat, again, complete=True)
        for t in members:
            measured = [a for a in attempts[t.name] if a.measured]
            bench.last_load[t.name] = (load_key(scenario, run, t.server), f"{scenario.name} {run.label}",
                                       measured[-1].rps if measured else warmups[t.name].rate)
        evaluate_flags(bench.store)
    if any(r.rate_share for r in scenario.runs):
        record_capacity(bench.store, bench.store.run.conditions.get("slo_p99_ms") or capacity.slo_from_env())


def keep(bench: Bench, t: Target, scenario: Scenario, run: LoadRun, attempts: list[Attempt], warmup: Warmup, repeat: int,
         remeasured: dict | None = None, complete: bool = False) -> None:
    """`t`'s record of `run` with the attempts taken so far, written to results.json (in place of the one written after
    its previous attempt): a record is kept from its first attempt on, marked incomplete until all were taken."""
    record = aggregate(t.server, scenario, run, scenario.path_for(t.server), attempts, warmup,
                       bench.session.runtime.name, bench.round_no)
    record.remeasured = remeasured
    if not attempts:
        record.failed = f"the server died before its first attempt: {bench.dead.get(t.name, 'it was gone')}"
    elif not complete and len(attempts) < repeat:
        record.incomplete = f"{len(attempts)} of {repeat} attempts: the run ended before the rest"
    bench.store.put_record(record)


def remeasure(bench: Bench, clock: Clock, t: Target, scenario: Scenario, run: LoadRun, repeat: int,
              attempts: list[Attempt], settings: Settings) -> dict | None:
    """Where `t`'s attempts climbed or fell beyond the noise (harness.basics.trend, the rule of the warming and drifting
    flags) and the run's re-measuring time allows: a further warm-up until settled, then `repeat` attempts back to back
    that replace `attempts` (the others sleep meanwhile); not the ceiling (never ranked, it keeps its flag), and not once
    the campaign's time budget (`budget_s`) would be overrun by it with what is still planned. Returns
    what the record keeps of the first attempts, or None when nothing was measured again."""
    found = flags.attempts_trend(attempts)
    if not found or not found.moving or t.server.has_role("ceiling"):  # the ceiling is never ranked: flagged only
        return None
    rates = [a.rps for a in attempts if a.measured]
    label = (f"  {t.name} {scenario.name} {run.label}: attempts {' → '.join(f'{r:,.0f}' for r in rates)} req/s, "
             f"{found.kind}")
    needed = (settings.warmup.window * (settings.warmup.duration_s + ATTEMPT_OVERHEAD_S)
              + repeat * (attempt_seconds(run) + ATTEMPT_OVERHEAD_S))
    budget = bench.budget_left() if bench.budget_left else math.inf
    if needed > min(bench.remeasure_left_s, budget):
        why = (f"{max(budget, 0):.0f} s left in the run's time budget beyond what is still to measure"
               if budget < bench.remeasure_left_s else f"{bench.remeasure_left_s:.0f} s of the run's re-measuring time left")
        say(f"{label}; not measured again ({why}, about {needed:.0f} s needed): flagged {found.kind}")
        return None
    say(f"{label}: warmed further and measured again")
    started = time.monotonic()
    clock.plan(needed)
    warmup = warm_up(bench, t, scenario, run, settings.warmup, False)
    again = [attempt(bench, t, scenario, run, n, repeat, warmup.rate, None) for n in range(1, repeat + 1)]
    clock.advance(needed)
    bench.remeasure_left_s = max(0.0, bench.remeasure_left_s - (time.monotonic() - started))
    attempts[:] = again
    return {"why": found.describe(), "first_attempts": rates, "warmup": warmup.to_dict(),
            "note": "measured again back to back after a further warm-up; the first attempts are not used"}


def record_capacity(store: RunStore, slo_p99_ms: float) -> None:
    """Each server's capacity at the latency target (harness.results.capacity), in its servers entry, and said."""
    for name, by_scenario in capacity.of_run(store.run, slo_p99_ms).items():
        store.set_server(name, {**store.run.servers.get(name, {}), "capacity": by_scenario})
        for scenario, c in by_scenario.items():
            if c["rps"]:
                say(f"  {name} {scenario}: capacity {c['rps']:,.0f} req/s at p99 ≤ {slo_p99_ms:g} ms "
                    f"(step {c['step']}, p99 {c['p99_ms']:.2f} ms)" + (" — at least: " + c["why"] if c["lower_bound"] else ""))
            else:
                warn(f"{name} {scenario}: no capacity at p99 ≤ {slo_p99_ms:g} ms: {c['why']}")


def evaluate_flags(store: RunStore) -> None:
    flags.evaluate(store.run)
    store.save()
