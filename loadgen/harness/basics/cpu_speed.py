"""Each CPU's own speed while a load runs (CPU_METER=1; issue 41, docs/cpu-speed.md).

The host slows one virtual CPU at a time, for seconds, in stops too short to show as steal, and on this project's
2-core VM that holds most of an attempt's own spread. A probe before and after a run cannot see it; a meter beside
the load can: `cpu_meter.c`, pinned to each CPU of the server and of the load generator, runs 25 chunks of about 2 µs
of arithmetic every 10 ms (about 0.5 % of a CPU, 50 µs at a time) and leaves out the chunks this machine's scheduler
preempted. A role's `cpu_speed` is the share of full speed its CPUs' chunks ran at (1: each as fast as the best one
seen), kept in that role's sample of every attempt. Not with several hosts: the meter runs on this machine.

`choose` takes the configured switch once; the meter is built from its source with gcc on first use (`.tools/`), and
where it cannot be the attempts go on without it, said once.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import IO

from harness.basics.machine import pinned
from harness.basics.messages import warn
from harness.basics.paths import REPO

SOURCE = Path(__file__).with_name("cpu_meter.c")
BUILT = REPO / ".tools" / "cpu-meter"
PERIOD_MS, CHUNKS = 10, 25
LONGEST_S = 24 * 3600  # the meter runs until it is stopped; this only bounds one whose stop was never reached

_on = False
_unavailable: str | None = None  # why the meter cannot run here (said once)


def choose(on: bool) -> None:
    """CPU_METER, checked by the configuration."""
    global _on
    _on = on


def meter() -> Path | None:
    """The meter's program, built when its source is newer; None (said once) when off or where it cannot be built."""
    global _unavailable
    if not _on or _unavailable:
        return None
    if BUILT.exists() and BUILT.stat().st_mtime >= SOURCE.stat().st_mtime:
        return BUILT
    compiler = shutil.which("gcc") or shutil.which("cc")
    if compiler is None:
        _unavailable = "no C compiler (gcc or cc) to build it: apt-get install gcc, or leave CPU_METER unset"
    else:
        BUILT.parent.mkdir(parents=True, exist_ok=True)
        building = BUILT.with_suffix(f".{os.getpid()}")
        done = subprocess.run([compiler, "-O2", "-o", str(building), str(SOURCE)], capture_output=True, text=True)
        if done.returncode == 0:
            building.replace(BUILT)  # whole or not at all, whichever process builds it
            return BUILT
        _unavailable = f"{compiler} could not build {SOURCE}: {done.stderr.strip()[-300:]}"
    warn(f"CPU_METER: the attempts are measured without each CPU's speed: {_unavailable}")
    return None


def reading(remote: bool) -> str:
    """What a run's conditions say of the meter (building it where it is on and not yet built)."""
    if not _on:
        return "off (CPU_METER=0)"
    if remote:
        return "off: with several hosts the meter does not run"
    if meter() is None:
        return f"off: {_unavailable}"
    return (
        f"on: {CHUNKS} chunks of about 2 µs every {PERIOD_MS} ms on each server and load-generator CPU (about 0.5 % "
        "of each); the ranking divides by its reading (docs/cpu-speed.md)"
    )


def speed(output: str) -> float | None:
    """The share of full speed over a meter's lines ("start kept_chunks kept_ns best_ns"): the kept chunks' count
    times the best chunk's time, over their summed time. None without a kept chunk."""
    rows = [[float(x) for x in line.split()] for line in output.splitlines() if len(line.split()) == 4]
    kept, spent = sum(r[1] for r in rows), sum(r[2] for r in rows)
    if not rows or kept <= 0 or spent <= 0:
        return None
    return round(min(1.0, kept * min(r[3] for r in rows) / spent), 4)


class SpeedMeter:
    """One meter process pinned to each CPU of each role, from `start` to `stop` (or `cancel`, which leaves none)."""

    def __init__(self, cpus_by_role: dict[str, list[int]]):
        self.cpus_by_role = {role: sorted(set(cpus)) for role, cpus in cpus_by_role.items() if cpus}
        # (role, the meter, the file it writes to: a pipe would fill in a long load and stop the meter)
        self._procs: list[tuple[str, subprocess.Popen[bytes], IO[bytes]]] = []

    def start(self) -> SpeedMeter:
        program = meter()
        if program is None:
            return self
        args = [str(program), str(LONGEST_S), str(PERIOD_MS), str(CHUNKS)]
        for role, cpus in self.cpus_by_role.items():
            for cpu in cpus:
                out = tempfile.TemporaryFile()
                self._procs.append(
                    (role, subprocess.Popen(pinned(args, [cpu]), stdout=out, stderr=subprocess.DEVNULL), out)
                )
        return self

    def stop(self) -> dict[str, float]:
        """Each role's speed: the mean of its CPUs' (a role none of whose CPUs read is left out)."""
        outputs: dict[str, list[float]] = {}
        for role, proc, out in self._procs:
            proc.terminate()
            proc.wait()
            out.seek(0)
            read = speed(out.read().decode(errors="replace"))
            out.close()
            if read is not None:
                outputs.setdefault(role, []).append(read)
        self._procs.clear()
        return {role: round(sum(s) / len(s), 4) for role, s in outputs.items()}

    def cancel(self) -> None:
        for _, proc, out in self._procs:
            if proc.poll() is None:
                proc.kill()
            proc.wait()
            out.close()
        self._procs.clear()
