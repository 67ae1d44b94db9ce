"""ApacheBench (ab): HTTP/1.0, one request per connection unless -k; prints a text summary.

Its distribution: ab has two per-run outputs, and the harness reads both. -e writes the time under which 1 … 100 % of
the requests were served at 1 µs (its sorted per-request times read at 100 ranks); -g writes every request, its times
rounded to whole ms (ap_round_ms). The attempt's histogram is -e's 99 lower slices, each slice's requests at its upper
latency, so p50, p90 and p99 are ab's own to the µs; and the top slice request by request from -g, each held within
what -e says of that slice (p99 at least, the max at most) and the slowest at -e's max: so p99.9 is ab's to the
nearest ms (±0.5 ms), where -e alone knows only that it lies between p99 and the max. -g's file is cut to that top
slice once read (`slowest.tsv`): the whole of it, a line per request, would be most of a run's disk (a run too small
to have a top slice, high-compute's few dozen requests, keeps it whole)."""

from __future__ import annotations

import csv
import heapq
import math
import re
from dataclasses import replace
from pathlib import Path

from harness.basics.distribution import Distribution
from harness.tools.adapter import LoadSpec, ToolFailed, search
from harness.tools.output import Errors, Measurement

FD_MARGIN = 64  # descriptors ab needs besides its sockets (stdio, CSV file, epoll)
# With -t, ab still sizes its per-request statistics array by -n (40 bytes a request): this caps a timed run.
TIMED_MAX_REQUESTS = 2_000_000
PROGRESS = re.compile(rb"Completed (\d+) requests")
FINISHED = re.compile(rb"^Finished \d+ requests", re.MULTILINE)  # its count answered; the summary comes next
PERCENTILES = "percentiles.csv"  # -e: the time under which 0 … 100 % of requests were served
PER_REQUEST = "requests.tsv"  # -g: a line per request, ttime (whole ms) in its fifth column
SLOWEST = "slowest.tsv"  # what the harness keeps of it: the slowest 1 % (the top slice of -e)


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

    def has_finished(self, output_tail: bytes) -> bool:
        """Whether ab has had its whole count answered ("Finished N requests"): it then writes its -g file and its
        summary, which a SIGINT would cut short (deadlines.py's planned stop)."""
        return FINISHED.search(output_tail) is not None

    def max_connections_per_process(self, nofile_limit: int) -> int:
        return nofile_limit - FD_MARGIN

    def sized(self, spec: LoadSpec, seconds: float, rate: float | None) -> LoadSpec:
        """A request count from the rate, in whole rounds of `concurrency` (a CPU-bound load such as ten fibonacci
        requests at a time must not end on a partial round); without a rate, ab's own time limit (-t). The round count
        is the nearest to `seconds`, not the next above: rounding up made high-compute's attempts last 2.1 s for the
        1.5 s asked (node's round of ten fib(35) takes 1.1 s: two rounds, 2.2 s), 24 s of one `make bench`."""
        if not rate:
            return replace(spec, requests=None, duration_s=seconds)
        connections = spec.connections(self.name)
        rounds = max(1, math.floor(rate * seconds / connections + 0.5))
        return replace(spec, requests=rounds * connections, duration_s=None, sized_from_rps=round(rate, 1))

    def command(self, spec: LoadSpec, scratch: Path) -> list[str]:
        connections = spec.connections(self.name)
        if spec.requests:  # ab refuses a concurrency above its request count
            length = ["-n", str(spec.requests), "-c", str(min(connections, spec.requests))]
        elif spec.duration_s:  # -t must come before -n: -t alone caps the run at 50,000 requests
            length = ["-t", f"{math.ceil(spec.duration_s)}", "-n", str(TIMED_MAX_REQUESTS), "-c", str(connections)]
        else:
            raise ValueError("ab needs a request count or a duration")
        argv = [self.binary]
        if spec.keepalive:
            argv.append("-k")
        if spec.continue_on_error:
            argv.append("-r")
        if spec.timeout_s:
            argv += ["-s", str(int(spec.timeout_s))]
        argv += [*length, "-e", str(scratch / PERCENTILES), "-g", str(scratch / PER_REQUEST), spec.url]
        return argv

    def parse(self, output: str, scratch: Path) -> Measurement:
        if "Complete requests:" not in output:
            last = [line for line in output.strip().splitlines() if line.strip()][-1:] or ["no output"]
            raise ToolFailed(f"ab printed no summary: {last[0].strip()}")
        failed = re.search(r"\(Connect: (\d+), Receive: (\d+), Length: (\d+), Exceptions: (\d+)\)", output)
        connect, receive, length, exceptions = (int(g) for g in failed.groups()) if failed else (0, 0, 0, 0)
        errors = Errors(
            connect=connect,
            read=receive,
            write=_int(r"^Write errors:\s+(\d+)", output),
            non_2xx=_int(r"^Non-2xx responses:\s+(\d+)", output),
            length=length,
            other=exceptions,
        )
        duration = float(search(r"^Time taken for tests:\s+([\d.]+)", output, self.name).group(1))
        rps_line = re.search(r"^Requests per second:\s+([\d.]+)", output, re.MULTILINE)
        rps = float(rps_line.group(1)) if rps_line else 0.0  # not printed when no request completed (interrupted)
        table = {int(p): float(ms) for p, ms in re.findall(r"^\s+(\d+)%\s+(\d+)", output, re.MULTILINE)}
        latency = {"p50": table.get(50), "p90": table.get(90), "p99": table.get(99), "max": table.get(100)}
        done = _int(r"^Complete requests:\s+(\d+)", output)
        quantiles = _read_percentiles(scratch / PERCENTILES, done)
        by_pct = dict(quantiles)
        if all(p in by_pct for p in (50.0, 90.0, 99.0, 100.0)):  # -e's microseconds, not the table's whole ms
            latency = {"p50": by_pct[50.0], "p90": by_pct[90.0], "p99": by_pct[99.0], "max": by_pct[100.0]}
        levels = [(p, round(ms * 1000)) for p, ms in quantiles]
        slowest = _top_slice(scratch, done, levels)
        distribution = Distribution.from_levels(levels, done, slowest or ())
        if distribution:  # read off it, as after a merge of processes (the same above 32 ms, where it keeps 4 digits)
            sliced = distribution.latency_ms()
            # without -g's requests p99.9 is somewhere in the top slice: not known
            known = ("p50", "p90", "p99", "max") + (("p99.9",) if slowest is not None else ())
            latency.update({k: sliced[k] for k in known})
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
    return [
        (p, slowest if 0 < p < 100 and done and int(0.5 + done * p / 100) >= done and slowest is not None else ms)
        for p, ms in rows
    ]


def _top_slice(scratch: Path, done: int, levels: list[tuple[float, int]]) -> list[int] | None:
    """The latencies (µs) of ab's top 1 % of requests (the ranks Distribution.from_levels puts above row 99), slowest
    last, from -g's whole ms: each held within -e's row 99 and 100 (the max), and the first and the slowest at those
    rows' µs (ab reads row 99 at its sorted times' index `done - top`: the slice's first). [] where the slice is empty
    (a small run: -e's rows say it all); None where it is not known request by request (no -g file, or one with
    fewer requests)."""
    by_pct = dict(levels)
    if not done or 99.0 not in by_pct or 100.0 not in by_pct:
        return None
    top = done - int(done * 99 / 100 + 0.5)  # as ab and Distribution.from_levels count the ranks
    if top == 0:
        return []
    times_ms = _slowest_ms(scratch, top)
    if len(times_ms) < top:
        return None
    low, high = by_pct[99.0], by_pct[100.0]
    held = [min(max(round(ms * 1000), low), high) for ms in times_ms]
    held[0], held[-1] = low, high
    return held


def _slowest_ms(scratch: Path, top: int) -> list[float]:
    """The `top` slowest requests' ttime (ms, rising) from -g's file, which is then cut to them (`SLOWEST`)."""
    whole, kept = scratch / PER_REQUEST, scratch / SLOWEST
    source = whole if whole.exists() else kept
    if not source.exists():
        return []
    lines = source.read_bytes().splitlines()
    header = lines[0] if lines and lines[0].startswith(b"starttime") else b""
    timed = []
    for line in lines[1:] if header else lines:
        fields = line.split(b"\t")
        if len(fields) >= 6 and fields[4].strip().isdigit():
            timed.append((int(fields[4]), line))
    slowest = sorted(heapq.nlargest(top, timed, key=lambda t: t[0]), key=lambda t: t[0])
    if source is whole:
        kept.write_bytes(b"".join(line + b"\n" for line in [header, *(row for _, row in slowest)] if line))
        whole.unlink()
    return [float(ms) for ms, _ in slowest]


TOOL = ApacheBench()  # what the registry (tools/__init__.py) finds
