"""Which CPUs the server, the load generator and the upstream nginx get, chosen from the machine."""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

TOPOLOGY = Path("/sys/devices/system/cpu")  # cpu<N>/topology/thread_siblings_list: the CPUs of N's physical core


class CpuPlanError(Exception):
    pass


@dataclass(frozen=True)
class CpuPlan:
    server: tuple[int, ...]
    loadgen: tuple[int, ...]
    upstream: tuple[int, ...]
    # HOSTS: each role's host (its address); None: every role on this machine
    hosts: dict[str, str] | None = field(default=None, compare=False, hash=False)
    # LOADGEN_PROCESSES: a single-threaded tool's process count (None: one per load-generator core)
    loadgen_processes: int | None = None
    threads_per_core: int = 1  # SMT: the most CPUs (hyperthreads) one physical core holds; roles take whole cores

    def to_dict(self) -> dict[str, Any]:
        return {"server": list(self.server), "loadgen": list(self.loadgen), "upstream": list(self.upstream)}

    def describe(self) -> str:
        at = {role: f" of {self.hosts[role]}" if self.hosts else "" for role in ("server", "loadgen", "upstream")}
        same_host = not self.hosts or self.hosts["upstream"] == self.hosts["loadgen"]
        shared = (
            " (shared with the load generator: no core is free)"
            if same_host and set(self.upstream) & set(self.loadgen)
            else ""
        )
        smt = (
            f"; {self.threads_per_core} threads per core, each core's threads in one role"
            if self.threads_per_core > 1
            else ""
        )
        return (
            f"server on CPU {format_cpus(self.server)}{at['server']}, load generator on CPU "
            f"{format_cpus(self.loadgen)}{at['loadgen']}, upstream nginx on CPU {format_cpus(self.upstream)}"
            f"{at['upstream']}{shared}{smt}"
        )


def format_cpus(cpus: Iterable[int]) -> str:
    return ",".join(str(c) for c in cpus)


def cpu_ranges(cpus: Iterable[int]) -> str:
    """(0, 1, 2, 3, 6) -> '0-3,6': a long CPU list as parse_cpus reads it."""
    out: list[str] = []
    run: list[int] = []
    for cpu in sorted(cpus):
        if run and cpu != run[-1] + 1:
            out.append(f"{run[0]}-{run[-1]}" if len(run) > 1 else str(run[0]))
            run = []
        run.append(cpu)
    if run:
        out.append(f"{run[0]}-{run[-1]}" if len(run) > 1 else str(run[0]))
    return ",".join(out)


def parse_cpus(text: str) -> tuple[int, ...]:
    """'0-3,6' -> (0, 1, 2, 3, 6)"""
    cpus: list[int] = []
    try:
        for part in text.split(","):
            part = part.strip()
            if "-" in part:
                lo, hi = part.split("-")
                if int(hi) < int(lo):
                    raise ValueError(part)
                cpus.extend(range(int(lo), int(hi) + 1))
            elif part:
                cpus.append(int(part))
    except ValueError:
        raise CpuPlanError(f"bad CPU list {text!r}: use a form like 0-3,6") from None
    return tuple(cpus)


def server_share(available: int) -> int:
    """Cores for the server: 4 where there are 12 or more, 2 from 8, else 1 (the load generator needs the rest)."""
    if available >= 12:
        return 4
    if available >= 8:
        return 2
    return 1


def siblings_from_kernel(cpus: Iterable[int], topology: Path = TOPOLOGY) -> dict[int, tuple[int, ...]]:
    """Each CPU's physical core as the kernel lists it (its SMT siblings, itself included); a CPU the kernel does not
    describe is a core of its own."""
    out = {}
    for cpu in cpus:
        try:
            out[cpu] = parse_cpus((topology / f"cpu{cpu}" / "topology" / "thread_siblings_list").read_text())
        except (OSError, CpuPlanError):
            out[cpu] = (cpu,)
    return out


def assumed_siblings(count: int, threads_per_core: int) -> dict[int, tuple[int, ...]]:
    """The siblings of a machine of `count` CPUs with `threads_per_core` threads each, numbered as Linux numbers them
    on x86 (CPU n and n + count/threads share a core): what `make plan ASSUME_CPUS=16 ASSUME_SMT=2` plans for."""
    if count % threads_per_core:
        raise CpuPlanError(f"ASSUME_SMT={threads_per_core} does not divide ASSUME_CPUS={count} into whole cores")
    cores = count // threads_per_core
    return {cpu: tuple(cpu % cores + t * cores for t in range(threads_per_core)) for cpu in range(count)}


def physical_cores(cpus: tuple[int, ...], siblings: dict[int, tuple[int, ...]]) -> list[tuple[int, ...]]:
    """`cpus` grouped by physical core (each group the siblings among `cpus`), in the order of each core's first CPU."""
    cores: dict[tuple[int, ...], None] = {}
    for cpu in cpus:
        cores[tuple(c for c in sorted(siblings.get(cpu, (cpu,))) if c in cpus) or (cpu,)] = None
    return sorted(cores, key=lambda core: core[0])


def plan(
    available: tuple[int, ...] | None = None,
    overrides: dict[str, str] | None = None,
    siblings: dict[int, tuple[int, ...]] | None = None,
) -> CpuPlan:
    """Server first, then one core for the upstream where one is free, the load generator on the rest; each role takes
    whole physical cores (`siblings`, else the kernel's topology), so no hyperthread of the server's cores runs the load
    generator, unless the machine has a single core.

    `overrides` may give explicit lists for 'server', 'loadgen', 'upstream' (from CPUS_SERVER etc.).
    """
    cpus = tuple(sorted(available if available is not None else os.sched_getaffinity(0)))
    if len(cpus) < 2:
        raise CpuPlanError(
            f"need at least 2 CPUs (one for the server, one for the load generator); this process may use {len(cpus)}"
        )
    siblings = siblings if siblings is not None else siblings_from_kernel(cpus)
    cores = physical_cores(cpus, siblings)
    if len(cores) < 2:  # one core's threads: they cannot be kept apart
        cores = [(cpu,) for cpu in cpus]
    k = server_share(len(cpus))
    taken = next((n for n in range(1, len(cores)) if sum(map(len, cores[:n])) >= k), len(cores) - 1)
    server, rest = _flat(cores[:taken]), cores[taken:]
    if len(_flat(rest)) >= 3 and len(rest) >= 2:
        upstream, loadgen = rest[0], _flat(rest[1:])
    else:  # too few cores: the upstream shares the load generator's, never the server's
        upstream = loadgen = _flat(rest)
    chosen = _overridden({"server": server, "loadgen": loadgen, "upstream": upstream}, cpus, overrides or {})
    apart = [c for c in cores if set(c) & set(chosen["server"]) and set(c) & set(chosen["loadgen"])]
    if apart:
        raise CpuPlanError(
            f"CPU {format_cpus(apart[0])} are one physical core's threads: give them all to the server "
            "or all to the load generator (CPUS_SERVER / CPUS_LOADGEN)"
        )
    return CpuPlan(chosen["server"], chosen["loadgen"], chosen["upstream"], threads_per_core=max(map(len, cores)))


def _flat(cores: list[tuple[int, ...]]) -> tuple[int, ...]:
    return tuple(sorted(cpu for core in cores for cpu in core))


def _overridden(
    chosen: dict[str, tuple[int, ...]], cpus: tuple[int, ...], overrides: dict[str, str]
) -> dict[str, tuple[int, ...]]:
    """The plan with CPUS_SERVER, CPUS_LOADGEN and CPUS_UPSTREAM applied and checked."""
    for role, text in overrides.items():
        if text:
            picked = parse_cpus(text)
            if not picked:  # " " or ",": an empty plan would fail later, far from its cause
                raise CpuPlanError(
                    f"CPUS_{role.upper()}={text!r} names no CPU: give a list like 0-3,6 or leave it unset"
                )
            outside = set(picked) - set(cpus)
            if outside:
                raise CpuPlanError(
                    f"CPUS_{role.upper()}={text}: CPU {format_cpus(sorted(outside))} not available here ({format_cpus(cpus)})"
                )
            chosen[role] = picked
    if set(chosen["server"]) & set(chosen["loadgen"]):
        raise CpuPlanError("the server and the load generator must not share CPUs: check CPUS_SERVER / CPUS_LOADGEN")
    if set(chosen["server"]) & set(chosen["upstream"]):
        wanted = overrides.get("upstream")
        if wanted:
            raise CpuPlanError(
                f"CPUS_UPSTREAM={wanted}: the upstream nginx would share the server's CPU "
                f"{format_cpus(sorted(set(chosen['server']) & set(chosen['upstream'])))}; give it CPUs "
                f"apart from the server's ({format_cpus(chosen['server'])})"
            )
        chosen["upstream"] = chosen[
            "loadgen"
        ]  # a moved server: the upstream shares the load generator's, as on 2 cores
    return chosen


def plan_from_env(available: tuple[int, ...] | None = None) -> CpuPlan:
    return plan(
        available,
        overrides={role: os.environ.get(f"CPUS_{role.upper()}", "") for role in ("server", "loadgen", "upstream")},
    )
