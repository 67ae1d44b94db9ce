"""Checks before any run: tools installed, load within the open-file limits. Problems are reported before
anything starts; loads are split across tool processes or announced, never silently cut short."""
from __future__ import annotations

import math
import os
import subprocess
import time
from harness.console import say, warn
from harness.host import nofile_limit
from harness.manifest import REPO
from harness.scenarios import Scenario
from harness.tools import TOOLS, find_binary


class PreflightError(Exception):
    pass


def check_hosts_settings(roles: dict, runtime: str, command: str, environ=os.environ) -> None:
    """With HOSTS set, the settings that would mean something else: RUNTIME=local, CPUS_* (each host's CPUs are
    HOSTS' cpus=), `make docker-overhead` (docker against local on this machine)."""
    where = ", ".join(f"{h.role} on {h.endpoint}" for h in roles.values())
    if (runtime or "auto").strip().lower() == "local":
        raise PreflightError(f"HOSTS ({where}) runs every role in a container on its host: RUNTIME=local cannot; "
                             "unset one of them")
    cpus = [name for name in ("CPUS_SERVER", "CPUS_LOADGEN", "CPUS_UPSTREAM") if environ.get(name)]
    if cpus:
        raise PreflightError(f"{', '.join(cpus)} name this machine's CPUs; with HOSTS give each host's as "
                             "role=endpoint,cpus=0-3 (cpus=0.2 for CPUs 0 and 2)")
    if command == "overhead":
        raise PreflightError("make docker-overhead compares the docker and local runtimes on this machine: unset HOSTS")


def tools_needed(scenarios: list[Scenario]) -> set[str]:
    """The scenarios' tools, and the tools of their warm-up loads."""
    return {s.tool for s in scenarios} | {s.warmup_tool for s in scenarios}



def provision(tools: set[str]) -> None:
    """Builds, once, each tool the project builds itself (its adapter's `provision`) that is not built yet: announced
    with its cost, run from the repository's root, its output shown. A failed build is a PreflightError."""
    for name in sorted(tools):
        tool = TOOLS[name]
        argv = getattr(tool, "provision", None)
        if not argv or find_binary(tool):
            continue
        say(f"{name} is needed and not built yet: {tool.provision_note}\n  running: {' '.join(argv)}")
        started = time.monotonic()
        try:
            proc = subprocess.run(list(argv), cwd=REPO)
        except OSError as exc:
            raise PreflightError(f"could not build {name} ({exc}); {tool.install_hint}") from None
        if proc.returncode != 0 or not find_binary(tool):
            raise PreflightError(f"building {name} failed (exit {proc.returncode}); see its output above. "
                                 f"To retry: {' '.join(argv)}")
        say(f"{name} built in {time.monotonic() - started:.0f} s: {tool.binary}")


def check_tools(tools: set[str]) -> None:
    """The tools installed on this host (the local runtime runs them here); those the project builds, built."""
    provision(tools)
    missing = {t for t in tools if not find_binary(TOOLS[t])}
    if missing:
        hints = "; ".join(f"{t}: {TOOLS[t].install_hint}" for t in sorted(missing))
        raise PreflightError(f"load tool(s) not installed: {', '.join(sorted(missing))}. Install: {hints}")


def tool_processes(tool_name: str, concurrency: int, limit: int | None = None) -> int:
    """How many processes of the tool share a load of `concurrency` connections."""
    if not concurrency:  # a load given in users over time (gatling)
        return 1
    per_process = TOOLS[tool_name].max_connections_per_process(limit or nofile_limit())
    return max(1, math.ceil(concurrency / per_process))


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
                notes.append(f"{s.name} {run.label}: {c} connections exceed what one {s.tool} process holds "
                             f"(open-file limit {limit}{', select() limit 1024' if s.tool == 'httperf' else ''}): "
                             f"split across {parts} {s.tool} processes, results merged")
            if c >= limit - 64:
                notes.append(f"{s.name} {run.label}: {c} connections reach the open-file limit ({limit}) of a single "
                             f"server process; a server with one process per core may fail to accept them all: "
                             f"connect/read errors here may be this limit, not the framework")
    for note in notes:
        warn(note)
    return notes
