"""Where a command runs and on what: the runtime of HOSTS, the servers a command takes (with the A/A twin), the CPU
plan; and the command line's lists of names."""

from __future__ import annotations

import argparse
from dataclasses import replace

from harness.basics.cpus import CpuPlan, assumed_siblings
from harness.basics.cpus import plan as cpu_plan
from harness.basics.messages import say
from harness.config.environment import Configuration
from harness.config.manifest import Server, at_port, by_default, select, twin
from harness.containers.several_hosts import HostsRuntime
from harness.servers.preflight import check_hosts_settings
from harness.servers.session import Session


def names(text: str | None) -> list[str]:
    return [n for n in (text or "").replace(",", " ").split() if n]


def hosts_runtime(args: argparse.Namespace, config: Configuration) -> HostsRuntime | None:
    """With HOSTS set, the runtime on those hosts (every engine asked first; settings that would mean something else
    refused); None without it."""
    if not config.hosts:
        return None
    given_cpus = {f"CPUS_{role.upper()}": cpus for role, cpus in config.cpus.items()}
    check_hosts_settings(config.hosts, config.runtime, args.command, given_cpus)
    return HostsRuntime(config.hosts, config.memory_limits)


def targets(session: Session, requested: list[str], servers: dict[str, Server]) -> list[Server]:
    """Named servers; else the ones that are up; else all of them (the calibrated one only when named)."""
    if requested:
        return select(servers, requested)
    up = session.running()
    return [s for s in by_default(servers) if s.name in up] or by_default(servers)


def with_twin(
    servers: dict[str, Server], chosen: list[Server], name: str, ports: dict[str, int], announce: bool = True
) -> list[Server]:
    """`chosen` with `name`'s A/A twin right after it (and in `servers`, for the session): measured like any server,
    so the report can say whether the method ordered two identical servers. Where PORTS moves `name`, its twin
    moves with it, clear of every port the run uses."""
    placed = {n: at_port(s, ports.get(n, s.port)) for n, s in servers.items()}
    taken = {p for s in (*servers.values(), *placed.values()) for p in (s.port, s.h2c_port) if p}
    double = twin(placed[name], taken)
    servers[double.name] = double
    if announce:
        say(
            f"A/A control: {name} is measured twice, as {name} and {double.name} (port {double.port}); the report says "
            "whether the two were ordered (TWIN= turns it off)"
        )
    at = next(i for i, s in enumerate(chosen) if s.name == name)
    return chosen[: at + 1] + [double] + chosen[at + 1 :]


def cpu_plan_of(config: Configuration, available: tuple[int, ...] | None = None) -> CpuPlan:
    """This machine's CPU plan (or that of `available` CPUs, of ASSUME_SMT threads per core where `make plan` assumes
    them), with CPUS_* and LOADGEN_PROCESSES applied."""
    siblings = assumed_siblings(len(available), config.assume_smt or 1) if config.assume_cpus and available else None
    return replace(
        cpu_plan(available, overrides=config.cpus, siblings=siblings), loadgen_processes=config.loadgen_processes
    )
