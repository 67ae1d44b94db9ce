"""The contract responder of the tests (responders/contract_server.py) started on a loopback port of a test's own,
as the harness sees a server it started itself, and always stopped."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from harness.basics.machine import port_owner, wait_until
from harness.runtime import RunningServer

CONTRACT_RESPONDER = Path(__file__).parent / "responders" / "contract_server.py"


@contextmanager
def running_responder(port: int, name: str = "probe") -> Iterator[RunningServer]:
    """The responder serving as `name` on 127.0.0.1:port, pinned nowhere (cpus=[0] is what the sampler reads)."""
    assert port_owner("127.0.0.1", port) is None, f"port {port} is taken"
    proc = subprocess.Popen([sys.executable, str(CONTRACT_RESPONDER), str(port), name])
    try:
        assert wait_until(lambda: port_owner("127.0.0.1", port) is not None, 10)
        yield RunningServer(
            name=name,
            host="127.0.0.1",
            port=port,
            cpus=[0],
            pid=proc.pid,
            log="",
            started_at=0,
            startup_s=0,
            runtime="local",
        )
    finally:
        proc.terminate()
        proc.wait(5)
