"""Checks before any run: settings that contradict HOSTS, the tools a run needs, loads the open-file limits shape.
Problems are reported before anything starts; loads are split across tool processes or announced, never silently
cut short (the tools' own checks: tools/availability.py)."""

from __future__ import annotations

import os
from collections.abc import Mapping

from harness.basics.machine import nofile_limit
from harness.basics.messages import warn
from harness.config.host_roles import Host
from harness.config.scenarios import Scenario
from harness.tools.availability import PreflightError, tool_processes


def check_hosts_settings(
    roles: dict[str, Host], runtime: str, command: str, environ: Mapping[str, str] = os.environ
) -> None:
    """With HOSTS set, the settings that would mean something else: RUNTIME=local, CPUS_* (each host's CPUs are
    HOSTS' cpus=), `make docker-overhead` (docker against local on this machine)."""
    where = ", ".join(f"{h.role} on {h.endpoint}" for h in roles.values())
    if (runtime or "auto").strip().lower() == "local":
        raise PreflightError(
            f"HOSTS ({where}) runs every role in a container on its host: RUNTIME=local cannot; unset one of them"
        )
    cpus = [name for name in ("CPUS_SERVER", "CPUS_LOADGEN", "CPUS_UPSTREAM") if environ.get(name)]
    if cpus:
        raise PreflightError(
            f"{', '.join(cpus)} name this machine's CPUs; with HOSTS give each host's as "
            "role=endpoint,cpus=0-3 (cpus=0.2 for CPUs 0 and 2)"
        )
    if command == "overhead":
        raise PreflightError("make docker-overhead compares the docker and local runtimes on this machine: unset HOSTS")


def tools_needed(scenarios: list[Scenario]) -> set[str]:
    """The scenarios' tools, and the tools of their warm-up loads."""
    return {s.tool for s in scenarios} | {s.warmup_tool for s in scenarios}


def announce_limits(scenarios: list[Scenario]) -> list[str]:
    """Warnings about loads the open-file limit shapes; returned too, for the run's conditions."""
    limit = nofile_limit()
    notes = []
    for s in scenarios:
        for run in s.runs:
            c = run.load.get("concurrency")
            if not c:
                continue
            parts = tool_processes(s.tool, c, limit)
            if parts > 1:
                notes.append(
                    f"{s.name} {run.label}: {c} connections exceed what one {s.tool} process holds "
                    f"(open-file limit {limit}{', select() limit 1024' if s.tool == 'httperf' else ''}): "
                    f"split across {parts} {s.tool} processes, results merged"
                )
            if c >= limit - 64:
                notes.append(
                    f"{s.name} {run.label}: {c} connections reach the open-file limit ({limit}) of a single "
                    f"server process; a server with one process per core may fail to accept them all: "
                    f"connect/read errors here may be this limit, not the framework"
                )
    for note in notes:
        warn(note)
    return notes
