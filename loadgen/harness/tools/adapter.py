"""What every load tool adapter shares: the load it is given (LoadSpec), the shape it must have (LoadTool) and its
failure. Adapters import these from here, not from the package, so the registry in `__init__` can import them."""

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, TypeVar

from harness.tools.output import Measurement


class ToolFailed(Exception):
    """The tool ran but produced no usable summary (aborted, refused, bad arguments)."""


class ParseError(ValueError):
    """The tool printed a summary its parser did not foresee (a line it always reads is missing): the runner records
    the attempt as lost, with its raw output kept, as it does for any parser's surprise."""


def search(pattern: str | re.Pattern[str], output: str, tool: str) -> re.Match[str]:
    """The line of `output` that `pattern` (multi-line) reads, which a summary of `tool` always holds: ParseError
    where it does not."""
    found = re.search(pattern, output, re.MULTILINE)
    if found is None:
        shown = pattern if isinstance(pattern, str) else pattern.pattern
        raise ParseError(f"{tool}'s summary lacks a line matching {shown}")
    return found


@dataclass(frozen=True)
class LoadSpec:
    """One load: what to send, how hard. Fields a tool does not use are ignored by it."""

    url: str
    concurrency: int | None = None  # connections (ab, wrk, oha), connections in all (httperf), users at once (gatling)
    requests: int | None = None  # ab: total requests
    duration_s: float | None = None  # wrk: test length
    threads: int | None = None  # wrk, oha, h2load; None: one per load-generator core (tools/load_plan.py)
    keepalive: bool = False  # ab -k (wrk and httperf always keep connections alive)
    connection_close: bool = False  # wrk: send `Connection: close`, so each request has a connection of its own
    timeout_s: float | None = None  # per request/socket timeout
    continue_on_error: bool = False  # ab -r
    rate: float | None = (
        None  # httperf: new connections per second; oha: requests per second; gatling: users per second
    )
    users: int | None = None  # gatling: users injected in all (each sends one request)
    injection: str | None = None  # gatling: how users arrive: "ramp" (over duration_s), "at-once", "constant" (rate)
    calls_per_connection: int | None = None  # httperf --num-calls
    sized_from_rps: float | None = None  # the rate a request count was sized from (recorded; no tool reads it)
    streams: int | None = None  # h2load -m: requests in flight on each connection
    protocol: str | None = None  # h2load: "h2c" (cleartext HTTP/2, the default) or "h1" (--h1)
    processes: int | None = None  # ab, httperf: the load split into this many processes (LOADGEN_PROCESSES for one run)
    mix: tuple[tuple[str, float], ...] | None = None  # oha-mix: (path, percent) on `url`'s server, each request drawn

    def connections(self, tool: str) -> int:
        """`concurrency`, which every tool but Gatling is always given: ValueError where a load lacks it."""
        return needed(self.concurrency, f"{tool} needs a concurrency (its connections)")


T = TypeVar("T")


def needed(value: T | None, message: str) -> T:
    """`value`, which a tool cannot run without: ValueError(`message`) where the load lacks it (None or 0)."""
    if not value:
        raise ValueError(message)
    return value


class LoadTool(Protocol):
    name: str  # what a scenario's `tool` names
    threading: str  # "one", "option" or "own": how it uses cores (tools/load_plan.py)
    binary: str
    install_hint: str
    version_args: tuple[str, ...]  # `binary *version_args` prints the version line (run where the runtime runs tools)
    # A tool the project builds itself rather than installs (oha, Gatling) also has `provision`: the argv, run from the
    # repository's root, that builds it into the repository (ignored by git) when `binary` is missing, and
    # `provision_note`, what that costs, announced before it runs (preflight.check_tools).
    # A tool whose duration option cannot say a spec's duration exactly (wrk: whole seconds) also has
    # `stop_after_s(spec)`: the seconds after its start at which the runner ends it with SIGINT (None: it ends itself).

    def completed(self, output_tail: bytes) -> int | None:
        """Requests done so far, read from the end of the tool's running output (progress of a counted load);
        None when the tool does not say."""

    def max_connections_per_process(self, nofile_limit: int) -> int:
        """Most connections one process of the tool can hold."""

    def command(self, spec: LoadSpec, scratch: Path) -> list[str]:
        """argv for one tool process; `scratch` is a folder for side files (e.g. ab's percentile CSV)."""

    def parse(self, output: str, scratch: Path) -> Measurement:
        """Measurement from the tool's stdout+stderr (and side files); ToolFailed when there is no summary."""

    def sized(self, spec: LoadSpec, seconds: float, rate: float | None) -> LoadSpec:
        """`spec` made to last about `seconds` at `rate` req/s (the warm-up's; None before any was measured): a
        duration for a tool that takes one, a request count for one that counts."""


def tool_version(binary: str, args: list[str]) -> str:
    try:
        proc = subprocess.run([binary, *args], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"unknown ({exc})"
    text = (proc.stdout + proc.stderr).strip().splitlines()
    return text[0].strip() if text else "unknown"


def find_binary(tool: LoadTool) -> str | None:
    return shutil.which(tool.binary)
