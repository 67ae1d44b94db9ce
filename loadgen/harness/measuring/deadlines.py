"""When a load ends: a timed one at its duration plus a grace period, a counted one (which has no end of its own) at a
deadline derived from the rate it is expected at, both then interrupted (SIGINT: ab, wrk and httperf print their
summary), then killed if they linger; a tool with a planned time (wrk's whole seconds, ab's count on many new
connections) sent SIGINT at that time, which ends it as its own end would. The runner (tool_processes.py) waits here."""

from __future__ import annotations

import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

from harness.basics import interrupt
from harness.basics.messages import console
from harness.runtime.protocol import ToolProcess
from harness.tools import TOOLS, LoadSpec, LoadTool

GRACE_S = 60  # how long a duration-bound tool may overrun before it is stopped
# A counted load is stopped once it has taken DEADLINE_FACTOR times as long as its expected rate (the warm-up's) says,
# never sooner than DEADLINE_FLOOR_S, never later than DEADLINE_CEILING_S (also where no rate is known yet: the tools'
# own timeouts end most loads on a hung server before that).
DEADLINE_FACTOR, DEADLINE_FLOOR_S, DEADLINE_CEILING_S = 5, 20.0, 3600.0
INTERRUPT_GRACE_S = 5  # how long an interrupted tool may take to print its summary before it is killed
# ab on new connections, with at least this many of them, is ended at its planned time (planned_stop_s)
DESYNCHRONIZED_CONNECTIONS = 100
# how often a load is looked at (its progress, its exit); once it is due to end (its planned stop sent, or for
# ENDING_WINDOW_S after the length it was sized to) how soon its exit is noticed: about 25 ms less between two
# attempts, over the 1,200 loads of a bench (warm-up runs included) about 30 s. Not for longer: a load running past
# its time is still loading, and looking at it 200 times a second would take the load generator's CPU from it
POLL_S, ENDING_POLL_S, ENDING_WINDOW_S = 0.05, 0.005, 0.2


def deadline_s(spec: LoadSpec, expected_rps: float | None) -> float:
    """How long the load `spec` may run before the harness stops it (see the module's docstring)."""
    if spec.duration_s:  # answers may come up to a request timeout after the end (Gatling waits for them)
        return spec.duration_s + max(GRACE_S, (spec.timeout_s or 0) + GRACE_S / 2)
    if not expected_rps:
        return DEADLINE_CEILING_S
    requests = spec.requests or spec.users or (spec.concurrency or 1) * (spec.calls_per_connection or 1)
    return min(max(DEADLINE_FACTOR * requests / expected_rps, DEADLINE_FLOOR_S), DEADLINE_CEILING_S)


def _progress_fraction(tool: LoadTool, spec: LoadSpec, outputs: list[Path], elapsed: float) -> float | None:
    if spec.duration_s:
        return min(elapsed / spec.duration_s, 1.0)
    if spec.requests and outputs:
        done = [tool.completed(path.read_bytes()[-4096:]) if path.exists() else 0 for path in outputs]
        if any(n is None for n in done):
            return None
        return min(sum(n or 0 for n in done) / spec.requests, 1.0)  # `spec`: the whole load, its parts' outputs summed
    return None


def planned_stop_s(tool_name: str, spec: LoadSpec) -> float | None:
    """When the runner ends the load with SIGINT, as its own end would (None: it ends itself): the tool's own planned
    stop (wrk's whole seconds), or the planned time of ab's count-sized load on 100 or more new connections (its count
    over the rate it was sized from). Where the server is the limit its answers come at its rate from the first to the
    last, so the requests answered by the planned time read the rate the whole count reads, and the count overran its
    time only by as much as the attempt was slower than the warm-up run that sized it (2026-11-26's bench: 9 s of
    low-compute's and backend close's attempts, 22 s of their warm-up runs); where each answer also waits a fixed time
    the count drains it after its last request, and both read the same rate to first order. Not for few connections:
    high-compute's ten CPU-bound requests end together, a round at a time."""
    own: Callable[[LoadSpec], float | None] | None = getattr(TOOLS[tool_name], "stop_after_s", None)
    if own:
        return own(spec)
    if (
        tool_name == "ab"
        and not spec.keepalive
        and spec.requests
        and spec.sized_from_rps
        and (spec.concurrency or 0) >= DESYNCHRONIZED_CONNECTIONS
    ):
        return spec.requests / spec.sized_from_rps
    return None


def wait(
    procs: list[ToolProcess],
    tool_name: str,
    spec: LoadSpec,
    outputs: list[Path],
    label: str,
    status: str,
    deadline: float,
) -> bool:
    """Until every tool process has ended (False), or `deadline` seconds have passed: then they are stopped (True).
    A tool that ends at a planned time (its `stop_after_s`, e.g. wrk at 1.5 s) is sent SIGINT then, which ends its run
    as its own duration would (not a stop: nothing is counted against the server)."""
    started = time.monotonic()
    stop_at = planned_stop_s(tool_name, spec)
    # when its exit is looked for closely: from its expected end, or from the planned stop once sent
    due_at = _expected_end_s(spec) if stop_at is None else float("inf")
    with Progress(
        TextColumn("  {task.description}"),
        BarColumn(),
        TextColumn("{task.percentage:>3.0f}%"),
        TimeElapsedColumn(),
        TextColumn(status),
        console=console,
        transient=True,
        disable=not console.is_terminal,
    ) as progress:
        task = progress.add_task(label, total=1.0)
        while any(p.poll() is None for p in procs):
            elapsed = time.monotonic() - started
            fraction = _progress_fraction(TOOLS[tool_name], spec, outputs, elapsed)
            progress.update(task, completed=fraction if fraction is not None else 0.0)
            if elapsed > deadline:
                _interrupt(procs)
                return True
            if stop_at is not None and elapsed >= stop_at:
                _sigint(still_loading(TOOLS[tool_name], procs, outputs))
                stop_at, due_at = None, elapsed
            interrupt.check()
            # a planned stop on time, and an exit soon after it is due (the samplers stop then)
            if due_at <= elapsed < due_at + ENDING_WINDOW_S:
                time.sleep(ENDING_POLL_S)
            else:
                time.sleep(min(POLL_S, max(stop_at - elapsed, 0.001)) if stop_at is not None else POLL_S)
    return False


def _expected_end_s(spec: LoadSpec) -> float:
    """When a load that ends by itself is expected to: its duration, or its count at the rate it was sized from."""
    if spec.duration_s:
        return spec.duration_s
    if spec.requests and spec.sized_from_rps:
        return spec.requests / spec.sized_from_rps
    return float("inf")


def still_loading(tool: LoadTool, procs: list[ToolProcess], outputs: list[Path]) -> list[ToolProcess]:
    """The processes a planned stop ends: not one whose output says its count is answered (ab's "Finished N
    requests"), which is then writing its summary: a SIGINT in the middle of that left no summary, and the attempt
    lost, in 6 attempts of three benches on 2026-11-26."""
    finished: Callable[[bytes], bool] | None = getattr(tool, "has_finished", None)
    if finished is None or len(outputs) != len(procs):
        return procs
    return [p for p, out in zip(procs, outputs) if not (out.exists() and finished(out.read_bytes()[-4096:]))]


def _sigint(procs: list[ToolProcess]) -> None:
    """SIGINT to the tools still running: ab, wrk and httperf then end and print what they measured so far."""
    for p in procs:
        if p.poll() is None:
            p.send_signal(signal.SIGINT)


def _interrupt(procs: list[ToolProcess]) -> None:
    """SIGINT (the tools print what they measured so far), then SIGKILL to those still running."""
    _sigint(procs)
    for p in procs:
        try:
            p.wait(INTERRUPT_GRACE_S)
        except subprocess.TimeoutExpired:
            p.kill()
