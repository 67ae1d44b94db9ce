"""Capacity at a latency target: from a stepped open-model scenario (latency), the highest rate each server was offered
and sustained, the number a capacity planner asks for.

A step is sustained when it had no errors, its achieved rate was at least flag_kinds.RATE_HELD of the offered one, and its
p99 (measured from each request's planned start) was within the target. A step whose load generator could not hold the
rate (flag `rate-not-held`), or whose load generator was saturated, says nothing of the server: when the first step
above the capacity is such a step, the capacity is only a lower bound, and says so. Pure functions of the records, so
the report computes them again from an older results.json.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from harness.basics.messages import say, warn
from harness.config.environment import DEFAULT_SLO_P99_MS
from harness.judging import flags
from harness.results import flag_kinds as kinds
from harness.results.records import Record, Run

if TYPE_CHECKING:  # annotations only
    from harness.results.store import RunStore

SLO_ENV = "SLO_P99_MS"


class CapacityError(Exception):
    pass


def slo_from_env() -> float:
    """The p99 target from SLO_P99_MS (default 10 ms)."""
    raw = os.environ.get(SLO_ENV) or str(DEFAULT_SLO_P99_MS)
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not value > 0:
        raise CapacityError(f"{SLO_ENV}={raw!r}: give the p99 latency target in milliseconds, e.g. {SLO_ENV}=10")
    return value


def step_verdict(record: Record, slo_p99_ms: float) -> str | None:
    """None when the step was sustained within the target, else why not."""
    offered: float = flags.offered_rps(record)  # type: ignore[assignment]  # a step of an open model has one
    if record.failed or record.rps is None:
        return "failed"
    if record.errors.total:
        return f"{record.errors.total:,} errors"
    if record.rps < kinds.RATE_HELD * offered:
        return f"achieved {record.rps / offered:.1%} of the offered rate"
    p99 = record.latency_ms.get("p99")
    if p99 is None:
        return "no p99"
    if p99 > slo_p99_ms:
        return f"p99 {p99:.1f} ms above {slo_p99_ms:g} ms"
    return None


def of_run(run: Run, slo_p99_ms: float) -> dict[str, dict[str, dict[str, Any]]]:
    """{server: {scenario: capacity}} for every stepped scenario of the run (records that carry an offered rate)."""
    steps: dict[tuple[str, str], list[Record]] = {}
    for record in run.records:
        if flags.offered_rps(record):
            steps.setdefault((record.server, record.scenario), []).append(record)
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for (server, scenario), records in steps.items():
        out.setdefault(server, {})[scenario] = of_steps(records, slo_p99_ms)
    return out


def of_steps(records: list[Record], slo_p99_ms: float) -> dict[str, Any]:
    """The capacity one server showed over one scenario's steps."""
    ordered = sorted(records, key=flags.offered_rps)  # type: ignore[arg-type]  # steps all have an offered rate
    why_not = [step_verdict(r, slo_p99_ms) for r in ordered]
    held = [r for r, why in zip(ordered, why_not) if why is None]
    best = held[-1] if held else None
    above = [r for r in ordered if best is None or flags.offered_rps(r) > flags.offered_rps(best)]  # type: ignore[operator]
    tool_bound = bool(above) and bool({kinds.RATE_NOT_HELD.name, kinds.LOADGEN_BOUND.name} & set(flags.names(above[0])))
    result = {
        "rps": flags.offered_rps(best) if best else None,
        "slo_p99_ms": slo_p99_ms,
        "step": best.run if best else None,
        "p99_ms": best.latency_ms.get("p99") if best else None,
        "path": ordered[0].path,
        "steps": [
            {
                "step": r.run,
                "offered_rps": flags.offered_rps(r),
                "achieved_rps": r.rps,
                "p99_ms": r.latency_ms.get("p99"),
                "errors": r.errors.total,
                "held": why is None,
                "why_not": why,
            }
            for r, why in zip(ordered, why_not)
        ],
        "lower_bound": tool_bound,
    }
    if best is None:
        result["why"] = f"no step held the rate within p99 ≤ {slo_p99_ms:g} ms without errors (lowest: {why_not[0]})"
    elif tool_bound:
        result["why"] = (
            f"the next step ({above[0].run}) measured the load generator, not the server: at least this much"
        )
    return result


def record(store: RunStore) -> None:
    """Each server's capacity at the run's latency target (SLO_P99_MS), in its servers entry of `store` (a RunStore),
    and said."""
    slo_p99_ms = store.run.conditions.get("slo_p99_ms") or slo_from_env()
    for name, by_scenario in of_run(store.run, slo_p99_ms).items():
        store.set_server(name, {**store.run.servers.get(name, {}), "capacity": by_scenario})
        for scenario, c in by_scenario.items():
            if c["rps"]:
                say(
                    f"  {name} {scenario}: capacity {c['rps']:,.0f} req/s at p99 ≤ {slo_p99_ms:g} ms "
                    f"(step {c['step']}, p99 {c['p99_ms']:.2f} ms)"
                    + (" — at least: " + c["why"] if c["lower_bound"] else "")
                )
            else:
                warn(f"{name} {scenario}: no capacity at p99 ≤ {slo_p99_ms:g} ms: {c['why']}")
