"""`make twin`'s loads and its warm-up: every side warmed alike, taking turns, so that none is measured while another's
JIT is still compiling its own warm-up, and none is called warm by a fixed count alone.

First the JIT's per-connection climb: connection-per-request load on each side's first route, one run of the
attempt's length a side a turn (the first side of a turn rotating), until every side has made its
`warmup_connections` and its latest runs have been flat by the bench's own trend rule (warmup.Progress,
trend.settled; once flat, a side is warm, though it keeps its turns: three noisy sides are seldom flat at once), or
`warmup_max_s` has passed after at least `warmup_window` turns (then the sides still climbing are named, and
twin.json says so). Then each route pair on both patterns for `warmup_s`, the sides again taking turns."""

from __future__ import annotations

import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.basics import interrupt
from harness.basics.cpus import CpuPlan
from harness.basics.machine import pinned
from harness.basics.messages import say, warn
from harness.measuring.warmup import Progress
from harness.tools import TOOLS, LoadSpec, ToolFailed
from harness.tools.adapter import ParseError
from harness.tools.output import Measurement
from harness.versus.twin_table import PATTERNS, TwinError, tool_of

HOST = "127.0.0.1"
TOOL_TIMEOUT_S = 10  # a request's timeout (wrk --timeout, ab -s)


@dataclass(frozen=True)
class TwinOptions:
    rounds: int = 7
    attempt_s: int = 3  # whole seconds (wrk's -d): each measured attempt, wrk's or ab's (-t), and each climb run
    warmup_s: int = 3  # each route pair and pattern, on each side, after the climb
    concurrency: int = 100  # wrk's and ab's connections, as the bench's hello scenario (loadgen/scenarios.toml)
    steadiness: dict[str, float] | None = None  # {"seconds", "window_s"} of the probe before and after; None: none
    startup_timeout_s: float = 60.0  # the twin's (ours: its manifest's)
    again: bool = True  # the A/A control: our server a second time, measured in the same rounds
    warmup_tolerance: float = 0.10  # the climb's end: its latest runs change by at most this (trend.settled)
    warmup_window: int = 3  # ... judged on at least this many runs (trend.judged_window)
    warmup_max_s: float = 600.0  # the climb's longest, all sides together
    close_tool: str = "ab"  # connection per request's tool: "ab", or "wrk" sending `Connection: close` (CLOSE_TOOL)


@dataclass(frozen=True)
class TwinSide:
    """One of the servers as the rounds see it."""

    label: str  # "ours", "theirs" or "again" (ours a second time: the A/A)
    port: int
    pid: int  # its process (a wrapper's children counted in): what its attempts cost is read from it
    paths: tuple[str, ...]  # its path of each route pair, in twin.toml's order
    warmup_connections: int


def rotated(sides: list[TwinSide], k: int) -> list[TwinSide]:
    """The sides in the order of turn (or round) k: the first of k is the second of k - 1."""
    shift = k % len(sides)
    return sides[shift:] + sides[:shift]


def load(
    pattern: str, url: str, options: TwinOptions, seconds: int, cpus: tuple[int, ...], scratch: Path
) -> Measurement:
    """One run of the pattern's tool (`options.close_tool` for connection per request) against `url`, `seconds`
    long, with `options.concurrency` connections, pinned to `cpus`."""
    spec = LoadSpec(
        url=url,
        concurrency=options.concurrency,
        duration_s=seconds,
        threads=len(cpus),
        timeout_s=TOOL_TIMEOUT_S,
        connection_close=pattern == "connection-per-request",  # read by wrk only: ab makes a connection a request
    )
    tool = TOOLS[tool_of(pattern, options.close_tool)]
    scratch.mkdir(parents=True, exist_ok=True)
    argv = tool.command(spec, scratch)
    proc = subprocess.run(pinned(argv, cpus), capture_output=True, text=True, stdin=subprocess.DEVNULL)
    (scratch / "output.txt").write_text(proc.stdout + proc.stderr)
    try:
        return tool.parse(proc.stdout + proc.stderr, scratch)
    except (ToolFailed, ParseError) as exc:
        raise TwinError(f"{tool.name} against {spec.url} measured nothing: {exc} (output in {scratch})") from None


def warm(sides: list[TwinSide], plan: CpuPlan, options: TwinOptions, raw: Path) -> dict[str, Any]:
    """The climb, then every route pair and pattern (the module's docstring); what the climb came to, for twin.json."""
    climbed = climb(sides, plan, options, raw)
    say(f"  warming each route and pattern for {options.warmup_s} s, the sides taking turns")
    turn = 0
    for n in range(len(sides[0].paths)):
        for pattern in PATTERNS:
            for side in rotated(sides, turn):
                url = f"http://{HOST}:{side.port}{side.paths[n]}"
                load(pattern, url, options, options.warmup_s, plan.loadgen, raw / f"warm-{side.label}-{n}-{pattern}")
            turn += 1
    return climbed


def climb(sides: list[TwinSide], plan: CpuPlan, options: TwinOptions, raw: Path) -> dict[str, Any]:
    """The JIT's per-connection climb of every side, in turns (the module's docstring): each side's rates, its new
    connections, whether it ended flat, and the climb's seconds."""
    progress = {s.label: Progress(options.warmup_window, s.warmup_connections) for s in sides}
    say(
        f"  warming {', '.join(s.label for s in sides)} in turns: connection per request on the first route, "
        f"{options.attempt_s} s a side a turn, until each has made its new connections and is flat "
        f"(the latest runs within {options.warmup_tolerance:.0%}), at most {options.warmup_max_s:g} s"
    )
    started, turn = time.monotonic(), 0
    flat_at: dict[str, int] = {}  # the turn each side was first flat: warm from then on, though it keeps its turns
    while len(flat_at) < len(sides) and (
        turn < options.warmup_window or time.monotonic() - started < options.warmup_max_s
    ):
        for side in rotated(sides, turn):
            interrupt.check()
            url = f"http://{HOST}:{side.port}{side.paths[0]}"
            scratch = raw / f"warm-{side.label}-climb-{turn + 1}"
            m = load("connection-per-request", url, options, options.attempt_s, plan.loadgen, scratch)
            progress[side.label].add(m.rps, m.duration_s, m.requests, m.errors.total, options.warmup_tolerance)
        turn += 1
        flat_at.update({label: turn for label, p in progress.items() if p.enough() and label not in flat_at})
        say(f"  climb turn {turn}: " + ", ".join(_climbing(label, p, flat_at) for label, p in progress.items()))
    climbing = [label for label in progress if label not in flat_at]
    if climbing:
        warn(f"twin: {', '.join(climbing)} still climbing after {options.warmup_max_s:g} s: measured as they are")
    return {
        "seconds": round(time.monotonic() - started, 1),
        "sides": {
            label: {"rps": [r.rps for r in p.runs], "connections": p.made, "flat_at_turn": flat_at.get(label)}
            for label, p in progress.items()
        },
    }


def _climbing(label: str, progress: Progress, flat_at: dict[str, int]) -> str:
    rate = f"{progress.rate:,.0f} req/s" if progress.rate else "no rate"
    flat = f", flat since turn {flat_at[label]}" if label in flat_at else ""
    return f"{label} {rate} ({progress.made:,} connections{flat})"
