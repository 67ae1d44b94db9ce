"""Execution: runs a load as its plan says (tools/load_plan.py: one or more tool processes, each pinned to its cores),
shows progress, samples, parses and merges. Every load ends within a bounded time, also on a server that hangs
(deadlines.py)."""

from __future__ import annotations

import os
import resource
import subprocess
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol, TypeVar, runtime_checkable

import psutil

from harness.basics import interrupt
from harness.basics.cpu_speed import SpeedMeter
from harness.basics.sampling import ProcessSampler, usage
from harness.judging.flags import BESIDE_LOADGEN, HARNESS
from harness.measuring.deadlines import deadline_s, wait
from harness.runtime import RunningServer, Runtime, State
from harness.runtime.protocol import Sampler, ToolProcess
from harness.tools import TOOLS, LoadSpec, LoadTool, ToolFailed
from harness.tools.load_plan import LoadPlan
from harness.tools.output import Measurement, merge

T = TypeVar("T")


@runtime_checkable
class ExactCpu(Protocol):
    """A tool sampler whose reading can take the tools' exact CPU seconds in place of its sampled ones."""

    def result(self, cpu_s: float | None = None) -> dict[str, Any]: ...


@dataclass
class Outcome:
    measurement: Measurement | None
    failure: str | None
    commands: list[list[str]] = field(default_factory=list)
    raw: list[Path] = field(default_factory=list)
    samples: dict[str, dict[str, Any]] = field(
        default_factory=dict
    )  # "server" and "loadgen": CPU seconds, utilisation, peak RSS
    plan: LoadPlan | None = None
    parts_cpu_s: list[float] | None = None  # each tool process's CPU seconds (None: only the whole was sampled)
    # each tool process's start, seconds after the first's on the harness's clock (started one after another), and its
    # own duration as the tool measured it: a split load's parts on one clock (tools/output.merge)
    parts_started_s: list[float] = field(default_factory=list)
    parts_duration_s: list[float] = field(default_factory=list)
    stopped: str | None = None  # why the harness stopped the tool before it ended by itself


def _own_cpu_s() -> float:
    used = resource.getrusage(resource.RUSAGE_SELF)
    return used.ru_utime + used.ru_stime


def _together(calls: Iterable[Callable[[], T]]) -> list[T]:
    """The calls run at once, their results in order (a sampler that reads an engine's counters over the network
    waits about a second for a fresh reading: the server's and the tools' are read side by side)."""
    calls = list(calls)
    with ThreadPoolExecutor(len(calls)) as pool:
        return [future.result() for future in [pool.submit(call) for call in calls]]


@dataclass(frozen=True)
class Beside:
    """What a load runs beside, each sampled while it runs: the server it measures, the servers asleep meanwhile
    (`idle_pids()`, interleaved rounds) and those that share the load generator's cores (the upstream nginx where no
    core is its own)."""

    server: RunningServer
    server_cores: int = 1
    idle_pids: Callable[[], list[int]] | None = None
    neighbours: tuple[RunningServer, ...] = ()


class ToolTree:
    """The pids of the tool processes this load started and their children, each with the process it belongs to."""

    def __init__(self) -> None:
        self.procs: list[ToolProcess] = []
        self.part_of: dict[int, int] = {}

    def __call__(self) -> list[int]:
        pids = []
        for index, proc in enumerate(self.procs):
            if proc.poll() is not None:
                continue
            own = [proc.pid]
            try:
                own.extend(c.pid for c in psutil.Process(proc.pid).children(recursive=True))
            except psutil.Error:
                pass
            self.part_of.update(dict.fromkeys(own, index))
            pids.extend(own)
        return pids

    def cpu_by_part(self, sampler: Sampler, exact: float | None) -> list[float] | None:
        """Each process's CPU seconds (its children's included): the kernel's own account where each was reaped as our
        child (runtime/child_tool), else sampled and scaled to the exact total where it is known; None where only the
        whole is known (an engine's counters, or several tools the sampler never saw run)."""
        reaped = [getattr(proc, "cpu_s", None) for proc in self.procs]
        if self.procs and all(cpu is not None for cpu in reaped):
            return [round(cpu, 3) for cpu in reaped if cpu is not None]
        by_pid = getattr(sampler, "cpu_by_pid", None)
        if by_pid is None:
            return None
        parts = [0.0] * len(self.procs)
        for pid, used in by_pid().items():
            if pid in self.part_of:
                parts[self.part_of[pid]] += used
        sampled = sum(parts)
        if exact is not None and sampled > 0:
            parts = [p * exact / sampled for p in parts]
        elif exact is not None and len(parts) > 1:  # the sampler never saw them run: the whole alone is known
            return None
        elif exact is not None:
            parts = [exact]
        return [round(p, 3) for p in parts]


def _samplers(runtime: Runtime, beside: Beside, tree: ToolTree, cores: list[int]) -> dict[str, Sampler]:
    samplers: dict[str, Sampler] = {
        "server": runtime.sampler(beside.server, beside.server_cores),
        "loadgen": runtime.tool_sampler(tree, cores),
    }
    if beside.idle_pids:  # what the sleeping servers take from the measured one's CPUs meanwhile
        samplers["idle_servers"] = ProcessSampler(beside.idle_pids, beside.server_cores)
    for neighbour in beside.neighbours:  # e.g. the upstream: its CPU is the load generator's too
        samplers[f"{BESIDE_LOADGEN}{neighbour.name}"] = runtime.sampler(neighbour, len(cores))
    return samplers


@dataclass(frozen=True)
class Naming:
    """Where a load's outputs go (`raw`/`stem`, one folder per tool process) and how its progress is labelled;
    `status` (e.g. the whole run's remaining time) is shown beside the progress bar."""

    raw: Path
    stem: str
    label: str
    status: str = ""


def fresh_scratches(raw: Path, stem: str, parts: int) -> list[Path]:
    """The folders of one load's tool processes (`stem`, or `stem.partN` for each of several), none of which exists
    yet: a load measured again (a record re-measured, its warm-up run again) gets `stem-again`, `stem-again2`, ...,
    so the first measurement's outputs stay as they were, where its attempts point."""

    def named(base: str) -> list[Path]:
        return [raw / (base if parts == 1 else f"{base}.part{i + 1}") for i in range(parts)]

    scratches, again = named(stem), 1
    while any(s.exists() for s in scratches):
        scratches = named(f"{stem}-again" + (str(again) if again > 1 else ""))
        again += 1
    return scratches


def measure(
    runtime: Runtime, plan: LoadPlan, naming: Naming, beside: Beside, expected_rps: float | None = None
) -> Outcome:
    """Runs the load as `plan` says (its processes, each pinned to its cores); while it runs, samples what `beside`
    names, the tool processes one by one, and this harness's own CPU (its polling and sampling threads run on the load
    generator's cores). `expected_rps` (the warm-up's rate) sets a counted load's deadline."""
    scratches = fresh_scratches(naming.raw, naming.stem, len(plan.processes))
    outcome = Outcome(None, None, plan=plan)
    deadline = deadline_s(plan.spec, expected_rps)
    load = Load(runtime, plan, outcome)
    # The harness's own polling, sampling and progress threads stay on the load generator's CPUs while the load runs,
    # off the server's (threads inherit this thread's affinity when they start); restored afterwards. (With HOSTS the
    # load generator's CPUs are another machine's: those this one has, if any.)
    affinity_before = os.sched_getaffinity(0)
    os.sched_setaffinity(0, (set(plan.loadgen_cores) & affinity_before) or affinity_before)
    try:
        if not load.start_sampling(beside):
            return outcome
        load.start_tools(scratches)
        stopped = wait(load.tree.procs, plan.tool, plan.spec, outcome.raw, naming.label, naming.status, deadline)
        load.finish()
    finally:
        os.sched_setaffinity(0, affinity_before)
        load.clean_up()
    _read(outcome, TOOLS[plan.tool], scratches)
    if load.sampling_failed:
        outcome.failure = load.sampling_failed
    if stopped:
        _note_stopped(outcome, plan.spec, deadline)
    return outcome


class Load:
    """One load's tool processes and samplers, from their start to their clean-up (also on Ctrl-C or a failure)."""

    def __init__(self, runtime: Runtime, plan: LoadPlan, outcome: Outcome):
        self.runtime, self.plan, self.outcome = runtime, plan, outcome
        self.tree = ToolTree()
        self.samplers: dict[str, Sampler] = {}
        self.sampling_failed: str | None = None
        self.started = time.monotonic()
        self.own_cpu_before = _own_cpu_s()
        self.tools_cpu_before: float | None = None
        self.meter: SpeedMeter | None = None

    def start_sampling(self, beside: Beside) -> bool:
        try:
            self.samplers = _samplers(self.runtime, beside, self.tree, list(self.plan.loadgen_cores))
            _together(sampler.start for sampler in self.samplers.values())
            if not self.runtime.remote:  # each CPU's speed beside the load (CPU_METER=1): its meters run here
                roles = {"server": beside.server.cpus, "loadgen": list(self.plan.loadgen_cores)}
                self.meter = SpeedMeter(roles).start()
            self.tools_cpu_before = self.runtime.tools_cpu_s()  # after the samplers: the loadgen container is up
        except Exception as exc:  # noqa: BLE001 - an engine's error, a process gone: this attempt is lost, not the run
            self.outcome.failure = f"the CPU sampling could not start, so the load was not run: {_what(exc)}"
            return False
        return True

    def start_tools(self, scratches: list[Path]) -> None:
        tool, cores = TOOLS[self.plan.tool], list(self.plan.loadgen_cores)
        self.started = time.monotonic()
        for process, scratch in zip(self.plan.processes, scratches):
            scratch.mkdir(parents=True)  # fresh (fresh_scratches): never another load's outputs
            argv = process.argv(tool, scratch)
            self.outcome.commands.append(argv)
            self.outcome.raw.append(scratch / "output.txt")
            with interrupt.deferred():  # a signal during the Popen raises once the tool is in the tree clean_up stops
                self.tree.procs.append(self.runtime.tool_process(argv, cores, scratch / "output.txt"))
                self.outcome.parts_started_s.append(round(time.monotonic() - self.started, 4))
            State().add_tool(self.tree.procs[-1].pid, argv)  # listed while it runs: `make down` stops it if killed

    def finish(self) -> None:
        """The tools ended: the samplers read for the last time, the tools' CPU taken exactly where it can be."""
        for proc in self.tree.procs:
            proc.wait()
        wall = time.monotonic() - self.started
        samplers, outcome = self.samplers, self.outcome
        try:
            outcome.samples = dict(zip(samplers, _together(sampler.stop for sampler in samplers.values())))
            # The kernel's count where the runtime has one: sampling misses a tool's last moments, and a short tool's
            # whole run where the sampler's idle-priority thread gets no CPU beside it. A count that went back is
            # another container's (the loadgen container made again meanwhile): then only the sampled figure.
            after, before = self.runtime.tools_cpu_s(), self.tools_cpu_before
            exact = None if after is None or before is None or after < before else after - before
            loadgen = samplers["loadgen"]
            if isinstance(loadgen, ExactCpu):  # both runtimes' tool samplers are
                outcome.samples["loadgen"] = loadgen.result(exact)
            outcome.parts_cpu_s = self.tree.cpu_by_part(samplers["loadgen"], exact)
            # the meters stop after the tools' count: reaped, they would be counted among this process's children
            for role, speed in (self.meter.stop() if self.meter else {}).items():
                if role in outcome.samples:
                    outcome.samples[role]["cpu_speed"] = speed
            if not self.runtime.remote:  # this process's threads, on the load generator's cores meanwhile
                cores = len(self.plan.loadgen_cores)
                outcome.samples[HARNESS] = usage(cores, _own_cpu_s() - self.own_cpu_before, wall, 0, [])
        except Exception as exc:  # noqa: BLE001 - the load ran, but its CPU figures are lost: so is the attempt
            self.sampling_failed = f"the CPU sampling failed at the load's end: {_what(exc)}"

    def clean_up(self) -> None:
        for sampler in self.samplers.values():
            sampler.cancel()
        if self.meter:
            self.meter.cancel()
        for proc in self.tree.procs:  # Ctrl-C or a failure: no tool outlives the harness
            if proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(5)
                except subprocess.TimeoutExpired:
                    proc.kill()
        State().drop_tools()


def _read(outcome: Outcome, tool: LoadTool, scratches: list[Path]) -> None:
    """The tool's outputs parsed and, where several processes ran, merged (tools/output.merge says what that keeps)."""
    try:
        measured = [
            tool.parse(path.read_text(errors="replace"), scratch) for path, scratch in zip(outcome.raw, scratches)
        ]
        first = min(outcome.parts_started_s, default=0.0)
        outcome.parts_started_s = [round(s - first, 4) for s in outcome.parts_started_s]
        outcome.parts_duration_s = [m.duration_s for m in measured]
        outcome.measurement = merge(measured, outcome.parts_started_s or None)
        if outcome.measurement.requests == 0:
            outcome.failure = "no request completed"
    except ToolFailed as exc:
        outcome.failure = str(exc)
    except Exception as exc:  # noqa: BLE001 - output the parser did not foresee costs this attempt, kept with its raw
        outcome.failure = f"{tool.name}'s output could not be read ({_what(exc)}); it is kept in " + ", ".join(
            str(p) for p in outcome.raw
        )


def _what(exc: Exception) -> str:
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


def _note_stopped(outcome: Outcome, spec: LoadSpec, deadline: float) -> None:
    """The tool was stopped at the deadline: what it reported is kept, with the requests it was still waiting for
    (one per connection; tools count only the requests they saw time out) counted as timeouts, and the reason."""
    outcome.stopped = (
        f"stopped by the harness at this load's deadline ({deadline:.0f} s): the server did not answer in time"
    )
    m = outcome.measurement
    if m:
        m.errors = replace(m.errors, timeout=m.errors.timeout + (spec.concurrency or 0))
    if outcome.failure:  # "ab printed no summary: ...; stopped by the harness at ..."
        outcome.failure = f"{outcome.failure}; {outcome.stopped}"
