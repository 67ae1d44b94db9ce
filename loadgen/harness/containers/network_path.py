"""The network between the load generator's host and the server's, as HOSTS runs them: round-trip time and path MTU,
measured from the load generator's host for the run's record (several_hosts.py's conditions)."""

from __future__ import annotations

import re
from typing import Any

from harness.containers.engine_runtime import EngineRuntime
from harness.containers.images import LOADGEN, runtime_image
from harness.containers.service import privilege_options


def measure_path(runtime: EngineRuntime) -> dict[str, Any]:
    """Round-trip time (10 pings) and path MTU (the largest don't-fragment ping that passes, from the MTU the
    kernel reports back) from the load generator's host to the server's address."""
    place, target = runtime.place("loadgen"), runtime.address("server")
    # ping: root with NET_RAW alone (raw ICMP sockets), nothing else of the engine's default capabilities
    base = [
        "run",
        "--rm",
        "--network",
        "host",
        *privilege_options(),
        "--user",
        "0",
        "--cap-add",
        "NET_RAW",
        runtime_image(LOADGEN),
    ]
    proc = runtime.docker(place, *base, "ping", "-n", "-q", "-c", "10", "-i", "0.2", target, check=False, timeout=60)
    text = proc.stdout.decode(errors="replace")
    found = re.search(r"= ([\d.]+)/([\d.]+)/([\d.]+)/([\d.]+) ms", text)
    path: dict[str, Any] = {"from": place.address, "to": target}
    if not found:
        path["rtt_error"] = (text + proc.stderr.decode(errors="replace")).strip()[-300:] or "no answer"
    else:
        path.update(rtt_min_ms=float(found[1]), rtt_avg_ms=float(found[2]), rtt_max_ms=float(found[3]))
    mtu = 9000
    for _ in range(4):
        proc = runtime.docker(
            place,
            *base,
            "ping",
            "-n",
            "-c",
            "1",
            "-W",
            "2",
            "-M",
            "do",
            "-s",
            str(mtu - 28),
            target,
            check=False,
            timeout=30,
        )
        said = (proc.stdout + proc.stderr).decode(errors="replace")
        if proc.returncode == 0:
            path["mtu"] = mtu
            break
        smaller = re.search(r"mtu\s*=\s*(\d+)", said)
        if not smaller or int(smaller[1]) >= mtu:
            path["mtu_error"] = said.strip()[-300:]
            break
        mtu = int(smaller[1])
    return path
