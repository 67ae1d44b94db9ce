"""What the rounds ask of the judging while they measure (measuring/scheduler.py's `Judge`): whether a record's
attempts still climb or fall against the other servers of their rounds (the rule of the warming and drifting flags,
judging/flags.py), and which tied records a few more rounds would likely tell apart (judging/more_rounds.py)."""

from __future__ import annotations

from collections.abc import Sequence

from harness.judging import flags, more_rounds
from harness.judging.more_rounds import Extension
from harness.results.records import Attempt, Record
from harness.stats.trend import Trend


class Referee:
    """The rounds' judge: the same rules the flags and the ranking apply once the run is over."""

    def moving(self, attempts: list[Attempt], mates: Sequence[list[Attempt]]) -> tuple[Trend, int] | None:
        """The trend of `attempts` and how many mates read it, where it climbs or falls; None where it is flat."""
        found = flags.attempts_trend(attempts, mates)
        return found if found and found[0].moving else None

    def more_rounds(self, records: list[Record], repeat: int, round_s: float, share_s: float) -> Extension | None:
        """The further rounds `records` get within `share_s` seconds, each server's attempt costing `round_s`."""
        return more_rounds.extension(records, repeat, round_s, share_s)
