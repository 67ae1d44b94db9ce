"""Checks before any run: settings that contradict HOSTS, the tools a run needs, loads the open-file limits shape.
Problems are reported before anything starts; loads are split across tool processes or announced, never silently
cut short (the tools' own checks: tools/availability.py)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import replace

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


# descriptors a server process holds besides its clients' connections: a JVM's jars, JDK modules, epoll and pipes
# (100-300), its log, its upstream connections; a run asks no server for more connections than the limit less these
SERVER_FD_RESERVE = 1000


def most_connections(limit: int | None = None) -> int:
    """The most connections one server process can hold under the open-file limit (the hard one: the harness raises
    the soft limit to it for every process it starts), its own descriptors kept."""
    return (limit or nofile_limit()) - SERVER_FD_RESERVE


def within_open_files(scenario: Scenario, limit: int | None = None) -> tuple[Scenario, list[str]]:
    """`scenario` with each run's connections at most `most_connections` (seed 001's long run asks 20,000, as many as
    the hard limit here: the server could not accept the last of them), and a note per run so fitted."""
    most = most_connections(limit)
    runs, notes = [], []
    for run in scenario.runs:
        asked = run.load.get("concurrency")
        if asked and asked > most:
            label = f"c{most}" if run.label == f"c{asked}" else run.label  # a label naming its connections
            run = replace(run, label=label, load={**run.load, "concurrency": most})
            notes.append(
                f"{scenario.name} {run.label}: {most:,} connections, not the {asked:,} asked: a server process may "
                f"hold {most + SERVER_FD_RESERVE:,} open files (the hard limit, ulimit -Hn), {SERVER_FD_RESERVE:,} of "
                "them kept for its own; raise the limit for more"
            )
        runs.append(run)
    return (replace(scenario, runs=tuple(runs)) if notes else scenario), notes


def fitted(scenarios: list[Scenario], limit: int | None = None) -> list[Scenario]:
    """Every scenario within the open-file limits (within_open_files), as a run measures them."""
    limit = limit or nofile_limit()
    return [within_open_files(s, limit)[0] for s in scenarios]


def announce_limits(scenarios: list[Scenario], limit: int | None = None) -> list[str]:
    """Warnings about loads the open-file limit shapes (fitted to it, split across tool processes); returned too, for
    the run's conditions."""
    limit = limit or nofile_limit()
    notes = []
    for scenario in scenarios:
        s, capped = within_open_files(scenario, limit)
        notes += capped
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
    for note in notes:
        warn(note)
    return notes
