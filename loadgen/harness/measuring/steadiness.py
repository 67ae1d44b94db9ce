"""How steady the machine itself is: a CPU-speed probe taken before and after a run, so that a reader can tell the
machine's own noise from the servers'.

One busy-loop process is pinned to the first CPU of the server's set and one to the first of the load generator's;
both count their loop iterations for `seconds`. Their rate over windows as long as an attempt, compared between
windows, is the machine's own coefficient of variation: the spread any attempt of that length carries whatever the
server does: on a shared VM, a noisy neighbour of the host, not of this machine. The two cores' speeds move together
on some days and alone on others (docs/cpu-speed.md), and in an attempt both are busy, so both are probed at once. Being taken before and after a run, it cannot see the attempts' own swings.

Docker runtime: the probe runs as host processes on the same CPUs the containers are pinned to.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from typing import Any

from harness.basics import interrupt
from harness.basics.cpus import CpuPlan
from harness.basics.machine import pinned
from harness.basics.messages import say, warn
from harness.config.scenarios import Settings
from harness.report.run_conditions import steadiness_text
from harness.results import flag_kinds
from harness.results.store import RunStore
from harness.stats import intervals as stats

TICK_S = 0.1  # the probe prints its count this often; windows are sums of ticks
# A stall: the probe's CPU taken away this long or longer (a chunk of its loop takes about 0.05 ms). On this project's
# 2-core VM both virtual CPUs lose 2-4 ms about once a second (the hypervisor's), which the speed's CV over 1.25 s
# windows does not show but a tool's p99.9 and max do: `make calibrate` reads them here (calibrate/allowance.py).
STALL_S = 0.001
# Above this, the run is warned that its records will carry the machine's spread: with 3 attempts whose own CV is 5 %,
# about one record in twenty passes the 10 % spread flag by chance; at 10 %, about four in ten.
UNSTEADY_CV = 0.05
# A loop that counts, and times each chunk of 2000 counts (a chunk over the stall threshold: its CPU was taken away);
# every TICK_S it prints its count, its stalls, the longest and their sum; it ends after the given seconds.
PROBE = (
    "import signal, sys, time\n"
    "signal.signal(signal.SIGINT, signal.SIG_DFL)\n"  # Ctrl-C (to the harness's process group) ends it without a word
    "tick, end, stall = float(sys.argv[1]), time.monotonic() + float(sys.argv[2]), float(sys.argv[3])\n"
    "n, last = 0, time.monotonic()\n"
    "previous, stalls, longest, lost = last, 0, 0.0, 0.0\n"
    "while True:\n"
    "    for _ in range(2000):\n"
    "        n += 1\n"
    "    now = time.monotonic()\n"
    "    if now - previous > stall:\n"
    "        stalls, longest, lost = stalls + 1, max(longest, now - previous), lost + now - previous\n"
    "    previous = now\n"
    "    if now - last >= tick:\n"
    "        print(f'{now - last:.6f} {n} {stalls} {longest:.6f} {lost:.6f}', flush=True)\n"
    "        n, last, stalls, longest, lost = 0, now, 0, 0.0, 0.0\n"
    "        if now >= end:\n"
    "            break\n"
)


def tick_rates(output: str) -> list[float]:
    """Iterations per second, tick by tick."""
    out = []
    for line in output.split("\n"):
        parts = line.split()
        if len(parts) >= 2:
            elapsed, count = float(parts[0]), int(parts[1])
            out.append(count / elapsed if elapsed > 0 else 0.0)
    return out


def stalls(output: str) -> dict[str, float] | None:
    """{"per_s": stalls a second, "worst_ms": the longest, "share": of the time they took} over the probe's ticks;
    None from an older probe's lines."""
    ticks = [line.split() for line in output.split("\n") if len(line.split()) == 5]
    seconds = sum(float(t[0]) for t in ticks)
    if not ticks or seconds <= 0:
        return None
    return {
        "per_s": round(sum(int(t[2]) for t in ticks) / seconds, 2),
        "worst_ms": round(max(float(t[3]) for t in ticks) * 1000, 2),
        "share": round(sum(float(t[4]) for t in ticks) / seconds, 5),
    }


def windows(rates: list[float], per_window: int) -> list[float]:
    """Mean rate of consecutive whole windows of `per_window` ticks."""
    return [statistics.fmean(rates[i : i + per_window]) for i in range(0, len(rates) - per_window + 1, per_window)]


def probe(cpus: dict[str, int], seconds: float, window_s: float) -> dict[str, Any]:
    """{"seconds", "window_s", "cpus", "cv": {role: CV between windows}, "correlation": of the roles' window rates
    (None with one role), "rate": {role: loops per second, the median window}, "stalls": {role: `stalls`}}. `cpus`: role -> the CPU its busy loop is pinned to."""
    procs = {}
    try:
        for role, cpu in cpus.items():
            with interrupt.deferred():  # a Ctrl-C inside Popen would lose the child
                procs[role] = subprocess.Popen(
                    pinned([sys.executable, "-c", PROBE, str(TICK_S), str(seconds), str(STALL_S)], [cpu]),
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,  # a Ctrl-C in its interpreter's start prints a traceback: not the user's
                    text=True,
                )
        deadline = time.monotonic() + seconds + 30
        while any(p.poll() is None for p in procs.values()) and time.monotonic() < deadline:
            interrupt.sleep(0.1)  # a probe's output (a line per tick) fits the pipe: read once it has ended
        ended = {role: p.communicate(timeout=1) for role, p in procs.items()}
        outputs = {role: out for role, (out, _) in ended.items()}
        for role, (out, err) in ended.items():
            if not tick_rates(out):
                warn(
                    f"the steadiness probe on the {role}'s CPU printed no count (its reading is left out): {err.strip()[-300:]}"
                )
    finally:
        for p in procs.values():
            if p.poll() is None:
                p.kill()
                p.wait()
    per_window = max(1, round(window_s / TICK_S))
    series = {role: windows(tick_rates(text), per_window) for role, text in outputs.items()}
    roles = list(series)
    correlation = None
    if len(roles) == 2:
        a, b = series[roles[0]], series[roles[1]]
        n = min(len(a), len(b))
        if n >= 3 and len(set(a[:n])) > 1 and len(set(b[:n])) > 1:
            correlation = round(statistics.correlation(a[:n], b[:n]), 2)
    # the absolute speed too (loops per second, the median window): `make history` puts it on the timeline and
    # divides every figure by it, so that a day when the whole machine is slower reads as the machine's day
    rate = {role: round(statistics.median(s)) if s else None for role, s in series.items()}
    return {
        "seconds": seconds,
        "window_s": window_s,
        "cpus": cpus,
        "windows": min(len(s) for s in series.values()),
        "cv": {role: stats.cv(s) for role, s in series.items()},
        "correlation": correlation,
        "rate": rate,
        # how often and how long each CPU was taken away (STALL_S or more): the tails' share of the machine
        "stalls": {role: found for role, text in outputs.items() if (found := stalls(text))},
    }


def worst_cv(reading: dict[str, Any] | None) -> float | None:
    """The larger of a probe reading's two CPUs' coefficients of variation; None without a reading (or any CV)."""
    return max((c for c in ((reading or {}).get("cv") or {}).values() if c is not None), default=None)


def probe_and_record(store: RunStore, plan: CpuPlan, settings: Settings, when: str) -> None:
    """The machine's own CPU-speed steadiness, probed and recorded in the conditions `when` ("before", "after") the
    run, where the profile asks for it; a warning when it varies more than UNSTEADY_CV."""
    if not settings.steadiness:
        return
    if plan.hosts:  # the plan's CPUs are other machines', not this one's
        store.update_conditions(
            steadiness_not_probed="the roles run on other hosts (HOSTS): this machine's CPU speed is not theirs"
        )
        return
    say(f"machine steadiness probe ({when} the run, {settings.steadiness['seconds']:g} s on both sides' CPUs)")
    result = probe({"server": plan.server[0], "loadgen": plan.loadgen[0]}, **settings.steadiness)
    say(f"  {steadiness_text(result)}")
    worst = worst_cv(result)
    if worst is not None and worst > UNSTEADY_CV:
        warn(
            f"this machine's own CPU speed varies {worst:.0%} between {result['window_s']:g} s windows: attempts of that "
            f"length will carry about as much spread, and records past {flag_kinds.SPREAD_MAX_CV:.0%} are flagged `spread`; "
            "a quieter machine (or the seed profile's longer attempts) gives tighter intervals"
        )
    store.update_conditions(steadiness={**store.run.conditions.get("steadiness", {}), when: result})
