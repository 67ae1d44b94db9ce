"""How much of a JVM server's CPU its JIT compilers took: the warm-up's direct reading of whether the JIT is done.

HotSpot compiles on threads of their own, named "C1 CompilerThreadN" and "C2 CompilerThreadN" (the kernel keeps the
first 15 characters). Read from /proc, their CPU time beside the whole process tree's tells a warm-up run in which
the JIT still compiled from one after it had gone quiet. Measured by hand (the server on CPU 0, ab -c1000 on
/factorial?param=1 from CPU 1, runs of about 1 s, 2026-12-02): the compilers took 18-50 % of akka's, socko's and
finagle's CPU while their rate climbed, and 0-3 % from the run where it reached its plateau on (akka at about 38,000
connections, socko 59,000, finagle 96,000), with a rare run of 10-17 % (a recompilation) after that.

A process without such threads (node, rust, nginx) or one this machine cannot read (a remote Docker host) gives None:
its warm-up is judged on its rates alone."""

from __future__ import annotations

import os
from dataclasses import dataclass

import psutil

COMPILER_THREADS = ("C1 CompilerThre", "C2 CompilerThre")


@dataclass(frozen=True)
class CpuTicks:
    """CPU time in clock ticks since the process started: each JIT compiler thread's by thread id (HotSpot ends idle
    ones and starts others), and the whole process tree's, its ended threads' included (/proc/<pid>/stat)."""

    compiler: dict[int, int]
    total: int


def read(pid: int) -> CpuTicks | None:
    """The CPU ticks of the process tree under `pid` (a wrapper's children counted in); None where it has no HotSpot
    compiler thread or cannot be read."""
    try:
        tree = [pid] + [child.pid for child in psutil.Process(pid).children(recursive=True)]
    except psutil.Error:
        return None
    compiler: dict[int, int] = {}
    total = 0
    for member in tree:
        total += _ticks(f"/proc/{member}/stat") or 0
        for tid, (name, ticks) in _threads(member).items():
            if name.startswith(COMPILER_THREADS):
                compiler[tid] = ticks
    return CpuTicks(compiler, total) if compiler else None


def share(before: CpuTicks | None, after: CpuTicks | None) -> float | None:
    """The compilers' share of the process's CPU between two readings; None without both, or without CPU spent. A
    compiler thread that ended between them loses its last ticks (an idle one, as a rule)."""
    if before is None or after is None or after.total <= before.total:
        return None
    compiled = sum(ticks - before.compiler.get(tid, 0) for tid, ticks in after.compiler.items())
    return min(1.0, max(0, compiled) / (after.total - before.total))


def _threads(pid: int) -> dict[int, tuple[str, int]]:
    """Each thread of `pid` by id: its name and its CPU ticks (none where the process is gone)."""
    out = {}
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return {}
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/comm") as comm:
                name = comm.read().rstrip("\n")
        except OSError:  # the thread ended meanwhile
            continue
        ticks = _ticks(f"/proc/{pid}/task/{tid}/stat")
        if ticks is not None:
            out[int(tid)] = (name, ticks)
    return out


def _ticks(stat_path: str) -> int | None:
    """utime + stime of a /proc stat file (fields 14 and 15 of proc(5)); None where it is gone."""
    try:
        with open(stat_path) as stat:
            text = stat.read()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2 :].split()
    return int(fields[11]) + int(fields[12])
