"""The shape of a paired sitting (make versus, make duel), fixed by the clock and never by the figures: how many starts, how many rounds in each, and
in which order the two builds go.

Why the figures never decide when to stop: stopping once the interval is narrow enough picks the sittings whose starts
happened to agree, and their intervals then miss the truth far more often than their 95 % says (stopping at the
third start once ±3 % is reached missed about one time in four in a simulation). Here the number of starts follows
from the budget and what a start costs (measured on the clock as the sitting goes), so the Student t interval over
the starts keeps its level; tests/test_versus_design.py checks it on simulated sittings.

Rounds per start: a start costs its set-up (both builds started and warmed) and its rounds. With `s2_process` the
variance a pair of processes adds to a start's mean and `s2_round` a round's own, a start's mean varies by
s2_process + s2_round / R, and the budget holds B / (setup + R · round) starts; the product is smallest at
R = √(s2_round · setup / (s2_process · round)) (the usual optimum of a two-level design). Measured on node's and rust's
/hello here (docs/versus.md, "What the time buys"), a pair of processes added at most half a round's variance on a
quiet day, so R ≈ √(2 · setup / round), rounded up to an even count so that each build goes first equally often.

The order: within a start, ABBA... (the first round's leader, then the other), so that a position effect (the second
of a round runs on a warmer cache, or right after the first's load ends) falls on both builds alike; the leader of a
start, and the build started first at its set-up, alternate from start to start.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

MIN_STARTS = 3  # an interval over starts needs two; with two, t = 12.7: three at least, where the budget allows
MIN_ROUNDS, MAX_ROUNDS = 2, 12
PROCESS_TO_ROUND_VARIANCE = 0.5  # s2_process / s2_round, at most, as measured (docs/versus.md)


# what a server's start costs where none was measured, and a load beyond its own duration (the tool's start, the
# harness's sampling, parsing and saving): the bench's estimate (measuring/run_plan.py) and a duel's time on the
# report's first screen read the same figures (docs/measuring.md, "Time", says where they were measured)
START_S, ATTEMPT_OVERHEAD_S = 6.0, 0.10


@dataclass(frozen=True)
class Costs:
    """What one start costs, in seconds: its set-up (both builds restarted and warmed) and one round (an attempt of
    each build)."""

    setup_s: float
    round_s: float


@dataclass(frozen=True)
class Shape:
    starts: int
    rounds_per_start: int

    def seconds(self, costs: Costs) -> float:
        return self.starts * (costs.setup_s + self.rounds_per_start * costs.round_s)


def rounds_per_start(costs: Costs) -> int:
    """The even number of rounds that narrows the interval most per second (see the module's docstring)."""
    best = math.sqrt(costs.setup_s / max(costs.round_s, 0.1) / PROCESS_TO_ROUND_VARIANCE)
    even = 2 * math.ceil(best / 2)
    return max(MIN_ROUNDS, min(MAX_ROUNDS, even))


def plan(budget_s: float, costs: Costs) -> Shape:
    """As many starts as `budget_s` holds at `costs` (at least one), each of `rounds_per_start` rounds."""
    rounds = rounds_per_start(costs)
    per_start = costs.setup_s + rounds * costs.round_s
    return Shape(max(1, int(budget_s // per_start)), rounds)


def replan(budget_left_s: float, done: int, costs: Costs, rounds: int) -> int:
    """The starts in all, after `done` of them, as the time left holds at the costs measured so far: the rounds per
    start stay those of the plan (every start weighs the same), only the count follows the clock."""
    per_start = costs.setup_s + rounds * costs.round_s
    return done + max(0, int(budget_left_s // per_start))


def leader(start: int, first: str, other: str) -> str:
    """Who leads start `start` (from 0): `first` on even starts, `other` on odd ones."""
    return first if start % 2 == 0 else other


def order(start: int, round_in_start: int, first: str, other: str) -> list[str]:
    """The order of a round: the start's leader first on its even rounds (from 0), second on its odd ones (ABBA)."""
    lead = leader(start, first, other)
    follow = other if lead == first else first
    return [lead, follow] if round_in_start % 2 == 0 else [follow, lead]
