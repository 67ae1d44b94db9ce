"""ApacheBench (ab): HTTP/1.0, one request per connection unless -k; prints a text summary.

Its distribution: ab has two per-run outputs. -g writes every request, but its times are rounded to whole ms
(ap_round_ms), coarser than the whole distribution of a server answering in under a millisecond; -e writes the time
under which 1 … 100 % of the requests were served at 1 µs (its sorted per-request times read at 100 ranks). The
harness reads -e: the attempt's histogram is 100 equal slices, each slice's requests at its upper latency, so p50, p90
and p99 are ab's own to the µs, and a percentile inside a slice (p99.9 lies in the top one, with the max) is not known:
ab's records give no p99.9."""
from __future__ import annotations

import csv
import math
import re
from dataclasses import replace
from pathlib import Path

from harness.basics.distribution import Distribution
from harness.tools.adapter import LoadSpec, ToolFailed
from harness.tools.output import Errors, Measurement

FD_MARGIN = 64  # descriptors ab needs besides its sockets (stdio, CSV file, epoll)
# With -t, ab still sizes its per-request statistics array by -n (40 bytes a request): this caps a timed run.
TIMED_MAX_REQUESTS = 2_000_000
PROGRESS = re.compile(rb"Completed (\d+) requests")


def _int(pattern: str, text: str, default: int = 0) -> int:
    found = re.search(pattern, text, re.MULTILINE)
    return int(found.group(1)) if found else default


class ApacheBench:
    name = "ab"
    binary = "ab"
    install_hint = "apt-get install apache2-utils (or: make setup)"
    version_args = ("-V",)
    threading = "one"  # a single thread: one process per load-generator core (tools/load_plan.py)

    def completed(self, output_tail: bytes) -> int | None:
        counts = PROGRESS.findall(output_tail)  # "Completed 5000 requests", every tenth of -n
        return int(counts[-1]) if counts else None

    def max_connections_per_process(self, nofile_limit: int) -> int:
        return nofile_limit - FD_MARGIN

    def sized(self, spec: LoadSpec, seconds: float, rate: float | None) -> LoadSpec:
        """A request count from the rate, in whole rounds of `concurrency` (a CPU-bound load such as ten fibonacci
        requests at a time must not end on a partial round); without a rate, ab's own time limit (-t). The round count
        is the nearest to `seconds`, not the next above: rounding up made high-compute's attempts last 2.1 s for the
        1.5 s asked (node's round of ten fib(35) takes 1.1 s: two rounds, 2.2 s), 24 s of one `make bench`."""
        if not rate:
            return replace(spec, requests=None, duration_s=seconds)
        rounds = max(1, math.floor(rate * seconds / spec.concurrency + 0.5))
        return replace(spec, requests=rounds * spec.concurrency, duration_s=None, sized_from_rps=round(rate, 1))

    def command(self, spec: LoadSpec, scratch: Path) -> list[str]:
        if not spec.requests and not spec.duration_s:
            raise ValueError("ab needs a request count or a duration")
        argv = [self.binary]
        if spec.keepalive:
            argv.append("-k")
        if spec.continue_on_error:
            argv.append("-r")
        if spec.timeout_s:
            argv += ["-s", str(int(spec.timeout_s))]
        if spec.requests:  # ab refuses a concurrency above its request count
            argv += ["-n", str(spec.requests), "-c", str(min(spec.concurrency, spec.requests))]
        else:  # -t must come before -n: -t alone caps the run at 50,000 requests
            argv += ["-t", f"{math.ceil(spec.duration_s)}", "-n", str(TIMED_MAX_REQUESTS), "-c", str(spec.concurrency)]
        argv += ["-e", str(scratch / "percentiles.csv"), spec.url]
        return argv

    def parse(self, output: str, scratch: Path) -> Measurement:
        if "Complete requests:" not in output:
            last = [line for line in output.strip().splitlines() if line.strip()][-1:] or ["no output"]
            raise ToolFailed(f"ab printed no summary: {last[0].strip()}")
        failed = re.search(
            r"\(Connect: (\d+), Receive: (\d+), Length: (\d+), Exceptions: (\d+)\)", output
        )
        connect, receive, length, exceptions = (int(g) for g in failed.groups()) if failed else (0, 0, 0, 0)
        errors = Errors(
            connect=connect,
            read=receive,
            write=_int(r"^Write errors:\s+(\d+)", output),
            non_2xx=_int(r"^Non-2xx responses:\s+(\d+)", output),
            length=length,
            other=exceptions,
        )
        duration = float(re.search(r"^Time taken for tests:\s+([\d.]+)", output, re.MULTILINE).group(1))
        rps_line = re.search(r"^Requests per second:\s+([\d.]+)", output, re.MULTILINE)
        rps = float(rps_line.group(1)) if rps_line else 0.0  # not printed when no request completed (interrupted)
        table = {int(p): float(ms) for p, ms in re.findall(r"^\s+(\d+)%\s+(\d+)", output, re.MULTILINE)}
        latency = {"p50": table.get(50), "p90": table.get(90), "p99": table.get(99), "max": table.get(100)}
        done = _int(r"^Complete requests:\s+(\d+)", output)
        quantiles = _read_percentiles(scratch / "percentiles.csv", done)
        by_pct = dict(quantiles)
        if all(p in by_pct for p in (50.0, 90.0, 99.0, 100.0)):  # -e's microseconds, not the table's whole ms
            latency = {"p50": by_pct[50.0], "p90": by_pct[90.0], "p99": by_pct[99.0], "max": by_pct[100.0]}
        distribution = Distribution.from_levels(((p, round(ms * 1000)) for p, ms in quantiles), done)
        if distribution:  # read off it, as after a merge of processes (the same above 32 ms, where it keeps 4 digits)
            sliced = distribution.latency_ms()
            latency.update({k: sliced[k] for k in ("p50", "p90", "p99", "max")})
        mean = re.search(r"^Time per request:\s+([\d.]+) \[ms\] \(mean\)$", output, re.MULTILINE)
        if mean:
            latency["mean"] = float(mean.group(1))
        return Measurement(
            requests=_int(r"^Complete requests:\s+(\d+)", output),
            errors=errors,
            duration_s=duration,
            rps=rps,
            latency_ms=latency,
            quantiles=quantiles,
            distribution=distribution,
        )


def _read_percentiles(path: Path, done: int) -> list[tuple[float, float]]:
    """ab -e writes the time (ms) under which 0..100 % of requests were served; 1..100 stand for 1 % slices each.
    ab 2.3 reads row p from its sorted times at index int(0.5 + done * p / 100): for the top rows of a small run
    (40 requests: row 99 reads index 40) that is one past its array, and it prints whatever lies there (0.257 ms
    beside a 386 ms maximum). Such a row is the slowest request's time, the 100 % row's."""
    if not path.exists():
        return []
    with path.open() as f:
        rows = [(float(p), float(ms)) for p, ms in list(csv.reader(f))[1:] if p and ms and float(p) > 0]
    slowest = dict(rows).get(100.0)
    return [(p, slowest if 0 < p < 100 and done and int(0.5 + done * p / 100) >= done and slowest is not None else ms)
            for p, ms in rows]


TOOL = ApacheBench()  # what the registry (tools/__init__.py) finds
