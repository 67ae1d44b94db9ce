"""What a tool's latency tail may carry that neither the server nor the tool did, each measured: the machine's stalls
(its CPUs taken away for 1 ms or more, read by the steadiness probe before and after the run) and the server's own
late answers (its account: how late its slowest answer left).

Why: on this project's 2-core VM both virtual CPUs lose 2-4 ms about once a second (the hypervisor's; a pinned loop of
clock reads shows it, the probe's speed over 1.25 s windows does not). A request in flight while either side's CPU is
taken away is held that much longer: at 500 req/s a few requests in a thousand, which is p99.9 and max. With the
calibrated server on time (its answers left at most 0.16 ms after due), burn's 16 ms read 18.5-19.8 ms at p99.9 and
max for every tool alike, and wrk's capped 8 ms 10.6 at p99.9: the tools measured the machine right.

A request is held by a stall when one of its moments on a CPU (its answer's write on the server's, its read on the
tool's) falls in one: the share of requests held is about the share of time the two CPUs were stalled (the probe's
`share`, both added), whatever the request's length (a 40 ms sleep is not held by a stall in its middle: oha's open
40 ms read p99.9 40.36). A tail figure above its known value is then judged within the tolerance plus the longest
stall where that share reaches the figure's own (p99.9: 0.1 %; p99: 1 %, which this machine's 0.4 % does not), max
within it, the server's own latest answer or the hypervisor's steal of the server's CPUs during the load (/proc/stat,
10 ms ticks: at most one stall that long), whichever is longest. Only upward: a stall adds, never takes. The
allowance is the probe's reading, not a constant: a machine that stalls longer allows more, one that does not stall
allows nothing."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

TAIL_SHARE = {"p99": 0.01, "p99.9": 0.001, "max": 0.0}  # the share of requests above each tail figure


@dataclass(frozen=True)
class Stalls:
    """The machine's stalls as its probes read them (the larger of the probes before and after the run): the share of
    the time both CPUs together were stalled, and the longest."""

    share: float
    worst_ms: float


def probe_stalls(conditions: dict[str, Any]) -> Stalls | None:
    """The run's stalls from its steadiness probes; None where none was probed (or by a probe that did not count them)."""
    readings = [r["stalls"] for r in (conditions.get("steadiness") or {}).values() if r and r.get("stalls")]
    if not readings:
        return None
    return Stalls(
        max(sum(s.get("share", 0.0) for s in r.values()) for r in readings),
        max(s["worst_ms"] for r in readings for s in r.values()),
    )


def allowance_ms(
    name: str, stalls: Stalls | None, late_max_ms: float | None, steal_ms: float | None = None
) -> tuple[float, str]:
    """How far above its known value figure `name` may read for what the machine and the server did, and why ("" and
    0 where nothing: not a tail figure, stalls too rare to reach its share, no late answer)."""
    share = TAIL_SHARE.get(name)
    if share is None:
        return 0.0, ""
    allowed, why = 0.0, []
    if stalls and stalls.worst_ms > 0 and stalls.share > share:
        allowed = stalls.worst_ms
        reach = f"more than the {share:.1%} of requests above {name}" if share else "one reaches the slowest request"
        why.append(
            f"the machine's stalls: its CPUs taken away {stalls.share:.2%} of the time, at worst {stalls.worst_ms:g} ms "
            f"(the steadiness probe), {reach}"
        )
    if name == "max" and late_max_ms and late_max_ms > allowed:
        allowed = late_max_ms
        why = [f"the server's own latest answer, {late_max_ms:.2f} ms after due (its account)"]
    if name == "max" and steal_ms and steal_ms > allowed:  # at most one stall that long: the attempt's whole steal
        allowed = steal_ms
        why = [f"the hypervisor's steal of the server's CPUs during the load, {steal_ms:g} ms (/proc/stat)"]
    return allowed, "; ".join(why)
