"""A record's attempts judged against the other servers of its rounds: the rule of the warming and drifting flags, and
of measuring a record again (measuring/scheduler.py).

Every server of an interleaved round meets the same machine within seconds, and the machine moves: its shared effect
can swing by a fifth round to round within a group and climb through whole scenarios, servers without a JIT with the
JVMs (docs/noise.md). Judged on its own rates, a record then "still climbs" because the machine did. So each
attempt is divided by its round's shared effect: the median, over the other servers of the group bound on the same CPU
(the host slows each CPU alone), of their deviation from their own mean (a median: one warming neighbour does not move
it; half of them would). `python -m harness.judging.round_trend <results.json>...` counts both readings over runs;
what they came to is in docs/noise.md.
A record measured back to back (measured again, or alone) has no round-mates: it is judged on its own rates.
"""

from __future__ import annotations

import math
import statistics
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from harness.judging.noise import bound_role_of, groups_of, ln_by_round
from harness.results.flag_kinds import TREND_TOLERANCE
from harness.results.records import Attempt, Record, load
from harness.stats import trend

MIN_MATES = 3  # fewer other servers in a round: their median is no reading of the machine


def _deviations(attempts: list[Attempt]) -> dict[int, float]:
    """ln req/s of each attempt taken in a round, its own mean removed."""
    rounds = ln_by_round(attempts)
    mean = sum(rounds.values()) / len(rounds) if rounds else 0.0
    return {n: x - mean for n, x in rounds.items()}


def against_mates(mine: list[Attempt], mates: list[list[Attempt]]) -> tuple[list[float], int] | None:
    """`mine`'s measured req/s in attempt order, each divided by its round's shared effect, and how many mates read it:
    those bound on the same CPU (noise.bound_role_of; all alike where no CPU's speed was read), since the host slows
    each CPU alone; None where one of its measured attempts was not taken in a round, or a round has fewer than
    MIN_MATES mates."""
    rounds = ln_by_round(mine)
    measured = [a for a in mine if a.measured]
    if not rounds or len(rounds) < len(measured):
        return None
    role = bound_role_of(mine)
    others = [d for m in mates if bound_role_of(m) == role and (d := _deviations(m))]
    values = []
    for n in sorted(rounds):
        seen = [d[n] for d in others if n in d]
        if len(seen) < MIN_MATES:
            return None
        values.append(math.exp(rounds[n] - statistics.median(seen)))
    return values, len(others)


def judged(mine: list[Attempt], mates: list[list[Attempt]], tolerance: float) -> tuple[trend.Trend, int] | None:
    """The trend of `mine`'s attempts (three or more) against its round-mates, and how many they were; on its own
    rates (0 mates) where it has none to be judged against."""
    relative = against_mates(mine, mates)
    values, count = relative if relative else ([a.rps for a in mine if a.measured and a.rps], 0)
    if len(values) < 3:
        return None
    return trend.classify(values, tolerance), count


def mates_of(records: list[Record]) -> dict[int, list[list[Attempt]]]:
    """Each record's round-mates (the other records of its group, noise.groups_of: their attempts), by id(record)."""
    return {id(r): [m.attempts for m in group if m is not r] for group in groups_of(records) for r in group}


def runs_on_a_jvm(description: dict[str, Any]) -> bool:
    """A server whose recorded version names the JRE it ran on (the JVM manifests' `version` prints it)."""
    return " JRE " in str(description.get("version", ""))


def main(paths: list[str]) -> None:
    """The tally in this module's doc: records flagged on their own rates → against their round-mates."""
    tally: Counter[tuple[str, str, str]] = Counter()
    for path in paths:
        run = load(Path(path))
        records = run.records
        mates_by_id = mates_of(records)
        for group in groups_of(records):
            for r in group:
                alone = judged(r.attempts, [], TREND_TOLERANCE)
                mates = judged(r.attempts, mates_by_id[id(r)], TREND_TOLERANCE)
                if alone and mates and mates[1]:
                    kind = "JVM" if runs_on_a_jvm(run.servers.get(r.server, {})) else "without a JIT"
                    tally[kind, alone[0].kind, mates[0].kind] += 1
    for (kind, alone_kind, mates_kind), n in sorted(tally.items()):
        print(f"{kind}: {alone_kind} on its own rates, {mates_kind} against its round-mates: {n}")


if __name__ == "__main__":
    main(sys.argv[1:])
