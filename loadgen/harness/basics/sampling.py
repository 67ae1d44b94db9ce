"""CPU, memory and CPU waits of a set of processes while a load runs (psutil, /proc), sampled in a background
thread."""

from __future__ import annotations

import os
import resource
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import psutil

from harness.basics.machine import CLOCK_TICKS, kernel_start

T = TypeVar("T")
INTERVAL_S = 0.25
TIMELINE_S = 1.0  # resident memory is also kept once a second, so a long run shows whether it grows


def yield_to_the_load() -> None:
    """The calling thread runs only when its CPU is otherwise idle (SCHED_IDLE): a sampler shares the load generator's
    CPUs, and at normal priority each of its wake-ups preempted the tool. Beside wrk on one CPU (the calibrated
    server's burn, 16 ms known) the harness's threads took as much CPU as wrk itself and put 1 % of its answers 0.8-1.4
    ms late (p99 16.8-17.4 ms, 16.05 without the harness). Where the kernel refuses, the thread stays as it was."""
    try:
        os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))  # 0: this thread (Linux)
    except (OSError, AttributeError):
        pass


def per_thread(pid: int, name: str, read: Callable[[str], T]) -> list[T] | None:
    """`read` of each live thread's /proc/<pid>/task/<tid>/<name>, a thread that ended meanwhile (or whose file does
    not read as expected) left out; None when the process is gone."""
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return None
    values = []
    for tid in tasks:
        try:
            with open(f"/proc/{pid}/task/{tid}/{name}") as f:
                values.append(read(f.read()))
        except (OSError, IndexError, ValueError):
            continue
    return values


def run_delay_s(pid: int) -> float | None:
    """Seconds the threads of `pid` have spent runnable but waiting for a CPU (the second field of each thread's
    /proc/<pid>/task/<tid>/schedstat): time others took on its cores. None where the kernel keeps no schedstat."""
    delays = per_thread(pid, "schedstat", lambda text: int(text.split()[1]))
    return sum(delays) / 1e9 if delays else None


@dataclass(frozen=True)
class ProcessCost:
    """What a process and its descendants have spent since they started: CPU seconds in user space and in the kernel
    (every thread's, ended ones included: /proc/<pid>/stat keeps them), and their live threads' context switches,
    voluntary and not (a thread's own count ends with it)."""

    user_s: float
    system_s: float
    switches: int


def process_tree(pid: int) -> list[psutil.Process] | None:
    """`pid` and its descendants (a wrapper's children, a cluster's workers); None when it is gone."""
    try:
        root = psutil.Process(pid)
        return [root, *root.children(recursive=True)]
    except psutil.Error:
        return None


def process_cost(pid: int) -> ProcessCost | None:
    """`pid`'s ProcessCost now, its descendants' summed in (a wrapper's children, a cluster's workers); None when it
    is gone. Read before and after a load, the difference is that load's cost."""
    tree = process_tree(pid)
    if tree is None:
        return None
    user = system = 0.0
    switches = 0
    for proc in tree:
        try:
            times = proc.cpu_times()
        except psutil.Error:
            continue  # ended meanwhile
        user, system = user + times.user, system + times.system
        switches += thread_switches(proc.pid)
    return ProcessCost(user, system, switches)


def thread_switches(pid: int) -> int:
    """Context switches of `pid`'s live threads, summed: /proc/<pid>/status counts the main thread's alone."""
    counts = per_thread(
        pid, "status", lambda text: sum(int(line.split()[1]) for line in text.splitlines() if "ctxt_switches:" in line)
    )
    return sum(counts or [])


def children_cpu_s() -> float:
    """CPU seconds of this process's children and their descendants that have ended and been reaped (RUSAGE_CHILDREN):
    the kernel's exact count, their last moments included."""
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def cgroup_cpu_s(pid: int) -> float | None:
    """CPU seconds that every process of `pid`'s control group has used, those that have ended included (the kernel's
    own count: cgroup v2's cpu.stat, v1's cpuacct.usage). None where neither is readable, or where `pid` is in the root
    group (the whole machine's count)."""
    try:
        lines = Path(f"/proc/{pid}/cgroup").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if path == "/":
            continue
        try:
            if controllers == "":  # v2: one hierarchy
                stat = Path(f"/sys/fs/cgroup{path}/cpu.stat").read_text()
                return int(stat.split("usage_usec", 1)[1].split()[0]) / 1e6
            if "cpuacct" in controllers.split(","):
                mount = "cpu,cpuacct" if Path("/sys/fs/cgroup/cpu,cpuacct").is_dir() else "cpuacct"
                return int(Path(f"/sys/fs/cgroup/{mount}{path}/cpuacct.usage").read_text()) / 1e9
        except (OSError, ValueError, IndexError):
            continue
    return None


def steal_s(cpus: list[int]) -> float | None:
    """Seconds the hypervisor ran something else while these CPUs had work (the steal column of /proc/stat, in clock
    ticks): time a virtual machine's processes lose that no scheduler of its own can see. None where not readable."""
    wanted, total = {f"cpu{c}" for c in cpus}, 0
    try:
        with open("/proc/stat") as f:
            for line in f:
                fields = line.split()
                if fields and fields[0] in wanted and len(fields) > 8:
                    total += int(fields[8])
    except (OSError, ValueError):
        return None
    return total / CLOCK_TICKS


class ProcessSampler:
    """Sums CPU seconds used between start() and stop() by the processes `pids()` names (processes may come and go),
    and the seconds their threads waited for a CPU while runnable (`run_delay`: what other work on their cores cost
    them), tracks the peak of their summed resident memory, and keeps that memory once a second (`timeline`)."""

    def __init__(self, pids: Callable[[], list[int]], cores: int, cpus: list[int] | None = None):
        self.pids, self.cores, self.cpus = pids, cores, cpus  # cpus: whose hypervisor steal is read (None: none)
        self._steal_at_start: float | None = None
        self.steal: float | None = None
        self._procs: dict[int, psutil.Process] = {}
        self._base: dict[int, float] = {}
        self._last: dict[int, float] = {}
        self._delay_base: dict[int, float] = {}
        self._delay_last: dict[int, float] = {}
        self.peak_rss = 0
        self.timeline: list[tuple[float, int]] = []  # (seconds since start, summed RSS in bytes)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._started = 0  # kernel ticks since boot (machine.kernel_start's clock): no wall-clock step moves it
        self._t0 = 0.0
        self.wall_s = 0.0

    def _counted_from_start(self, pid: int, first: bool) -> bool:
        """A process already running when sampling began counts from then (its counters at first sight are its
        base); a new one from its birth (base 0)."""
        return first or (kernel_start(pid) or 0) < self._started

    def _sample(self, first: bool = False, final: bool = False) -> None:
        rss = 0
        for pid in self.pids():
            try:
                proc = self._procs.get(pid) or self._procs.setdefault(pid, psutil.Process(pid))
                with proc.oneshot():
                    times = proc.cpu_times()
                    used = times.user + times.system
                    rss += proc.memory_info().rss
            except psutil.Error:
                continue
            if pid not in self._base:
                self._base[pid] = used if self._counted_from_start(pid, first) else 0.0
            self._last[pid] = used
            # run delay is cumulative per thread and each read walks every thread of the process: read at the ends
            # only, not four times a second beside the load
            delay = run_delay_s(pid) if first or final else None
            if delay is not None:
                if pid not in self._delay_base:
                    self._delay_base[pid] = delay if self._counted_from_start(pid, first) else 0.0
                self._delay_last[pid] = delay
        self.peak_rss = max(self.peak_rss, rss)
        elapsed = time.monotonic() - self._t0
        if not self.timeline or elapsed - self.timeline[-1][0] >= TIMELINE_S:
            self.timeline.append((elapsed, rss))

    def _loop(self) -> None:
        yield_to_the_load()
        while not self._stop.wait(INTERVAL_S):
            self._sample()

    def start(self) -> ProcessSampler:
        self._started = int(time.clock_gettime(time.CLOCK_BOOTTIME) * CLOCK_TICKS)
        self._t0 = time.monotonic()
        self._steal_at_start = steal_s(self.cpus) if self.cpus else None
        self._sample(first=True)
        self._thread.start()
        return self

    def stop(self) -> dict[str, Any]:
        self._sample(final=True)
        self._stop.set()
        self._thread.join()
        self.wall_s = time.monotonic() - self._t0
        start = self._steal_at_start
        end = steal_s(self.cpus) if self.cpus and start is not None else None
        self.steal = None if start is None or end is None else end - start
        return self.result()

    def cancel(self) -> None:
        self._stop.set()

    def cpu_s(self) -> float:
        return sum(self.cpu_by_pid().values())

    def cpu_by_pid(self) -> dict[int, float]:
        """CPU seconds each process used while sampled."""
        return {pid: self._last[pid] - self._base[pid] for pid in self._last}

    def run_delay(self) -> float | None:
        """Seconds the processes' threads waited for a CPU while sampled (None: no schedstat here)."""
        if not self._delay_last:
            return None
        return sum(self._delay_last[pid] - self._delay_base[pid] for pid in self._delay_last)

    def result(self, cpu_s: float | None = None) -> dict[str, Any]:
        out = usage(
            self.cores,
            self.cpu_s() if cpu_s is None else cpu_s,
            self.wall_s,
            self.peak_rss,
            self.timeline,
            self.run_delay(),
        )
        if self.steal is not None:
            out["steal_s"] = round(self.steal, 3)
        return out


def usage(
    cores: int,
    cpu_s: float,
    wall_s: float,
    peak_bytes: int,
    timeline: list[tuple[float, int]],
    run_delay: float | None = None,
) -> dict[str, Any]:
    """What every sampler reports (ProcessSampler here, EngineStatsSampler from a Docker engine's counters): CPU
    seconds, their share of `cores` over `wall_s`, peak memory and memory once a second, in MB, and where it is known
    the seconds the threads waited for a CPU while runnable."""
    return {
        "run_delay_s": None if run_delay is None else round(run_delay, 4),
        "cores": cores,
        "cpu_s": round(cpu_s, 3),
        "cpu_util": round(cpu_s / (wall_s * cores), 3) if wall_s else None,
        "peak_rss_mb": round(peak_bytes / 2**20, 1),
        "rss_mb_timeline": [[round(t, 1), round(rss / 2**20, 1)] for t, rss in timeline],
    }
