"""Which CPUs the server, the load generator and the upstream nginx get, chosen from the machine."""
from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any


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

    def to_dict(self) -> dict[str, Any]:
        return {"server": list(self.server), "loadgen": list(self.loadgen), "upstream": list(self.upstream)}

    def describe(self) -> str:
        at = {role: f" of {self.hosts[role]}" if self.hosts else "" for role in ("server", "loadgen", "upstream")}
        same_host = not self.hosts or self.hosts["upstream"] == self.hosts["loadgen"]
        shared = (" (shared with the load generator: no core is free)"
                  if same_host and set(self.upstream) & set(self.loadgen) else "")
        return (f"server on CPU {format_cpus(self.server)}{at['server']}, load generator on CPU "
                f"{format_cpus(self.loadgen)}{at['loadgen']}, upstream nginx on CPU {format_cpus(self.upstream)}"
                f"{at['upstream']}{shared}")


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


def plan(available: tuple[int, ...] | None = None, overrides: dict[str, str] | None = None) -> CpuPlan:
    """Server first, then one core for the upstream where one is free, the load generator on the rest.

    `overrides` may give explicit lists for 'server', 'loadgen', 'upstream' (from CPUS_SERVER etc.).
    """
    cpus = tuple(sorted(available if available is not None else os.sched_getaffinity(0)))
    if len(cpus) < 2:
        raise CpuPlanError(f"need at least 2 CPUs (one for the server, one for the load generator); this process may use {len(cpus)}")
    k = server_share(len(cpus))
    server, rest = cpus[:k], cpus[k:]
    if len(rest) >= 3:
        upstream, loadgen = rest[:1], rest[1:]
    else:  # too few cores: the upstream shares the load generator's, never the server's
        upstream, loadgen = rest, rest
    chosen = {"server": server, "loadgen": loadgen, "upstream": upstream}
    for role, text in (overrides or {}).items():
        if text:
            picked = parse_cpus(text)
            if not picked:  # " " or ",": an empty plan would fail later, far from its cause
                raise CpuPlanError(f"CPUS_{role.upper()}={text!r} names no CPU: give a list like 0-3,6 or leave it unset")
            outside = set(picked) - set(cpus)
            if outside:
                raise CpuPlanError(f"CPUS_{role.upper()}={text}: CPU {format_cpus(sorted(outside))} not available here ({format_cpus(cpus)})")
            chosen[role] = picked
    if set(chosen["server"]) & set(chosen["loadgen"]):
        raise CpuPlanError("the server and the load generator must not share CPUs: check CPUS_SERVER / CPUS_LOADGEN")
    if set(chosen["server"]) & set(chosen["upstream"]):
        wanted = (overrides or {}).get("upstream")
        if wanted:
            raise CpuPlanError(f"CPUS_UPSTREAM={wanted}: the upstream nginx would share the server's CPU "
                               f"{format_cpus(sorted(set(chosen['server']) & set(chosen['upstream'])))}; give it CPUs "
                               f"apart from the server's ({format_cpus(chosen['server'])})")
        chosen["upstream"] = chosen["loadgen"]  # a moved server: the upstream shares the load generator's, as on 2 cores
    return CpuPlan(chosen["server"], chosen["loadgen"], chosen["upstream"])


def plan_from_env(available: tuple[int, ...] | None = None) -> CpuPlan:
    return plan(available, overrides={role: os.environ.get(f"CPUS_{role.upper()}", "")
                                      for role in ("server", "loadgen", "upstream")})
