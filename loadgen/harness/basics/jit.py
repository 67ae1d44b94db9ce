"""How much of a JVM server's CPU its JIT compilers took: the warm-up's direct reading of whether the JIT is done.

HotSpot compiles on threads of their own, named "C1 CompilerThreadN" and "C2 CompilerThreadN" (the kernel keeps the
first 15 characters). Read from /proc, their CPU time beside the whole process tree's tells a warm-up run in which
the JIT still compiled from one after it had gone quiet: the compilers take a large share of a JVM's CPU while its rate
climbs and next to none from its plateau on, but for a rare recompilation (measured by hand: docs/measuring.md).

A process without such threads (node, rust, nginx) or one this machine cannot read (a remote Docker host) gives None:
its warm-up is judged on its rates alone."""

from __future__ import annotations

from dataclasses import dataclass

import psutil

from harness.basics.machine import CLOCK_TICKS
from harness.basics.sampling import per_thread, process_tree

COMPILER_THREADS = ("C1 CompilerThre", "C2 CompilerThre")


@dataclass(frozen=True)
class CpuTime:
    """CPU seconds since the process started: each JIT compiler thread's by thread id (HotSpot ends idle ones and
    starts others), and the whole process tree's, its ended threads' included (psutil: /proc/<pid>/stat)."""

    compiler: dict[int, float]
    total: float


def read(pid: int) -> CpuTime | None:
    """The CPU time of the process tree under `pid` (a wrapper's children counted in); None where it has no HotSpot
    compiler thread or cannot be read."""
    compiler: dict[int, float] = {}
    total = 0.0
    for proc in process_tree(pid) or []:
        try:
            times = proc.cpu_times()
        except psutil.Error:
            continue  # ended meanwhile
        total += times.user + times.system
        compiler.update(t for t in per_thread(proc.pid, "stat", _compiler_thread) or [] if t is not None)
    return CpuTime(compiler, total) if compiler else None


def share(before: CpuTime | None, after: CpuTime | None) -> float | None:
    """The compilers' share of the process's CPU between two readings; None without both, or without CPU spent. A
    compiler thread that ended between them loses its last moments (an idle one, as a rule)."""
    if before is None or after is None or after.total <= before.total:
        return None
    compiled = sum(seconds - before.compiler.get(tid, 0.0) for tid, seconds in after.compiler.items())
    return min(1.0, max(0.0, compiled) / (after.total - before.total))


def _compiler_thread(stat: str) -> tuple[int, float] | None:
    """A thread's /proc stat: its id and CPU seconds (utime + stime, fields 14 and 15 of proc(5)) where it is a HotSpot
    compiler thread, else None."""
    name = stat[stat.index("(") + 1 : stat.rindex(")")]
    if not name.startswith(COMPILER_THREADS):
        return None
    fields = stat[stat.rindex(")") + 2 :].split()
    return int(stat.split(" ", 1)[0]), (int(fields[11]) + int(fields[12])) / CLOCK_TICKS
