"""h2load (nghttp2): HTTP/2 load over cleartext connections (h2c, prior knowledge), `spec.streams` requests in flight
on each of `concurrency` connections; with `spec.protocol == "h1"`, HTTP/1.1 (--h1), `streams` then being the
pipelining depth. A duration (-D) or a request count (-n); with a rate, each client is held to its share (--rps, not
latency-corrected: a stalled server is asked less while it stalls, as with wrk).

Percentiles: h2load prints none, but --log-file writes one row per finished request (start time in µs since the epoch,
status, µs until the end of the response; status -1 for a failed stream) into the scratch folder: the attempt's whole
distribution (harness.basics.distribution, 1 µs resolution up to 32 ms) is made of the requests that got an answer,
and p50/p90/p99/p99.9, the mean and the max are read off it.

Facts of Debian bookworm's h2load 1.52 this adapter is built on:
- -D takes an integer and a unit (h, m, s, ms): "-D 1.5" is refused ("-D: value error 1.5"), "-D 1500ms" works.
- -n must be at least -c, and -t at most -c ("the number of requests must be greater than or equal to the clients").
- the inactivity timeout (-N) works in counted runs (-n), where a silent connection's requests end as "timeout", but in a
  timed run (-D) h2load 1.52 aborts as soon as it fires (libev: "epoll_modify: Assertion ... failed", SIGABRT, no
  summary), so a timed run gets no -N: it ends at -D anyway, with requests still unanswered ("started" minus "done",
  in details as `unanswered`). A healthy run ends so too: every connection has its -m streams in flight when the
  time is up (4 clients × -m 10 against nginx: 40). So they are counted as timeouts only where the server had stopped
  answering: no answer at all, or none in the run's last stretch (10 × the answered requests' p99, at least 100 ms),
  read from the log's times; a server that stalls must not read as clean, one busy to the end must not read as failing.
- a timed run against a port nothing listens on prints a summary of zeros and no "Application protocol:" line, which
  is how refused connections are told from a silent server (then counted as connect errors, one per client).
- "failed" counts answers outside 2xx/3xx and errored streams; "errored" includes "timeout"; req/s counts every answer
  (4xx too) over the time, as wrk's Requests/sec does.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TypedDict

from harness.basics.distribution import Distribution
from harness.tools.adapter import LoadSpec, ToolFailed, needed
from harness.tools.output import Errors, Measurement

FD_MARGIN = 64
LOG = "h2load-requests.tsv"  # --log-file, in the scratch folder
UNIT_MS = {"us": 0.001, "ms": 1.0, "s": 1000.0}
PROTOCOLS = {None: [], "h2": [], "h2c": [], "h1": ["--h1"]}
STALL_P99S = 10  # silent for this many p99s at the end of a timed run (and STALL_MIN_S at least): it had stalled
STALL_MIN_S = 0.1

_NUM = r"([\d.]+)(us|ms|s)"
FINISHED = re.compile(r"^finished in " + _NUM + r", ([\d.]+) req/s", re.MULTILINE)
REQUESTS = re.compile(
    r"^requests: (\d+) total, (\d+) started, (\d+) done, (\d+) succeeded, (\d+) failed, "
    r"(\d+) errored, (\d+) timeout",
    re.MULTILINE,
)
STATUS = re.compile(r"^status codes: (\d+) 2xx, (\d+) 3xx, (\d+) 4xx, (\d+) 5xx", re.MULTILINE)
TIME_FOR = r"^time for {}:\s+" + r"\s+".join([_NUM] * 4) + r"\s+([\d.]+)%"
REQUEST_TIME = re.compile(TIME_FOR.format("request"), re.MULTILINE)
CONNECT_TIME = re.compile(TIME_FOR.format("connect"), re.MULTILINE)
CLIENTS = re.compile(r"^spawning thread #\d+: (\d+) total client\(s\)", re.MULTILINE)
PROTOCOL = re.compile(r"^Application protocol: (\S+)", re.MULTILINE)


def _duration_arg(seconds: float) -> str:
    """h2load's <DURATION>: whole seconds when they are, else milliseconds rounded up (it takes no fractions)."""
    ms = math.ceil(seconds * 1000)
    return f"{ms // 1000}s" if ms % 1000 == 0 else f"{ms}ms"


def _decimal(value: float) -> str:
    """A positive number as a plain decimal, 6 places at most (h2load takes fractions of a request per second)."""
    return f"{value:.6f}".rstrip("0").rstrip(".")


class H2loadDetails(TypedDict):
    """h2load's own counts (a Measurement's details["h2load"]): its "requests:" line, its answers by status class, its
    clients, the protocol it spoke, the requests still unanswered at a timed run's end, and its latency's SD."""

    total: int
    started: int
    done: int
    succeeded: int
    failed: int
    errored: int
    timeout: int
    status: dict[str, int]
    clients: int
    protocol: str | None
    unanswered: int
    latency_sd_ms: float | None


class H2load:
    name = "h2load"
    binary = "h2load"
    install_hint = "apt-get install nghttp2-client"
    version_args = ("--version",)
    threading = "option"  # as many threads as it is given: one per load-generator core (tools/load_plan.py)

    def completed(self, output_tail: bytes) -> int | None:
        return (
            None  # a counted run prints "progress: 10% done", a share of -n that this method cannot turn into a count
        )

    def max_connections_per_process(self, nofile_limit: int) -> int:
        return nofile_limit - FD_MARGIN

    def command(self, spec: LoadSpec, scratch: Path) -> list[str]:
        clients = needed(spec.concurrency, "h2load needs a concurrency (its clients: one connection each)")
        if not spec.duration_s and not spec.requests:
            raise ValueError("h2load needs a duration or a request count")
        protocol = spec.protocol
        if protocol not in PROTOCOLS:
            raise ValueError(f"h2load speaks h2c or h1, not {protocol!r}")
        streams = spec.streams or 1
        if spec.duration_s:
            length = ["-D", _duration_arg(spec.duration_s)]
        else:
            requests = needed(spec.requests, "h2load needs a duration or a request count")
            clients = min(clients, requests)  # h2load refuses fewer requests than clients
            length = ["-n", str(requests)]
        threads = max(1, min(spec.threads or 1, clients))  # h2load refuses more threads than clients
        argv = [self.binary, "-c", str(clients), "-t", str(threads), "-m", str(streams), *length, *PROTOCOLS[protocol]]
        if spec.rate:
            argv += ["--rps", _decimal(spec.rate / clients)]  # --rps is per client
        if spec.timeout_s and not spec.duration_s:  # -N aborts a timed run of h2load 1.52 (module docstring)
            argv += ["-N", _duration_arg(spec.timeout_s)]
        return [*argv, "--log-file", str(scratch / LOG), spec.url]

    def sized(self, spec: LoadSpec, seconds: float, rate: float | None) -> LoadSpec:
        return replace(spec, duration_s=seconds)

    def parse(self, output: str, scratch: Path) -> Measurement:
        finished, counts = FINISHED.search(output), REQUESTS.search(output)
        if not finished or not counts:
            last = [line for line in output.strip().splitlines() if line.strip()][-1:] or ["no output"]
            raise ToolFailed(f"h2load printed no summary: {last[0].strip()}")
        total, started, done, succeeded, failed, errored, timeout = (int(g) for g in counts.groups())
        status = STATUS.search(output)
        s2, s3, s4, s5 = (int(g) for g in status.groups()) if status else (0, 0, 0, 0)
        clients = sum(int(n) for n in CLIENTS.findall(output))
        connected = _connected(output)
        others = errored - timeout  # errored streams besides timeouts: never connected, or the connection failed
        unanswered = max(started - done, 0) if "Timing-based test" in output else 0
        duration = round(_ms(finished.group(1), finished.group(2)) / 1000, 9)
        log = _read_log(scratch / LOG)
        distribution = Distribution.from_counts(log.counts) if log else None
        stalled = unanswered > 0 and (log is None or log.silent_before_end(duration, distribution))
        errors = Errors(timeout=timeout + (unanswered if stalled else 0), non_2xx=s3 + s4 + s5)
        if not connected:
            errors.connect = others or clients  # a timed run counts no request of a client that never connected
        else:
            errors.read = others
        answered = s2 + s3 + s4 + s5
        times = REQUEST_TIME.search(output) if answered else None
        protocol = PROTOCOL.search(output)
        own: H2loadDetails = {
            "total": total,
            "started": started,
            "done": done,
            "succeeded": succeeded,
            "failed": failed,
            "errored": errored,
            "timeout": timeout,
            "status": {"2xx": s2, "3xx": s3, "4xx": s4, "5xx": s5},
            "clients": clients,
            "protocol": protocol.group(1) if protocol else None,
            "unanswered": unanswered,
            "latency_sd_ms": _ms(times.group(7), times.group(8)) if times else None,
        }
        return Measurement(
            requests=succeeded + failed,  # every answer (any status) and every errored request
            errors=errors,
            duration_s=duration,
            rps=float(finished.group(3)),
            latency_ms=_latency(distribution, times),
            distribution=distribution,
            details={"h2load": own},
        )


def _latency(distribution: Distribution | None, times: re.Match[str] | None) -> dict[str, float | None]:
    """p50 … max and the mean from the per-request log; without one, the max and mean of h2load's summary line (to
    0.01 of its unit) where it answered any request (`times`), else none."""
    latency: dict[str, float | None] = dict.fromkeys(("p50", "p90", "p99", "p99.9", "max", "mean"))
    if distribution:
        latency.update(distribution.latency_ms())
    elif times:
        latency["max"] = _ms(times.group(3), times.group(4))
        latency["mean"] = _ms(times.group(5), times.group(6))
    return latency


def _ms(value: str, unit: str) -> float:
    return round(float(value) * UNIT_MS[unit], 6)


def _connected(output: str) -> bool:
    """Whether any client connected: h2load names the protocol it speaks once a connection is up; with no connection
    at all its connect line is all zeros (it is too when connections were dropped by -N, hence the protocol first)."""
    if PROTOCOL.search(output):
        return True
    line = CONNECT_TIME.search(output)
    if not line:
        return True  # not told: assume it did
    return not (float(line.group(9)) == 0 and all(float(line.group(i)) == 0 for i in (1, 3, 5)))


@dataclass
class Log:
    """h2load's --log-file, over the answered requests (status not -1): {µs: requests}, and when the first was sent and
    the last answered (µs since the epoch). Counted, not listed: small however long the run."""

    counts: Counter[int]
    first_start_us: int
    last_end_us: int

    def silent_before_end(self, duration_s: float, distribution: Distribution | None) -> bool:
        """Whether no answer came in the run's last stretch (the run taken to end `duration_s` after its first
        request): the requests still in flight then were not just sent, the server had stopped answering."""
        p99_s = distribution.percentile_ms(99) / 1000 if distribution else 0.0
        silence_s = (self.first_start_us + duration_s * 1e6 - self.last_end_us) / 1e6
        return silence_s > max(STALL_P99S * p99_s, STALL_MIN_S)


def _read_log(path: Path) -> Log | None:
    """The log's answered requests; None without a log or an answered request."""
    if not path.exists():
        return None
    counts: Counter[int] = Counter()
    first, last = None, 0
    with path.open("rb") as f:
        for line in f:
            fields = line.split(b"\t")
            if len(fields) >= 3 and fields[1] != b"-1":
                start, us = int(fields[0]), int(fields[2])
                counts[us] += 1
                first = start if first is None else min(first, start)
                last = max(last, start + us)
    return Log(counts, first, last) if first is not None else None


TOOL = H2load()  # what the registry (tools/__init__.py) finds
