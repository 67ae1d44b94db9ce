"""oha: keep-alive HTTP/1.1 load at a constant request rate (-q), each request's latency measured from when the
schedule meant to send it (--latency-correction), as wrk2 does. A closed-loop tool (ab, wrk, httperf) sends the next
request only once the previous answer is in, so a server that stalls is asked less while it stalls and the stall
costs one slow sample instead of every request users would have sent meanwhile (coordinated omission).

oha is not packaged by Debian: the harness builds the pinned version with cargo (loadgen/build-oha.sh) into the
repository's .tools/ the first time a scenario needs it (`provision`), and the Docker runtime runs that same binary in
the loadgen container, which mounts the repository.

Its distribution: oha's per-request output (--output-format csv) replaces the JSON summary and lists only the requests
that succeeded, so failures would go uncounted; the harness reads the JSON, whose quantile function has 9 levels (p10,
p25, p50, p75, p90, p95, p99, p99.9, p99.99, to the ns) and the max. The attempt's histogram is made of those: exact
at the levels (p99.9 among them), an upper bound between them.
"""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path
from typing import Any, TypedDict

from harness.basics.distribution import Distribution
from harness.tools.adapter import LoadSpec, ToolFailed
from harness.tools.output import Errors, Measurement

VERSION = "1.16.0"
ROOT = Path(__file__).resolve().parents[3] / ".tools" / "oha"
FD_MARGIN = 64


class Oha:
    name = "oha"
    binary = str(ROOT / "bin" / "oha")
    install_hint = (
        f"make setup-oha (bash loadgen/build-oha.sh {VERSION}: cargo install oha --version {VERSION} --locked)"
    )
    version_args = ("--version",)
    threading = "option"  # as many threads as it is given: one per load-generator core (tools/load_plan.py)
    provision = ("bash", "loadgen/build-oha.sh", VERSION)  # the one place the version is pinned
    provision_note = (
        f"oha {VERSION} is built with cargo once per machine (about 6-12 min on 2 cores, kept in "
        "~/.cache/polyglot-bench) and copied into .tools/oha"
    )

    def completed(self, output_tail: bytes) -> int | None:
        return None  # silent until it ends (--no-tui)

    def max_connections_per_process(self, nofile_limit: int) -> int:
        return nofile_limit - FD_MARGIN

    def command(self, spec: LoadSpec, scratch: Path) -> list[str]:
        if not spec.duration_s:
            raise ValueError("oha needs a duration (duration_s)")
        if not spec.concurrency:
            raise ValueError("oha needs a concurrency (its connections)")
        # -w: requests still under way at the end are waited for, not counted as "aborted due to deadline" errors;
        # --worker-threads: oha's default is the machine's cores, not the CPUs it is pinned to
        argv = [
            self.binary,
            "-z",
            f"{math.ceil(spec.duration_s)}s",
            "-c",
            str(spec.concurrency),
            "-w",
            "--no-tui",
            "--output-format",
            "json",
            "--worker-threads",
            str(spec.threads or 1),
        ]
        if spec.rate:
            argv += ["-q", f"{spec.rate:g}", "--latency-correction"]
        if spec.timeout_s:
            argv += ["-t", f"{spec.timeout_s:g}s"]
        return [*argv, spec.url]

    def sized(self, spec: LoadSpec, seconds: float, rate: float | None) -> LoadSpec:
        return replace(spec, duration_s=seconds)

    def parse(self, output: str, scratch: Path) -> Measurement:
        start = output.find("{")
        try:
            data = json.loads(output[start:]) if start >= 0 else None
        except json.JSONDecodeError:
            data = None
        if not data or "summary" not in data:
            raise ToolFailed("oha printed no JSON summary: " + (output.strip().splitlines() or ["no output"])[-1])
        return from_json(data)


class OhaDetails(TypedDict):
    """What oha says beside the figures (a Measurement's details["oha"]): its percentiles (ms, by their names: "p99.9"),
    its errors by oha's text and its answers by status."""

    percentiles_ms: dict[str, float]
    errors: dict[str, int]
    status: dict[str, int]


def _errors(data: dict[str, Any]) -> Errors:
    """oha's errorDistribution (texts from hyper and the OS) by cause, and the answers outside 2xx."""
    errors = Errors()
    for text, count in (data.get("errorDistribution") or {}).items():
        lowered = text.lower()
        if "timeout" in lowered or "timed out" in lowered:
            errors.timeout += count
        elif "connect" in lowered or "refused" in lowered or "reset" in lowered:
            errors.connect += count
        else:
            errors.other += count
    errors.non_2xx = sum(
        n for status, n in (data.get("statusCodeDistribution") or {}).items() if not status.startswith("2")
    )
    return errors


def from_json(data: dict[str, Any]) -> Measurement:
    summary = data["summary"]
    duration = float(summary.get("total") or 0.0)
    answered = sum((data.get("statusCodeDistribution") or {}).values())
    errors = _errors(data)
    failed = sum((data.get("errorDistribution") or {}).values())
    requests = answered + failed
    pct_ms = {
        key: round(value * 1000, 4)
        for key, value in (data.get("latencyPercentiles") or {}).items()
        if value is not None
    }
    slowest = summary.get("slowest")
    average = summary.get("average")
    levels = sorted(
        (float(key[1:]), round(value * 1e6))
        for key, value in (data.get("latencyPercentiles") or {}).items()
        if value is not None
    )
    distribution = (
        Distribution.from_levels([*levels, (100.0, round(slowest * 1e6))], answered)
        if levels and slowest is not None and answered
        else None
    )
    own: OhaDetails = {
        "percentiles_ms": pct_ms,
        "errors": data.get("errorDistribution") or {},
        "status": data.get("statusCodeDistribution") or {},
    }
    latency = {
        "p50": pct_ms.get("p50"),
        "p90": pct_ms.get("p90"),
        "p99": pct_ms.get("p99"),
        "p99.9": pct_ms.get("p99.9"),
        "max": round(slowest * 1000, 4) if slowest is not None else None,
        "mean": round(average * 1000, 4) if average is not None else None,
    }
    return Measurement(
        requests=requests,
        errors=errors,
        duration_s=duration,
        rps=answered / duration if duration else 0.0,
        latency_ms=latency,  # oha's own figures; no `quantiles`: its points are not equal slices of its requests
        distribution=distribution,
        details={"oha": own},
    )


TOOL = Oha()  # what the registry (tools/__init__.py) finds
