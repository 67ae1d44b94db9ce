"""The timeline's types (a run's conditions, a point, a series, a `make versus` answer, what was asked for) and the
checks on what a results.json gives history: a figure drawn on a log scale, a commit that reaches git, a SINCE."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

COMMIT = re.compile(r"[0-9a-fA-F]{7,40}")  # what a results.json's git_commit may be: a commit, full or abbreviated


@dataclass(frozen=True)
class RunInfo:
    """What a run folder says about how its numbers were taken."""

    run_id: str
    started_at: datetime | None
    commit: str
    runtime: str
    conditions_key: str  # runtime, CPU plan, machine, profile: runs that differ here are never one series
    details: dict[str, str]  # what may change within a series, named where it does
    rate: dict[str, float]  # role -> loops per second of the pinned busy loop (before and after the run, averaged)
    versus: dict[str, Any] | None
    rate_spread: dict[str, float] = field(default_factory=dict)  # role -> |log(after / before)|: the probe's own noise


@dataclass(frozen=True)
class Point:
    run: RunInfo
    value: float
    low: float | None
    high: float | None
    level: float | None
    flags: tuple[str, ...] = ()
    version: str | None = None  # the server's, as recorded at its start
    speed: float | None = None  # the machine's speed relative to the timeline's reference (1: as usual)


@dataclass
class Series:
    server: str
    scenario: str
    run: str
    metric: str
    conditions: str
    points: list[Point] = field(default_factory=list)
    since: str = ""  # a later part of a figure whose meaning a results schema changed: the run it starts at
    why: str = ""  # and how the meaning changed there
    tool: str = ""  # the load tool that measured it: another tool's figure is another series
    load: str = ""  # and the load it offered (connections, threads)

    @property
    def key(self) -> tuple[str, ...]:
        return (
            self.server,
            self.scenario,
            self.run,
            self.metric,
            self.conditions,
            self.tool,
            self.load,
            *([self.since] if self.since else []),
        )

    @property
    def group(self) -> tuple[str, ...]:
        """What the servers measured alike share: scenario, run label, tool, load, metric, conditions, schema part."""
        return self.key[1:]


@dataclass(frozen=True)
class PairedPoint:
    """A `make versus` answer on the timeline: head ÷ base with its interval, at the run that measured it."""

    run: RunInfo
    server: str
    scenario: str
    label: str
    metric: str
    ratio: float
    low: float
    high: float
    verdict: str
    base: str
    head: str


@dataclass(frozen=True)
class Selection:
    """What `make history` was asked for: folders (glob patterns), servers, scenarios, the first date."""

    patterns: list[str]
    servers: frozenset[str] = frozenset()
    scenarios: frozenset[str] = frozenset()
    since: str = ""


def is_commit(text: str) -> bool:
    """Whether `text` is a commit as git prints one (7 to 40 hex digits): nothing else from a file reaches git."""
    return COMMIT.fullmatch(text) is not None


def figure(value: Any, what: str) -> float:
    """A figure history draws on a log scale: a finite number above 0 (a ValueError naming `what` otherwise)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{what} is {type(value).__name__}, not a number")
    number = float(value)  # an integer too large for a float: OverflowError
    if not math.isfinite(number) or number <= 0:
        raise ValueError(f"{what} is {str(value)[:40]}, not a positive figure")
    return number


def since_prefix(text: str) -> str | None:
    """SINCE as an ISO time's prefix: 2026-11-24, 20261124 or 20261124-0726 (a run id's start); None where it is not
    one of those (a date that does not exist included)."""
    digits = text.strip().replace("-", "").replace("T", "").replace(":", "")
    if not digits.isdigit() or len(digits) not in (8, 10, 12, 14):
        return None
    try:
        datetime.strptime(digits, "%Y%m%d%H%M%S"[: {8: 6, 10: 8, 12: 10, 14: 12}[len(digits)]])
    except ValueError:
        return None
    iso = f"{digits[0:4]}-{digits[4:6]}-{digits[6:8]}"
    rest = digits[8:14]
    return iso + ("T" + ":".join(rest[i : i + 2] for i in range(0, len(rest), 2)) if rest else "")
