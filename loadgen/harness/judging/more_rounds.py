"""More rounds where they decide something (issue 41): after a run's rounds, the neighbours (by median req/s) that its
group's rule leaves tied, where a few more rounds would likely tell them apart, are measured again in further
interleaved rounds, all of them in each round as before (their records then compare over more rounds, paired or by
intervals, whichever the group's rule is: harness.judging.round_pairs); records already apart, and pairs too close
for the rounds the run can afford to tell apart (the A/A twin, most of the time), get none.

Likely: the chance that the rule orders a pair as far apart as it was measured, over the rounds it would then have
(round_pairs.power), at least WANTED_POWER, the pair's noise read from the whole group (its own part where the group
pairs, its whole variance where it is ordered by intervals), never from the pair itself. The rounds are taken once,
after the first look, never again after the second: each look at a pair is a chance of a false order, so the looks
are kept to two (the A/A twin, judged like every pair, measures what that costs in every run).

Within the run's time budget: a run spends at most its share of what the budget leaves beyond what is still planned,
in proportion to its own attempts' time among those still to come (measuring/clock.py's SPEND of it), and at most
MAX_EXTRA_ROUNDS rounds."""

from __future__ import annotations

import math
from dataclasses import dataclass

from harness.judging import noise, ranking, round_pairs
from harness.judging.round_pairs import GroupRule, group_rule, power
from harness.results.records import Record

MAX_EXTRA_ROUNDS = 4
WANTED_POWER = 0.5  # at least an even chance that the rounds decide the pair


@dataclass(frozen=True)
class Extension:
    """The servers to measure in further rounds (in the order of the group), and how many rounds."""

    servers: tuple[str, ...]
    rounds: int


def undecided(records: list[Record], rounds_after: int) -> list[str]:
    """The servers of the neighbour pairs (by median req/s) the group's rule leaves tied that `rounds_after` rounds
    would likely order (see the module's docstring), in the order of `records`."""
    ranked = sorted(
        (r for r in records if ranking.takes_part(r) and noise.rounds_of(r) and not ranking.is_lower_bound(r)),
        key=lambda r: r.rps or 0.0,
    )
    group = group_rule(ranked)
    if group.sharing is None:  # fewer than three servers or two rounds: no noise to judge the pairs by
        return []
    chosen: set[str] = set()
    for low, high in zip(ranked, ranked[1:]):
        rule = group.for_pair(high, low)  # on the CPU's speed where both are bound on one (round_pairs.by_speed)
        assert rule.sharing is not None  # the rule as measured has a sharing wherever the group's has
        if ranking.above_in(group, high, low) or ranking.above_in(group, low, high) or not (low.rps and high.rps):
            continue
        sd = math.sqrt(rule.sharing.own if rule.paired else rule.sharing.own + rule.sharing.shared)
        if power(apart(high, low, rule), sd, rounds_after) >= WANTED_POWER:
            chosen |= {low.server, high.server}
    return [r.server for r in records if r.server in chosen]


def apart(high: Record, low: Record, rule: GroupRule) -> float:
    """How far apart the pair's rule (GroupRule.for_pair) sees two records (a fraction): their ratio round by round
    where it pairs, else their medians'."""
    found = round_pairs.paired_interval(high, low, rule.by_speed) if rule.paired else None
    ratio = found.ratio if found else (high.rps or 0.0) / (low.rps or 1.0)
    return max(ratio, 1 / ratio) - 1 if ratio > 0 else 0.0


def extension(records: list[Record], repeat: int, round_s: float, share_s: float) -> Extension | None:
    """The further rounds a run's group gets: the undecided servers (above) at as many rounds as `share_s` seconds
    pay for, each server's attempt costing `round_s`, at most MAX_EXTRA_ROUNDS; None where nothing would be decided
    or nothing can be afforded."""
    for extra in range(MAX_EXTRA_ROUNDS, 0, -1):
        servers = undecided(records, repeat + extra)
        if servers and len(servers) * round_s * extra <= share_s:
            return Extension(tuple(servers), extra)
    return None
