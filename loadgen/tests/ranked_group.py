"""A synthetic group ranked as the report ranks it, for the tests that count how often the rule orders its pairs
(test_round_pairs.py, test_cpu_speed.py)."""

from __future__ import annotations

from collections.abc import Callable

from harness.judging import ranking, round_pairs
from harness.judging.round_pairs import GroupRule
from harness.results.records import Record


def ranked(group: dict[str, Record]) -> tuple[GroupRule, Callable[[str, str], bool]]:
    """The group's rule and `above(b, a)`: whether the ranking places server b above server a (directly or through
    others)."""
    records = list(group.values())
    rule = round_pairs.group_rule(records)
    ancestors = ranking.ancestors(records, rule)
    index = {name: i for i, name in enumerate(group)}
    return rule, lambda b, a: index[b] in ancestors[index[a]]
