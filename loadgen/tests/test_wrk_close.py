"""wrk as a connection-per-request tool (`make twin CLOSE_TOOL=wrk`): with `connection_close` it sends `Connection:
close`, the server answers and closes, and wrk opens the next connection, so every request it counts had a connection
of its own. Checked on a real wrk against a loopback server that counts what it was sent."""

from __future__ import annotations

import asyncio
import subprocess
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from harness.tools.adapter import LoadSpec
from harness.tools.wrk import Wrk

pytestmark = pytest.mark.integration  # real servers, load tools or the harness's command line on loopback

BODY = b"Hello, World!"


@dataclass
class Counts:
    connections: int = 0
    requests: int = 0
    asked_to_close: int = 0


@pytest.fixture
def counting_server() -> Iterator[tuple[int, Counts]]:
    """A loopback HTTP/1.1 server answering every request and closing where asked to (saying so, RFC 9112 §9.6),
    counting its connections, its requests and those that carried `Connection: close`."""
    counts, loop, ready = Counts(), asyncio.new_event_loop(), threading.Event()
    servers: list[asyncio.Server] = []

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        counts.connections += 1
        try:
            while head := await reader.readuntil(b"\r\n\r\n"):
                counts.requests += 1
                close = b"connection: close" in head.lower()
                counts.asked_to_close += close
                closing = b"Connection: close\r\n" if close else b""
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 13\r\n" + closing + b"\r\n" + BODY)
                await writer.drain()
                if close:
                    break
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    async def start() -> None:
        servers.append(await asyncio.start_server(serve, "127.0.0.1", 0))
        ready.set()
        await servers[0].wait_closed()

    thread = threading.Thread(target=lambda: loop.run_until_complete(start()), daemon=True)
    thread.start()
    assert ready.wait(10)
    yield servers[0].sockets[0].getsockname()[1], counts
    loop.call_soon_threadsafe(servers[0].close)
    thread.join(10)


def run_wrk(port: int, tmp_path: Path, close: bool) -> tuple[int, int]:
    """One second of wrk, 4 connections: the requests it counted and its errors."""
    spec = LoadSpec(url=f"http://127.0.0.1:{port}/", concurrency=4, duration_s=1, threads=1, connection_close=close)
    wrk = Wrk()
    argv = wrk.command(spec, tmp_path)
    assert ("Connection: close" in argv) == close
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=30)
    m = wrk.parse(proc.stdout + proc.stderr, tmp_path)
    return m.requests, m.errors.total


def test_wrk_closing_makes_a_connection_a_request_and_counts_only_answered_ones(counting_server, tmp_path):
    port, counts = counting_server
    requests, errors = run_wrk(port, tmp_path, close=True)
    assert errors == 0 and requests > 100
    assert counts.asked_to_close == counts.requests  # every request asked to close its connection ...
    # ... and had one of its own: beyond them, wrk's check of the address before its run, and the connections it had
    # opened but not yet sent on when it stopped
    assert counts.requests <= counts.connections <= counts.requests + 1 + 4
    # wrk counts the answers it read within its second; those in flight when it stopped were answered, not counted
    assert counts.requests - 4 <= requests <= counts.requests


def test_without_it_wrk_keeps_its_connections(counting_server, tmp_path):
    port, counts = counting_server
    requests, errors = run_wrk(port, tmp_path, close=False)
    assert errors == 0 and requests > 100
    assert counts.connections == 1 + 4 and counts.asked_to_close == 0  # its check of the address, then its four
