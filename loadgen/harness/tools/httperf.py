"""httperf: opens connections at a fixed rate, each sending a number of calls (keep-alive, not pipelined)."""

from __future__ import annotations

import math
import re
from dataclasses import replace
from pathlib import Path
from typing import TypedDict
from urllib.parse import urlsplit

from harness.tools.adapter import LoadSpec, ToolFailed, needed, search
from harness.tools.output import Errors, Measurement

# httperf waits on its sockets with select(), which cannot watch descriptors above FD_SETSIZE (1024).
SELECT_LIMIT = 1024
FD_MARGIN = 24
FIRST_CALLS = 100  # calls per connection before any rate is known (a short first warm-up run)


def _ints(pattern: str, text: str) -> tuple[int, ...]:
    found = re.search(pattern, text)
    if not found:
        raise ToolFailed(f"httperf output lacks {pattern!r}")
    return tuple(int(float(g)) for g in found.groups())


class Httperf:
    name = "httperf"
    binary = "httperf"
    install_hint = "apt-get install httperf (or: make setup)"
    version_args = ("-V",)
    threading = "one"  # a single thread: one process per load-generator core (tools/load_plan.py)

    def completed(self, output_tail: bytes) -> int | None:
        return None  # silent until it ends

    def max_connections_per_process(self, nofile_limit: int) -> int:
        return min(nofile_limit, SELECT_LIMIT) - FD_MARGIN

    def sized(self, spec: LoadSpec, seconds: float, rate: float | None) -> LoadSpec:
        """httperf has no time limit: calls per connection from the rate (every connection opens at once at the
        scenario's connection rate and makes its calls one after the other); where each connection makes one call,
        as many connections as its connection rate opens in `seconds`."""
        if spec.calls_per_connection == 1 and spec.rate:  # a connection per request: their count sets the length
            return replace(spec, concurrency=max(1, math.ceil(spec.rate * seconds)), duration_s=None)
        if not rate:
            return replace(spec, calls_per_connection=FIRST_CALLS, duration_s=None)
        calls = max(1, math.ceil(rate * seconds / spec.connections(self.name)))
        return replace(spec, calls_per_connection=calls, duration_s=None, sized_from_rps=round(rate, 1))

    def command(self, spec: LoadSpec, scratch: Path) -> list[str]:
        if not (spec.rate and spec.calls_per_connection):
            raise ValueError("httperf needs a rate and calls per connection")
        url = urlsplit(spec.url)
        path = url.path + (f"?{url.query}" if url.query else "")
        host = needed(url.hostname, f"httperf needs a URL with a host, not {spec.url!r}")
        argv = [self.binary, "--hog", "--server", host, "--port", str(url.port), "--uri", path]
        argv += ["--num-conns", str(spec.connections(self.name)), "--num-calls", str(spec.calls_per_connection)]
        argv += ["--rate", f"{spec.rate:g}"]
        if spec.timeout_s:
            argv += ["--timeout", f"{spec.timeout_s:g}"]
        return argv

    def parse(self, output: str, scratch: Path) -> Measurement:
        if "Total: connections" not in output:
            raise ToolFailed("httperf printed no summary: " + (output.strip().splitlines() or ["no output"])[-1])
        found = search(
            r"Total: connections (\d+) requests (\d+) replies (\d+) test-duration ([\d.]+) s", output, self.name
        )
        replies, duration = int(found.group(3)), float(found.group(4))
        s1xx, s2xx, s3xx, s4xx, s5xx = _ints(r"Reply status: 1xx=(\d+) 2xx=(\d+) 3xx=(\d+) 4xx=(\d+) 5xx=(\d+)", output)
        _, client_timo, socket_timo, refused, reset = _ints(
            r"Errors: total (\d+) client-timo (\d+) socket-timo (\d+) connrefused (\d+) connreset (\d+)", output
        )
        fd_unavail, addr_unavail, ftab_full, other = _ints(
            r"Errors: fd-unavail (\d+) addrunavail (\d+) ftab-full (\d+) other (\d+)", output
        )
        response_ms = re.search(r"Reply time \[ms\]: response ([\d.]+) transfer ([\d.]+)", output)
        latency: dict[str, float | None] = {"p50": None, "p90": None, "p99": None, "max": None}
        if response_ms and replies:
            latency["mean"] = float(response_ms.group(1)) + float(response_ms.group(2))
        details = _pace(output, latency.get("mean"), fd_unavail + addr_unavail + ftab_full)
        return Measurement(
            requests=replies,
            errors=Errors(
                connect=refused,
                read=reset,
                timeout=client_timo + socket_timo,
                non_2xx=s1xx + s3xx + s4xx + s5xx,
                other=fd_unavail + addr_unavail + ftab_full + other,
            ),
            duration_s=duration,
            rps=replies / duration if duration else 0.0,
            latency_ms=latency,
            details=details,
        )


class Pace(TypedDict):
    """httperf's own pace (a Measurement's details["httperf"]), None where its summary does not say."""

    connect_burst: int | None
    connection_rate: float | None
    replies_per_connection: float | None
    reply_ms: float | None
    client_errors: int


def _pace(output: str, reply_ms: float | None, client_errors: int) -> dict[str, Pace]:
    """What httperf shows of its own pace, from which its saturation is judged (harness/judging/flags.py: its CPU
    share cannot tell, it polls at 100 % whatever its rate): its longest burst of connections opened at once (more
    than 1: it fell behind its --rate), the connection rate it achieved, the replies per connection, its mean reply
    time, and the connections it could not make for want of descriptors, ports or table entries."""
    burst = re.search(r"Maximum connect burst length: (\d+)", output)
    rate = re.search(r"Connection rate: ([\d.]+) conn/s", output)
    length = re.search(r"Connection length \[replies/conn\]: ([\d.]+)", output)
    return {
        "httperf": {
            "connect_burst": int(burst.group(1)) if burst else None,
            "connection_rate": float(rate.group(1)) if rate else None,
            "replies_per_connection": float(length.group(1)) if length else None,
            "reply_ms": reply_ms,
            "client_errors": client_errors,
        }
    }


TOOL = Httperf()  # what the registry (tools/__init__.py) finds
