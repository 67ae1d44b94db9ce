"""How one load is run on the load generator's cores: a pure function of the tool, the load and the CPU list.

A single-threaded tool (ab, httperf) runs as one process per load-generator core, each pinned to its own core, the
load divided between them exactly (connections; requests and rate in proportion to them); never more processes than
connections or requests, never fewer than the open-file limits need. A multi-threaded tool (wrk, oha, h2load) runs as one process (more only where one
cannot hold the connections) with one thread per core, at most one per connection, unless the run names its threads:
then it keeps them exactly and the plan says it was not given all the cores. A tool with threads of its own (Gatling's
JVM) runs as one process on all the cores. `LOADGEN_PROCESSES=N` sets the count of a single-threaded tool's processes
(several may then share a core), so that a split can be exercised on a machine with one load-generator core.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from harness.tools import TOOLS, LoadSpec, LoadTool

# How a tool uses cores (its adapter's `threading`): "one" (a single thread: one process per core), "option" (a
# thread count it is given: one per core), "own" (threads of its own: pinned to every core)
SINGLE, OPTION, OWN = "one", "option", "own"


@dataclass(frozen=True)
class PlannedProcess:
    """One process of a load: its share of the load and the cores it is pinned to."""

    spec: LoadSpec
    cores: tuple[int, ...]

    @property
    def threads(self) -> int:
        return self.spec.threads or 1

    def argv(self, tool: LoadTool, scratch: Path) -> list[str]:
        """The exact command line: taskset pins it to its cores wherever it runs (this machine or a container)."""
        return ["taskset", "-c", ",".join(map(str, self.cores)), *tool.command(self.spec, scratch)]


@dataclass(frozen=True)
class LoadPlan:
    tool: str
    spec: LoadSpec  # the whole load
    processes: tuple[PlannedProcess, ...]
    loadgen_cores: tuple[int, ...]
    note: str | None = None  # why the load was not given all of the load generator's cores

    @property
    def all_cores(self) -> bool:
        return self.note is None

    def capacity(self, index: int) -> float:
        """How many cores process `index` can keep busy: its threads or its cores, whichever is fewer, shared with the
        other processes pinned to the same cores."""
        part = self.processes[index]
        sharing = sum(1 for p in self.processes if p.cores == part.cores)
        threads = len(part.cores) if threading_of(self.tool) == OWN else part.threads
        return min(threads, len(part.cores)) / sharing

    def describe(self) -> list[dict[str, Any]]:
        """Each process as results.json keeps it (with `cpu_s` added once measured)."""
        return [
            {"cores": list(p.cores), "threads": p.threads, "capacity": round(self.capacity(i), 3)}
            for i, p in enumerate(self.processes)
        ]


def shares(total: int, parts: int) -> list[int]:
    """`total` divided into `parts` whole shares that differ by at most one and add up to `total`."""
    base, extra = divmod(total, parts)
    return [base + (1 if i < extra else 0) for i in range(parts)]


def in_proportion(total: int, weights: list[int]) -> list[int]:
    """`total` divided in proportion to `weights` into whole shares that add up to it: each its floor, the rest one
    each to the largest remainders (the earliest on a tie). Exact multiples stay exact."""
    whole = sum(weights)
    out = [total * w // whole for w in weights]
    by_remainder = sorted(range(len(weights)), key=lambda i: (-(total * weights[i] % whole), i))
    for i in by_remainder[: total - sum(out)]:
        out[i] += 1
    return out


def divide(spec: LoadSpec, parts: int) -> list[LoadSpec]:
    """The shares of `spec` that `parts` processes run at the same time: connections in whole shares that differ by at
    most one, and the requests and the rate in proportion to each part's connections, so every part's connections
    carry the same load and the parts last equally long (a count in whole rounds of the connections stays in whole
    rounds). A count of requests too small for a request per part is refused (plan_load runs fewer parts)."""
    if parts == 1:
        return [spec]
    weights = shares(spec.concurrency, parts) if spec.concurrency else [1] * parts
    connections = weights if spec.concurrency else [spec.concurrency] * parts
    if spec.requests and spec.requests < parts:
        raise ValueError(f"{spec.requests} request(s) cannot be divided among {parts} tool processes")
    requests: list[int | None] = [*in_proportion(spec.requests, weights)] if spec.requests else [spec.requests] * parts
    rates = [spec.rate * w / sum(weights) if spec.rate else spec.rate for w in weights]
    return [replace(spec, concurrency=c, requests=n, rate=r) for c, n, r in zip(connections, requests, rates)]


def one_core_each(cores: tuple[int, ...], processes: int) -> list[tuple[int, ...]]:
    """A core per process, round-robin: several processes share a core only where they outnumber the cores."""
    return [(cores[i % len(cores)],) for i in range(processes)]


def core_sets(cores: tuple[int, ...], processes: int) -> list[tuple[int, ...]]:
    """Contiguous groups of cores, one per process; one core each where processes outnumber cores."""
    if processes >= len(cores):
        return one_core_each(cores, processes)
    out, at = [], 0
    for size in shares(len(cores), processes):
        out.append(cores[at : at + size])
        at += size
    return out


def process_count(tool_name: str, spec: LoadSpec, cores: int, needed: int, override: int | None) -> int:
    """`needed`: the fewest processes that can hold the connections (the open-file limits); never more processes than
    connections or requests."""
    if threading_of(tool_name) != SINGLE or not spec.concurrency:
        return needed
    wanted = override or cores
    return max(needed, min(wanted, spec.concurrency, spec.requests or spec.concurrency))


def plan_load(
    tool_name: str, spec: LoadSpec, cores: tuple[int, ...], needed: int = 1, override: int | None = None
) -> LoadPlan:
    """The processes that run `spec` on the load generator's `cores` (see the module's docstring); `needed` is the
    open-file limits' least count of processes, `override` LOADGEN_PROCESSES."""
    if not cores:
        raise ValueError("the load generator has no CPU to run on")
    count = process_count(tool_name, spec, len(cores), needed, override)
    threading, named = threading_of(tool_name), spec.threads
    groups = one_core_each(tuple(cores), count) if threading == SINGLE else core_sets(tuple(cores), count)
    processes: list[PlannedProcess] = []
    for part, group in zip(divide(spec, count), groups):
        if threading == SINGLE:
            part = replace(part, threads=1)
        elif threading == OPTION:
            wanted = shares(named, count)[len(processes)] if named else len(group)
            part = replace(part, threads=max(1, min(wanted, part.concurrency or wanted)))
        processes.append(PlannedProcess(part, group))
    threads = sum(p.threads for p in processes)
    note = None
    if threading == OPTION and named and threads < len(cores):
        note = (
            f"{tool_name} ran the {named} thread(s) the run names, on {threads} of the load generator's "
            f"{len(cores)} cores"
        )
    elif threading == SINGLE and count < len(cores) and override is None:
        note = (
            f"{count} {tool_name} process(es) for {spec.concurrency} connection(s): {count} of the load "
            f"generator's {len(cores)} cores"
        )
    elif override is not None and threading == SINGLE:
        note = f"LOADGEN_PROCESSES={override}: {count} {tool_name} process(es) on {len(cores)} core(s)"
    return LoadPlan(tool_name, spec, tuple(processes), tuple(cores), note)


def threading_of(tool_name: str) -> str:
    """The adapter's `threading`; a tool registered without one (a test's) runs as one process on every core."""
    return getattr(TOOLS.get(tool_name), "threading", OWN)
