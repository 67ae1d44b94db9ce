"""Where a bench's noise is: the part of an attempt's spread that the servers of its round share (the machine's drift,
which comparing servers round by round removes) and the part that is the attempt's own (which only more or longer
attempts reduce), read from a recorded run's interleaved rounds (issue 41; README, "Where the noise is").

The model, on the log scale (a drift slows every server by the same factor): attempt k of server s reads
    ln rps[s, k] = server[s] + shared[k] + own[s, k]
over the rounds k that every server of a group has. It is a two-way layout without replication, read as in any
textbook analysis of variance: the own variance is the residual mean square (after the server and round means), the
shared variance the rounds' mean square less its own part, divided by the servers (method of moments, floored at 0).
A server that still climbs from round to round (a JVM warming) shows in its own part, not the shared one.

`round_sharing` is what the ranking reads (harness.judging.round_pairs); `main` prints the figures of recorded runs:
    python -m harness.judging.noise ../results/*-bench/results.json   (from loadgen/; any run's results.json)
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from harness.results.records import Attempt, Record, load


@dataclass(frozen=True)
class Sharing:
    """A group's variances of ln req/s per attempt: `shared` by the servers of a round, `own` to each attempt."""

    shared: float
    own: float
    servers: int
    rounds: int

    @property
    def shared_fraction(self) -> float:
        total = self.shared + self.own
        return self.shared / total if total > 0 else 0.0


ROLES = ("server", "loadgen")  # the CPUs whose speed an attempt keeps (CPU_METER=1)


def busiest_role(attempt: Attempt) -> str | None:
    """The busier of the server's and the load generator's roles during `attempt` (CPU_METER=1), the one its rate is
    bound on (docs/cpu-speed.md); None where either CPU's speed was not read."""
    read = {r: s for r in ROLES if (s := attempt.samples.get(r)) and s.cpu_speed and s.cpu_util is not None}
    return max(read, key=lambda r: read[r].cpu_util or 0) if len(read) == 2 else None


def bound_role(record: Record) -> str | None:
    """The role whose CPU `record`'s rate is bound on: the busier one over its measured attempts, which must all have
    both CPUs' speeds (else None). Two servers bound on one CPU are compared on rates divided by that CPU's speed
    (round_pairs.by_speed): its meter's level, whatever it is, is then the same for both and cancels."""
    return bound_role_of(record.attempts)


def bound_role_of(attempts: list[Attempt]) -> str | None:
    """bound_role over `attempts` (a record's, or one build's in `make versus`)."""
    taken = [a for a in attempts if a.measured and a.rps]
    if not taken or not all(busiest_role(a) for a in taken):
        return None
    return max(ROLES, key=lambda role: sum(a.samples[role].cpu_util or 0.0 for a in taken))


def speed_of(attempt: Attempt, role: str | None) -> float | None:
    """`attempt`'s speed of `role`'s CPU (None: as measured, 1)."""
    if role is None:
        return 1.0
    sample = attempt.samples.get(role)
    return sample.cpu_speed if sample else None


def rounds_of(record: Record, by_speed: bool = False) -> dict[int, float]:
    """ln req/s of each of `record`'s attempts taken in an interleaved round, by round; none where its attempts were
    measured again back to back (scheduler.remeasure: they left the rounds). `by_speed`: each divided by the speed of the
    CPU the record is bound on (bound_role); none where it has no such role."""
    role = bound_role(record) if by_speed else None
    if record.remeasured or (by_speed and role is None):
        return {}
    return ln_by_round(record.attempts, role)


def ln_by_round(attempts: list[Attempt], role: str | None = None) -> dict[int, float]:
    """ln req/s of each measured attempt taken in an interleaved round, by its attempt number; `role`: each divided
    by the speed of that role's CPU (none where it was not read)."""
    out = {}
    for a in attempts:
        if a.measured and a.rps and a.rps > 0 and a.round_position is not None:
            if speed := speed_of(a, role):
                out[a.attempt] = math.log(a.rps / speed)
    return out


def common_rounds(records: list[Record], by_speed: bool = False) -> tuple[list[Record], list[int]]:
    """The records with rounds and the rounds every one of them has."""
    with_rounds = [r for r in records if rounds_of(r, by_speed)]
    if not with_rounds:
        return [], []
    shared = set.intersection(*(set(rounds_of(r, by_speed)) for r in with_rounds))
    return with_rounds, sorted(shared)


def _table(records: list[Record], by_speed: bool = False) -> list[list[float]]:
    """Each record's ln req/s over the common rounds, its own mean removed."""
    members, rounds = common_rounds(records, by_speed)
    rows = [[rounds_of(r, by_speed)[k] for k in rounds] for r in members]
    return [[x - sum(row) / len(row) for x in row] for row in rows]


def _effects(table: list[list[float]]) -> list[float]:
    """Each common round's shared effect: the mean of the servers' deviations from their own means."""
    return [sum(row[k] for row in table) / len(table) for k in range(len(table[0]))] if table else []


def round_sharing(records: list[Record], by_speed: bool = False) -> Sharing | None:
    """The shared and own variances of one group's attempts (three servers and two common rounds at least)."""
    table = _table(records, by_speed)
    servers, rounds = len(table), len(table[0]) if table else 0
    if servers < 3 or rounds < 2:
        return None
    effects = _effects(table)
    residual = sum((row[k] - effects[k]) ** 2 for row in table for k in range(rounds))
    own = residual / ((servers - 1) * (rounds - 1))
    between = servers * sum(e * e for e in effects) / (rounds - 1)
    return Sharing(max(0.0, (between - own) / servers), own, servers, rounds)


def pooled(sharings: list[Sharing]) -> Sharing | None:
    """The groups' variances pooled, each weighted by its degrees of freedom."""
    own_df = sum((s.servers - 1) * (s.rounds - 1) for s in sharings)
    round_df = sum(s.rounds - 1 for s in sharings)
    if not own_df or not round_df:
        return None
    own = sum(s.own * (s.servers - 1) * (s.rounds - 1) for s in sharings) / own_df
    shared = sum(s.shared * (s.rounds - 1) for s in sharings) / round_df
    return Sharing(shared, own, sum(s.servers for s in sharings), sum(s.rounds for s in sharings))


def _seconds(stamp: str | None) -> float | None:
    try:
        return datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%S%z").timestamp() if stamp else None
    except ValueError:
        return None


def round_effects(records: list[Record]) -> list[tuple[float, float]]:
    """(when, shared effect) of each common round of a group: its first attempt's start and the mean of the servers'
    deviations from their own means."""
    members, rounds = common_rounds(records)
    effects = _effects(_table(records))
    out = []
    for k, n in enumerate(rounds):
        starts = [t for r in members for a in r.attempts if a.attempt == n and (t := _seconds(a.started_at))]
        if starts and effects:
            out.append((min(starts), effects[k]))
    return out


def correlation(pairs: list[tuple[float, float]]) -> float | None:
    if len(pairs) < 3:
        return None
    mx, my = (sum(p[i] for p in pairs) / len(pairs) for i in (0, 1))
    sxy = sum((x - mx) * (y - my) for x, y in pairs)
    sxx, syy = (sum((p[i] - m) ** 2 for p in pairs) for i, m in ((0, mx), (1, my)))
    return sxy / math.sqrt(sxx * syy) if sxx > 0 and syy > 0 else None


def successive_rounds(groups: list[list[Record]]) -> list[tuple[float, float]]:
    """The shared effects of each round and the next of its group (pairs), for their correlation over time. Each
    group's effects sum to 0, which biases their correlation by about −1/(rounds − 1); `within_round_lag` has
    none."""
    pairs: list[tuple[float, float]] = []
    for records in groups:
        effects = [e for _, e in sorted(round_effects(records))]
        pairs += list(zip(effects, effects[1:]))
    return pairs


def within_round_lag(groups: list[list[Record]], apart: tuple[int, int]) -> float | None:
    """How alike two servers' deviations (each from its own mean) are within one round when their turns are
    `apart[0]` to `apart[1]` positions apart: the mean product over the variance of the deviations. Near 1: the
    machine's state carries over that many turns; near 0: each turn meets a machine of its own."""
    products, squares = [], []
    for records in groups:
        members, rounds = common_rounds(records)
        table = _table(records)
        for k, n in enumerate(rounds):
            turns = [
                (a.round_position[0], table[i][k])
                for i, r in enumerate(members)
                for a in r.attempts
                if a.attempt == n and a.round_position
            ]
            squares += [d * d for _, d in turns]
            products += [d1 * d2 for p1, d1 in turns for p2, d2 in turns if apart[0] <= p2 - p1 <= apart[1]]
    if not products or not squares:
        return None
    return (sum(products) / len(products)) / (sum(squares) / len(squares))


def groups_of(records: list[Record]) -> list[list[Record]]:
    """The records measured in one set of rounds (one scenario run, tool, runtime, round of a run in rounds)."""
    found: dict[tuple[str, str, str | None, str | None, int | None], list[Record]] = {}
    for r in records:
        if not r.failed:
            found.setdefault((r.scenario, r.run, r.tool, r.runtime, r.round), []).append(r)
    return list(found.values())


def describe_run(path: Path) -> str:
    """One line of figures for a recorded run (README, "Where the noise is")."""
    run = load(path)
    groups = groups_of(run.records)
    sharing = pooled([s for g in groups if (s := round_sharing(g))])
    lengths = sorted({float(r.load.get("duration_s") or 0) for g in groups for r in g})
    probe = run.conditions.get("steadiness") or {}
    cvs = [c for when in ("before", "after") for c in ((probe.get(when) or {}).get("cv") or {}).values()]
    if sharing is None:
        return f"{path.parent.name}: no interleaved rounds"
    near, far = within_round_lag(groups, (1, 1)), within_round_lag(groups, (4, 20))
    lag = correlation(successive_rounds(groups))
    return (
        f"{path.parent.name}: attempts {'/'.join(f'{x:g}' for x in lengths)} s, probe CV "
        f"{min(cvs, default=0):.0%}–{max(cvs, default=0):.0%}; "
        f"per attempt: shared {math.sqrt(sharing.shared):.1%}, "
        f"own {math.sqrt(sharing.own):.1%} (shared {sharing.shared_fraction:.0%} of the variance); "
        f"alike within a round: next turn {_figure(near)}, 4+ turns apart {_figure(far)}; "
        f"shared effect, round to round: r = {_figure(lag)}"
    )


def by_length(groups: list[list[Record]]) -> str:
    """The own and shared parts per attempt length (the load's duration): whether longer attempts are steadier."""
    lengths: dict[float, list[Sharing]] = {}
    for g in groups:
        if (s := round_sharing(g)) is not None:
            lengths.setdefault(float(g[0].load.get("duration_s") or 0), []).append(s)
    parts = []
    for length, found in sorted(lengths.items()):
        p = pooled(found)
        if p is not None:
            parts.append(
                f"{length:g} s ({len(found)} groups): own {math.sqrt(p.own):.1%}, shared {math.sqrt(p.shared):.1%}"
            )
    return "; ".join(parts)


def _figure(x: float | None) -> str:
    return "–" if x is None else f"{x:+.2f}"


def by_speed(groups: list[list[Record]]) -> str | None:
    """The own and shared parts per attempt over the groups whose attempts have each CPU's speed (CPU_METER=1), as
    measured and with each attempt's rate divided by the speed of the CPU its server is bound on; None where no attempt
    has it."""
    pairs = [(s, a) for g in groups if (a := round_sharing(g, by_speed=True)) and (s := round_sharing(g))]
    raw, adjusted = pooled([s for s, _ in pairs]), pooled([a for _, a in pairs])
    if raw is None or adjusted is None:
        return None
    return (
        f"{len(pairs)} groups with each CPU's speed: own {math.sqrt(raw.own):.1%}, shared {math.sqrt(raw.shared):.1%}; "
        f"divided by its CPU's speed: own {math.sqrt(adjusted.own):.1%}, shared {math.sqrt(adjusted.shared):.1%}"
    )


def by_server(groups: list[list[Record]]) -> str:
    """Each server's own part per attempt: its residuals' sum of squares over its share of the degrees of freedom,
    (rounds − 1)(servers − 1)/servers a group, pooled over the groups. Alike for servers with and without a JIT: the
    machine's; one server far above the rest: its own."""
    squares: dict[str, float] = {}
    dof: dict[str, float] = {}
    for records in groups:
        members, _ = common_rounds(records)
        table = _table(records)
        servers, rounds = len(table), len(table[0]) if table else 0
        if servers < 3 or rounds < 2:
            continue
        effects = _effects(table)
        for record, row in zip(members, table):
            squares[record.server] = squares.get(record.server, 0.0) + sum((x - e) ** 2 for x, e in zip(row, effects))
            dof[record.server] = dof.get(record.server, 0.0) + (rounds - 1) * (servers - 1) / servers
    return ", ".join(f"{name} {math.sqrt(squares[name] / dof[name]):.1%}" for name in sorted(squares))


def main(paths: list[str]) -> None:
    for path in paths:
        groups = groups_of(load(Path(path)).records)
        print(describe_run(Path(path)))
        print("  by attempt length: " + by_length(groups))
        print("  own, by server: " + by_server(groups))
        if (speeds := by_speed(groups)) is not None:
            print("  " + speeds)


if __name__ == "__main__":
    main(sys.argv[1:])
