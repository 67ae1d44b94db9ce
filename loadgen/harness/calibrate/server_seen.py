"""What the calibrated server saw of each load (calibrated/src/account.rs, GET /calibration/stats): its answers over
its span, how late its answers left, and on keep-alive connections the tool's turnaround (from an answer's write to
the next request's read). The harness resets the server's account before every load (warm-up run or attempt) and
reads it after (`Accounts.around`, entered around each load by the session).

Why a closed loop's rate is judged against it: a closed loop of c connections runs at c over its cycle, and the cycle
is the server's hold (S + D/k by construction) plus what no setting of the server knows: its own lateness (a timer's
wake-up on an idle virtual CPU, its write) and the tool's turnaround (its wake-up, its read, its next send). At 40 ms
ab's cycle read 42.87 ms where 42.0 were held, and its rate missed the construction's by 2 % while it counted right.
The server's answers over its span (first request read to last answer written) are exact: the same requests counted
over the same time as the tool counts them, whatever the cycle, a load's ends (connections opened one by one, the
last answers waited for) and a split load's staggered parts; c over the server's observed cycle is not (it takes
every connection busy for the whole span, and a connection per request has no turnaround the server can pair)."""

from __future__ import annotations

import json
import re
import statistics
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.basics.httpclient import HttpError, get
from harness.basics.messages import warn
from harness.calibrate import known_answers as ka
from harness.measuring.steadiness import UNSTEADY_CV, worst_cv
from harness.results.records import Attempt, Record
from harness.runtime import RunningServer

STATS, RESET = "/calibration/stats", "/calibration/reset"
TIMEOUT_S = 5.0
SUFFIXES = re.compile(r"(-again\d*)?(\.part\d+)?$")  # a load measured again, a part of a split load (tool_processes.py)


@dataclass(frozen=True)
class ServerSeen:
    """One load as the server saw it (times in ms; None where there was nothing to average)."""

    answers: int
    span_s: float
    rate: float | None
    hold_mean_ms: float | None
    late_mean_ms: float | None
    late_max_ms: float | None
    turnarounds: int
    turnaround_mean_ms: float | None

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ServerSeen:
        return cls(**{name: d.get(name) for name in cls.__dataclass_fields__})  # type: ignore[arg-type]


class Accounts:
    """The server's account of every load, by the load's stem; a server that cannot say (not the calibrated one, an
    older build) is warned about once and its loads judged by construction alone."""

    def __init__(self) -> None:
        self.by_stem: dict[str, ServerSeen] = {}
        self.unavailable: str | None = None

    def _ask(self, running: RunningServer, path: str) -> dict[str, Any] | None:
        if self.unavailable:
            return None
        try:
            response = get(running.host, running.port, path, TIMEOUT_S)
            if response.status != 200:
                raise HttpError(f"answered {response.status}")
            answer: dict[str, Any] = json.loads(response.text)
            return answer
        except (OSError, HttpError, ValueError) as exc:
            self.unavailable = f"{running.name} {path}: {exc}"
            warn(f"the server's own account of its loads is not available ({self.unavailable}): judged by construction")
            return None

    @contextmanager
    def around(self, running: RunningServer, stem: str) -> Iterator[None]:
        """Resets the server's account before the load `stem` and reads it after."""
        self._ask(running, RESET)
        yield
        seen = self._ask(running, STATS)
        if seen is not None:
            self.by_stem[stem] = ServerSeen.from_dict(seen)

    def of_record(self, record: Record) -> list[ServerSeen] | None:
        """The server's account of each measured attempt of `record`; None unless every one has it."""
        measured = [a for a in record.attempts if a.measured]
        seen = [self.of_attempt(a) for a in measured]
        found = [s for s in seen if s is not None]
        return found if measured and len(found) == len(measured) else None

    def of_attempt(self, attempt: Attempt) -> ServerSeen | None:
        stems = {SUFFIXES.sub("", Path(raw).parent.name) for raw in attempt.raw}
        return next((self.by_stem[s] for s in stems if s in self.by_stem), None)


def mean_of(seen: list[ServerSeen], name: str) -> float | None:
    values = [v for s in seen if (v := getattr(s, name)) is not None]
    return statistics.fmean(values) if values else None


def cycle_text(seen: list[ServerSeen], connections: int, ideal_ms: float) -> str:
    """How a closed loop's cycle split: what the server held, its lateness, the tool's turnaround and the rest (the
    load's ends; without keep-alive, everything outside the server), the cycle being c × span / answers."""
    answers, span = sum(s.answers for s in seen), sum(s.span_s for s in seen)
    hold, late = mean_of(seen, "hold_mean_ms") or 0.0, mean_of(seen, "late_mean_ms") or 0.0
    turnaround = mean_of(seen, "turnaround_mean_ms")
    cycle = connections * span * 1000 / answers
    parts = [
        f"cycle {cycle:.2f} ms ({connections} connections × {span:.2f} s / {answers:,} answers): "
        f"{hold:.2f} held ({ideal_ms:g} by construction, S + D/k)",
        f"{late:+.2f} the server's lateness (its wake-ups and writes; at most {mean_of(seen, 'late_max_ms') or 0:.2f})",
    ]
    if turnaround is not None:
        parts.append(f"{turnaround:+.2f} the tool's turnaround (an answer's write to the next request's read)")
        parts.append(f"{cycle - hold - late - turnaround:+.2f} the load's ends (connections opening, the last answers)")
    else:
        parts.append(
            f"{cycle - hold - late:+.2f} outside the server (a new connection per request, the tool's turnaround, "
            "the load's ends)"
        )
    return ", ".join(parts)


def judge_rate(
    k: ka.Known, m: ka.Observed, seen: list[ServerSeen], connections: int, ideal_ms: float
) -> ka.Figure | None:
    """A closed loop's req/s against the rate the server itself saw (the median of its attempts', as the record's
    rate is), within the same tolerance; the construction's ideal rate kept beside it, and its cycle (`ideal_ms`,
    S + D/k) beside the one observed. None where the server saw none."""
    rates = [s.rate for s in seen]
    if not seen or any(r is None for r in rates) or k.rps is None or not connections:
        return None
    server_rps = statistics.median(r for r in rates if r is not None)
    said = (
        f"the server saw {server_rps:,.1f} req/s (its answers over its span, as a tool counts its own); "
        f"{k.rps:,.1f} by construction ({k.why}); {cycle_text(seen, connections, ideal_ms)}"
    )
    if m.rps is None:
        return ka.Figure("req/s", round(server_rps, 1), None, False, f"nothing measured; {said}", round(k.rps, 1))
    off = m.rps / server_rps - 1
    ok = abs(off) <= ka.RATE_TOLERANCE
    note = said if ok else f"{off:+.1%} from what the server saw: the tool miscounted its requests or its time; {said}"
    return ka.Figure("req/s", round(server_rps, 1), m.rps, ok, note, round(k.rps, 1))


def probe_cv(conditions: dict[str, Any]) -> float | None:
    """The run's steadiness probe (before and after): its largest CV, of either side's CPU; None where not probed."""
    worst = [cv for r in (conditions.get("steadiness") or {}).values() if (cv := worst_cv(r)) is not None]
    return max(worst, default=None)


def unsteady(cv: float | None) -> bool:
    return cv is not None and cv > UNSTEADY_CV


def latency_verdict(seen: list[ServerSeen] | None, miss_ms: float | None, cv: float | None) -> str:
    """Whose a latency miss is: the machine's where its steadiness probe varied over UNSTEADY_CV (still a miss, said
    so), and whether the server's own answers left on time (then the delay is outside the server)."""
    if cv is None:
        machine = "the machine's steadiness was not probed"
    elif unsteady(cv):
        machine = f"the machine's (probe CV {cv:.1%}: unsteady, over {UNSTEADY_CV:.0%})"
    else:
        machine = f"on a steady machine (probe CV {cv:.1%}, within {UNSTEADY_CV:.0%})"
    lates = [s.late_max_ms for s in seen or [] if s.late_max_ms is not None]
    if not lates or miss_ms is None:
        return machine
    late = max(lates)
    if late <= ka.LATENCY_FLOOR_MS:
        return (
            f"{machine}; the server's answers left on time (at most {late:.2f} ms after due): the delay is outside it"
        )
    if late < abs(miss_ms):
        return (
            f"{machine}; the server's answers left at most {late:.2f} ms after due (its wake-ups): the other "
            f"{abs(miss_ms) - late:.2f} ms at least are outside it"
        )
    return f"{machine}; the server's own answers left up to {late:.2f} ms after due (its wake-ups): it may be all the server's"
