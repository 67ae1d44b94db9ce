"""Whether the load tools a run needs are here: those the project builds itself (oha, Gatling) built first, the
others installed; and how many processes of a tool a load of so many connections takes (the open-file limits)."""

from __future__ import annotations

import math
import subprocess
import time

from harness.basics.machine import nofile_limit
from harness.basics.messages import say
from harness.basics.paths import REPO
from harness.tools import TOOLS, find_binary


class PreflightError(Exception):
    pass


def provision(tools: set[str]) -> None:
    """Builds, once, each tool the project builds itself (its adapter's `provision`) that is not built yet: announced
    with its cost, run from the repository's root, its output shown. A failed build is a PreflightError."""
    for name in sorted(tools):
        tool = TOOLS[name]
        argv = getattr(tool, "provision", None)
        if not argv or find_binary(tool):
            continue
        say(f"{name} is needed and not built yet: {getattr(tool, 'provision_note', '')}\n  running: {' '.join(argv)}")
        started = time.monotonic()
        try:
            proc = subprocess.run(list(argv), cwd=REPO)
        except OSError as exc:
            raise PreflightError(f"could not build {name} ({exc}); {tool.install_hint}") from None
        if proc.returncode != 0 or not find_binary(tool):
            raise PreflightError(
                f"building {name} failed (exit {proc.returncode}); see its output above. To retry: {' '.join(argv)}"
            )
        say(f"{name} built in {time.monotonic() - started:.0f} s: {tool.binary}")


def check_tools(tools: set[str]) -> None:
    """The tools installed on this host (the local runtime runs them here); those the project builds, built."""
    provision(tools)
    missing = {t for t in tools if not find_binary(TOOLS[t])}
    if missing:
        hints = "; ".join(f"{t}: {TOOLS[t].install_hint}" for t in sorted(missing))
        raise PreflightError(f"load tool(s) not installed: {', '.join(sorted(missing))}. Install: {hints}")


def tool_processes(tool_name: str, concurrency: int | None, limit: int | None = None) -> int:
    """How many processes of the tool share a load of `concurrency` connections."""
    if not concurrency:  # a load given in users over time (gatling)
        return 1
    per_process = TOOLS[tool_name].max_connections_per_process(limit or nofile_limit())
    return max(1, math.ceil(concurrency / per_process))
