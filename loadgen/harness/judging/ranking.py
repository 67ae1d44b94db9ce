"""The one ordering rule: which server of a group is above which, from intervals, and the ranks that follow.

Who takes part: every record with a figure and an interval. The flags that keep a record out are those that declare
it (harness.results.flag_kinds: `kept_out()` says which), and a single attempt (REPEAT=1), whose interval is one
point: nothing is known of its uncertainty, so nothing can be ordered against it. `spread`,
`warming` and `drifting` widen or explain the interval but the record is ordered through it.

Two relations place B above A:
- **by rate:** B's attempts, less 4 % (what two processes of one server differ by), lie above A's
  (harness.stats.attempt_ranks): at most as many of their pairs of attempts inverted as identical servers show at
  the false-order rate; at 4 attempts each, none. A figure limited by the load generator (`loadgen-saturated`) or by
  the upstream (`upstream-limit`) is a lower bound: its interval is [low, ∞), so it is above every record whose
  interval lies wholly below its low end, and nothing is above it by rate.
- **by cost, where the load generator is the limit:** when at least one of the two is such a lower bound and their
  rate intervals overlap, the server's CPU per request decides: B is above A when B's cost interval (µs of server CPU
  per request) lies wholly below A's and B ran at a rate no higher than A's (within `EQUAL_RATE`). Why the rate
  condition: CPU per request falls as load rises (more work per wake-up), so a cost taken at a lower rate is an upper
  bound of the cost at a higher one; B cheaper at an equal or lower rate is cheaper at A's rate too. B cheaper only at
  a clearly higher rate proves nothing, and they stay tied.

Ranks are ranges, as the order is partial: a record's best possible place is 1 + the number of records surely above it
(directly or through others: the transitive closure of the two relations), its worst the count of records minus the
number surely below it. A record ordered against every other has one place ("2"); one whose interval overlaps others'
has a range ("1–5"): a wide interval gets a wide range, never a better-looking rank than a precise record below it.
So no record is ever placed below one whose interval lies wholly under its own, and a best (best place 1) has nothing
above it. Rows are listed by the middle of their range, then req/s.

How often this orders two identical servers: at most 2.9 % from 4 attempts on (the two-sided tail of the count
of inverted pairs, exact: 2.9 % with 4 attempts each, 1.6 % with 5, 2.6 % with 6; with 3 or fewer, the min–max
rule's 10 % or more, stated in the report).
Min–max intervals alone would order them 2·n!·n!/(2n)! of the time: 10 % with 3, 2.9 % with 4, 0.8 % with 5 (where
a further round made pairs harder to tell apart). The A/A twin of `make bench` checks the rate on every run.

**By paired rounds, where a group's rounds share enough of the noise** (harness.judging.round_pairs, issue 41): the
rate relation between two records that both have interleaved rounds and neither a lower bound is then their
round-by-round ratio's interval, held to the profiles' rate (2.9 %) whatever its rounds; the group's rule is chosen
from all its servers' rounds, never from the pair, and every export reads it from here (`GroupRule`,
`Standing.paired`, `ordered_by`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from harness.judging import noise, round_pairs
from harness.judging.round_pairs import GroupRule, group_rule
from harness.results import flag_kinds as kinds
from harness.results.records import Record
from harness.results.summary import measured
from harness.stats import attempt_ranks
from harness.stats import intervals as stats

# what keeps a record out and what makes its figure a lower bound: each flag declares it (flag_kinds)
EXCLUDING, LOWER_BOUND = kinds.EXCLUDING, kinds.LOWER_BOUND
EQUAL_RATE = 0.05  # rates within 5 % count as equal for the cost relation (the machine's own noise)


def takes_part(record: Record) -> bool:
    s = record.summary.rps if record.summary else None
    if record.rps is None or not s:
        return False
    return s.get("n", 0) >= 2 and not any(f.name in EXCLUDING for f in record.flags)


def is_lower_bound(record: Record) -> bool:
    return any(f.name in LOWER_BOUND for f in record.flags)


def rate_interval(record: Record) -> tuple[float, float] | None:
    """(low, high) of the req/s median's interval; high is ∞ for a lower bound."""
    found = stats.interval(record.summary.rps if record.summary else None)
    if not found:
        return None
    return found[0], math.inf if is_lower_bound(record) else found[1]


def cost_interval(record: Record) -> tuple[float, float] | None:
    return stats.interval(record.summary.cost_us if record.summary else None)


def attempt_rates(record: Record, by_speed: bool = False) -> list[float] | None:
    """The req/s of the attempts the record's figure is the median of (`by_speed`: each divided by the speed of the
    CPU the record is bound on); None where they are not all there (a record an older harness summarized from fewer
    attempts than it kept, or an attempt without its speeds)."""
    role = noise.bound_role(record) if by_speed else None
    if by_speed and role is None:
        return None
    taken = [a for a in measured(record.attempts) if a.rps is not None]
    rates = [a.rps / speed for a in taken if a.rps is not None and (speed := noise.speed_of(a, role))]
    n = record.summary.rps.get("n") if record.summary and record.summary.rps else None
    return rates if rates and len(rates) == n else None


def above_by_rate(b: Record, a: Record, by_speed: bool = False) -> bool:
    """B above A by rate: by their attempts' ranks (attempt_ranks; `by_speed`, of the rates divided by their CPU's
    speed), or, where either is a lower bound or lacks its attempts, B's interval wholly above A's."""
    rb, ra = attempt_rates(b, by_speed), attempt_rates(a, by_speed)
    if rb and ra and not (is_lower_bound(a) or is_lower_bound(b)):
        return attempt_ranks.above(rb, ra)
    ib, ia = rate_interval(b), rate_interval(a)
    return ib is not None and ia is not None and ib[0] > ia[1]


def above_by_cost(b: Record, a: Record) -> bool:
    if not (is_lower_bound(a) or is_lower_bound(b)) or above_by_rate(a, b) or above_by_rate(b, a):
        return False
    cb, ca = cost_interval(b), cost_interval(a)
    if not (cb and ca) or not a.rps or not b.rps:
        return False
    return cb[1] < ca[0] and b.rps <= a.rps * (1 + EQUAL_RATE)


def above(b: Record, a: Record) -> bool:
    """B is directly above A by intervals (by rate, or by cost where the load generator is the limit)."""
    return above_by_rate(b, a) or above_by_cost(b, a)


def pairable(record: Record, rule: GroupRule) -> bool:
    """Whether `record` is compared by paired rounds in its group: the group pairs, it was measured in the rounds
    (not again back to back) and its figure is no lower bound."""
    return rule.paired and not is_lower_bound(record) and bool(noise.rounds_of(record, rule.by_speed))


def ordered_by(b: Record, a: Record, rule: GroupRule) -> str:
    """Which rule compares B with A in their group: "paired rounds" or "intervals" (with "CPU per request" where
    that placed one of them)."""
    rule = rule.for_pair(b, a)
    if pairable(b, rule) and pairable(a, rule) and round_pairs.paired_interval(b, a, rule.by_speed) is not None:
        return "paired rounds"
    return "CPU per request" if above_by_cost(b, a) or above_by_cost(a, b) else "intervals"


def above_in(rule: GroupRule, b: Record, a: Record) -> bool:
    """B is directly above A under its group's rule: by paired rounds where both are paired (above), else by
    intervals; where the group divides by the CPUs' speeds, on those rates if both are bound on one CPU."""
    rule = rule.for_pair(b, a)
    if pairable(b, rule) and pairable(a, rule):
        found = round_pairs.paired_interval(b, a, rule.by_speed)
        if found is not None:
            return found.low > 1 + attempt_ranks.PROCESS_MARGIN  # what two processes of one server differ by
    return above_by_rate(b, a, rule.by_speed) or above_by_cost(b, a)


@dataclass(frozen=True)
class Standing:
    """A ranked record's place in its group: the range of places the intervals allow."""

    record: Record
    rank: int  # the best possible place: 1 + the records surely above it
    worst: int  # the worst possible place: the group's count minus the records surely below it
    by_cost: bool = False  # something is placed above or below it through CPU per request
    paired: bool = False  # compared with the others by paired rounds (its group's rule), not by intervals
    by_speed: bool = False  # compared with another on rates divided by their CPU's speed (round_pairs.by_speed)

    @property
    def tied(self) -> bool:
        """Not ordered against every other record of the group: its place is a range."""
        return self.worst > self.rank

    @property
    def label(self) -> str:
        """ "2", or "1–5" where the place is a range."""
        return f"{self.rank}–{self.worst}" if self.tied else str(self.rank)


def descendants(anc: list[set[int]]) -> list[set[int]]:
    """For each record, the indexes of the records below it directly or through others, from `ancestors`."""
    out: list[set[int]] = [set() for _ in anc]
    for i, above_i in enumerate(anc):
        for j in above_i:
            out[j].add(i)
    return out


def ancestors(records: list[Record], rule: GroupRule | None = None) -> list[set[int]]:
    """For each record, the indexes of the records above it directly or through others (itself excluded), under the
    group's rule (`group_rule(records)` unless given)."""
    rule = rule or group_rule(records)
    n = len(records)
    direct = [[j for j in range(n) if j != i and above_in(rule, records[j], records[i])] for i in range(n)]
    out = []
    for i in range(n):
        seen, todo = set(), list(direct[i])
        while todo:
            j = todo.pop()
            if j not in seen:
                seen.add(j)
                todo.extend(direct[j])
        seen.discard(i)
        out.append(seen)
    return out


def rank(records: list[Record]) -> list[Standing]:
    """The standings of `records` (all taking part, one group): each its range of places, listed by the middle of the
    range (a record surely above another has both ends lower, so it is listed first), then req/s descending."""
    rule = group_rule(records)
    anc = ancestors(records, rule)
    below = descendants(anc)
    by_speed = {i for i, r in enumerate(records) for o in records if o is not r and rule.for_pair(r, o).by_speed}
    cost_linked = {
        i
        for i, r in enumerate(records)
        for j, o in enumerate(records)
        if i != j and (above_by_cost(r, o) or above_by_cost(o, r))
    }
    paired = {
        i for i, r in enumerate(records) for o in records if o is not r and ordered_by(r, o, rule) == "paired rounds"
    }
    standings = [
        Standing(r, 1 + len(anc[i]), len(records) - len(below[i]), i in cost_linked, i in paired, i in by_speed)
        for i, r in enumerate(records)
    ]
    return sorted(standings, key=lambda s: (s.rank + s.worst, -(s.record.rps or 0)))


def ordered(a: Record, b: Record, among: list[Record]) -> bool:
    """Whether the ranking of `among` places one of a and b above the other (directly or through others)."""
    anc = ancestors(among)
    ia, ib = among.index(a), among.index(b)
    return ib in anc[ia] or ia in anc[ib]


def false_order_rate(attempts: int) -> float:
    """How often the rate relation orders two identical servers measured `attempts` times each (2.9 % at 4, at most
    that from 4 on, the min–max rule's below); the paired rule's is attempt_ranks.FALSE_ORDER_RATE."""
    return attempt_ranks.false_order_rate(attempts, attempts)


METHOD_NOTE = (
    "Ranks: every record with a figure is ranked; only failures, errors and a failed contract keep one out. A server "
    f"is above another when its attempts' req/s, less {attempt_ranks.PROCESS_MARGIN * 100:g} % (what two processes of "
    "one server differ by), lie above the other's: with 4 attempts each, its slowest above the other's fastest; with "
    "more, at most as many pairs of attempts inverted as two identical servers show "
    f"{attempt_ranks.FALSE_ORDER_RATE * 100:.1f} % of the time. A figure limited by the load generator "
    '(⚑ loadgen-saturated) or the upstream is a lower bound, shown "≥": above every server whose interval lies wholly '
    "below it, tied with the rest; where such a lower bound's interval overlaps another's, the server CPU per request "
    "(µs/req) decides when the two cost intervals are apart and the cheaper one ran at an equal or lower rate (cost "
    "falls as load rises, so a cost measured at a lower rate is an upper bound of the cost at a higher one). A rank "
    "is the range of places the intervals allow: from 1 + the number of servers surely above (directly or through "
    "others) to the count minus the number surely below, so 1–5 is a server that may be first or fifth, and a wide "
    "interval never earns a better-looking rank than a precise one. Where a group's rounds share enough of the "
    "machine's noise (the servers of a round read high or low together), two servers measured in those rounds are "
    "compared by their ratio round by round instead: the geometric mean of the per-round ratios, with a t interval "
    "held to the same false-order rate; each group says which rule it used. With CPU_METER=1, where dividing each "
    "attempt's req/s by the speed of the CPU its server is bound on leaves the attempts less of their own noise, two "
    "servers bound on one CPU are compared on those rates; the figures shown stay as measured."
)
