"""wrk: keep-alive HTTP/1.1 load for a fixed time; percentiles come from wrk_report.lua as JSON.

Its distribution: wrk 4.1 keeps one counter per µs of latency (back-filled for coordinated omission after the run),
but its Lua API serves only `latency:percentile(p)`; the report script asks it at 1,098 levels (every 0.1 % to 99 %,
every 0.01 % to 99.99 %, every 0.001 % to 99.999 %, and the max), and the attempt's histogram gives each slice between
two levels its share of the requests at the upper level's latency. So its percentiles are wrk's own, to the µs, at
those levels (p50, p90, p99, p99.9 among them), and an upper bound between them."""

from __future__ import annotations

import json
import math
import re
from dataclasses import replace
from pathlib import Path

from harness.basics.distribution import Distribution
from harness.tools.adapter import LoadSpec, ToolFailed
from harness.tools.output import Errors, Measurement

REPORT_SCRIPT = Path(__file__).with_name("wrk_report.lua")
FD_MARGIN = 64
MAX_TIMEOUT_S = 600
UNIT_MS = {"us": 0.001, "ms": 1.0, "s": 1000.0, "m": 60000.0}


class Wrk:
    name = "wrk"
    binary = "wrk"
    install_hint = "apt-get install wrk (or: make setup)"
    version_args = ("-v",)
    threading = "option"  # as many threads as it is given: one per load-generator core (tools/load_plan.py)

    def completed(self, output_tail: bytes) -> int | None:
        return None  # silent until it ends

    def max_connections_per_process(self, nofile_limit: int) -> int:
        return nofile_limit - FD_MARGIN

    def command(self, spec: LoadSpec, scratch: Path) -> list[str]:
        if not spec.duration_s:
            raise ValueError("wrk needs a duration")
        connections = spec.connections(self.name)
        threads = min(spec.threads or 1, connections)  # wrk refuses more threads than connections
        # wrk takes whole seconds only ("-d 1.5s" prints its usage and measures nothing): a fractional duration runs
        # with -d rounded up and is ended at its duration (stop_after_s)
        seconds = math.ceil(spec.duration_s)
        argv = [self.binary, "-t", str(threads), "-c", str(connections), "-d", f"{seconds}s", "--latency"]
        if spec.timeout_s:
            if spec.timeout_s > MAX_TIMEOUT_S:  # wrk allocates its latency histogram by timeout (10000 s: 80 GB)
                raise ValueError(
                    f"wrk timeout {spec.timeout_s:g} s is above {MAX_TIMEOUT_S} s: wrk could not allocate its histogram"
                )
            argv += ["--timeout", f"{spec.timeout_s:g}s"]
        if spec.connection_close:
            # the server answers and closes; wrk reads its `Connection: close` and opens the next connection at once
            argv += ["-H", "Connection: close"]
        return [*argv, "-s", str(REPORT_SCRIPT), spec.url]

    def sized(self, spec: LoadSpec, seconds: float, rate: float | None) -> LoadSpec:
        return replace(spec, duration_s=seconds)

    def stop_after_s(self, spec: LoadSpec) -> float | None:
        """When the runner ends a run whose duration is not whole seconds: wrk takes SIGINT as the end of its run (it
        stops its threads and reports over the time it ran, duration_us), so 1.5 s is 1.5 s, not -d's 2."""
        if spec.duration_s and spec.duration_s != math.ceil(spec.duration_s):
            return spec.duration_s
        return None

    def parse(self, output: str, scratch: Path) -> Measurement:
        line = next((text for text in output.splitlines() if text.startswith("WRK_JSON ")), None)
        if line is None:
            return parse_text(output)
        data = json.loads(line[len("WRK_JSON ") :])
        e = data["errors"]
        duration = data["duration_us"] / 1e6
        quantiles = [(float(p), float(ms)) for p, ms in data["quantiles_ms"]]
        by_pct = dict(quantiles)
        # older report scripts wrote no spectrum_us: no distribution
        distribution = Distribution.from_levels(
            ((float(p), int(us)) for p, us in data.get("spectrum_us") or []), data["requests"]
        )
        latency: dict[str, float | None] = {
            "p50": by_pct[50.0],
            "p90": by_pct[90.0],
            "p99": by_pct[99.0],
            "max": data["latency_us"]["max"] / 1000,
            "mean": round(data["latency_us"]["mean"] / 1000, 3),
        }
        if distribution:  # the percentiles read off it, as they are after a merge; the mean stays wrk's own
            latency.update({k: v for k, v in distribution.latency_ms().items() if k != "mean"})
        return Measurement(
            requests=data["requests"],
            errors=Errors(
                connect=e["connect"], read=e["read"], write=e["write"], timeout=e["timeout"], non_2xx=e["status"]
            ),
            duration_s=duration,
            rps=data["requests"] / duration if duration else 0.0,
            latency_ms=latency,
            quantiles=quantiles,
            distribution=distribution,
        )


def _ms(value: str, unit: str) -> float:
    return float(value) * UNIT_MS[unit]


def parse_text(output: str) -> Measurement:
    """wrk's own text summary (outputs saved without the report script, such as the seeds')."""
    total = re.search(r"^\s*(\d+) requests in ([\d.]+)(us|ms|s|m),", output, re.MULTILINE)
    if not total:
        raise ToolFailed("wrk printed no summary: " + (output.strip().splitlines() or ["no output"])[-1])
    requests = int(total.group(1))
    duration = _ms(total.group(2), total.group(3)) / 1000
    socket = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", output)
    connect, read, write, timeout = (int(g) for g in socket.groups()) if socket else (0, 0, 0, 0)
    non_2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", output)
    latency: dict[str, float | None] = {"p50": None, "p90": None, "p99": None, "max": None}
    for pct, value, unit in re.findall(r"^\s+(50|90|99)%\s+([\d.]+)(us|ms|s|m)\s*$", output, re.MULTILINE):
        latency[f"p{pct}"] = _ms(value, unit)
    stats = re.search(r"^\s+Latency\s+([\d.]+)(us|ms|s|m)\s+[\d.]+\w+\s+([\d.]+)(us|ms|s|m)", output, re.MULTILINE)
    if stats:
        latency["mean"] = _ms(stats.group(1), stats.group(2))
        latency["max"] = _ms(stats.group(3), stats.group(4))
    rps = re.search(r"^Requests/sec:\s+([\d.]+)", output, re.MULTILINE)
    return Measurement(
        requests=requests,
        errors=Errors(
            connect=connect, read=read, write=write, timeout=timeout, non_2xx=int(non_2xx.group(1)) if non_2xx else 0
        ),
        duration_s=duration,
        rps=float(rps.group(1)) if rps else requests / duration,
        latency_ms=latency,
    )


TOOL = Wrk()  # what the registry (tools/__init__.py) finds
