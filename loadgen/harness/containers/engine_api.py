"""A Docker engine's HTTP API reached through the Docker CLI (`docker --host X system dial-stdio`), so that every
endpoint the CLI reaches (ssh://, tcp:// with TLS, unix://, a context) works without a client library of our own;
and `EngineStatsSampler`, a container's CPU and memory from the engine's cgroup counters while a load runs.

Why the API and not `docker stats`: the CLI prints a percentage averaged over its own window, never the cumulative
CPU time, so an attempt's CPU seconds could not be taken from it. `GET /containers/<id>/stats?one-shot=true` returns
the cgroup's counters as they are at that moment (cpu_stats.cpu_usage.total_usage, nanoseconds), read by the engine
from the kernel: nothing runs inside the measured container."""

from __future__ import annotations

import json
import os
import select
import subprocess
import threading
import time
from typing import Any

from harness.basics.sampling import usage
from harness.containers.engine import piped
from harness.runtime.protocol import RuntimeFailure

API_VERSION = "v1.41"  # Docker 20.10 and later (one-shot stats)
TIMEOUT_S = 15


class EngineApi:
    """One keep-alive HTTP connection to an engine's API over `docker <address> system dial-stdio`. Every answer must
    come within `timeout_s` (default TIMEOUT_S): an engine that stalls costs the call (RuntimeFailure, the connection
    closed), never the run."""

    def __init__(self, docker_args: list[str], where: str, timeout_s: float | None = None):
        self.where, self.timeout_s = where, timeout_s or TIMEOUT_S
        self._proc = subprocess.Popen(
            ["docker", *docker_args, "system", "dial-stdio"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        self._stdin = piped(self._proc.stdin, "docker system dial-stdio")
        self._reader = DeadlineReader(piped(self._proc.stdout, "docker system dial-stdio").fileno())
        self._lock = threading.Lock()

    def get(self, path: str) -> dict[str, Any]:
        with self._lock:
            if self._proc.poll() is not None:
                raise RuntimeFailure(f"the connection to the Docker engine of {self.where} closed")
            try:
                self._stdin.write(f"GET /{API_VERSION}{path} HTTP/1.1\r\nHost: docker\r\n\r\n".encode())
                self._stdin.flush()
                status, body = _read_response(self._reader, time.monotonic() + self.timeout_s)
            except TimeoutError:
                self.close()  # half an answer may still come: the connection cannot be used again
                raise RuntimeFailure(
                    f"the Docker engine of {self.where} did not answer GET {path} within {self.timeout_s:g} s"
                ) from None
            except (BrokenPipeError, ValueError) as exc:
                self.close()
                raise RuntimeFailure(f"the connection to the Docker engine of {self.where} broke: {exc}") from None
        if status != 200:
            raise RuntimeFailure(
                f"the Docker engine of {self.where} answered {status} to GET {path}: "
                f"{body[:200].decode(errors='replace')}"
            )
        answer: dict[str, Any] = json.loads(body)
        return answer

    def close(self) -> None:
        if self._proc.poll() is None:
            try:
                self._stdin.close()
            except OSError:
                pass
            self._proc.terminate()
            try:
                self._proc.wait(5)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()


class DeadlineReader:
    """Lines and byte counts from a pipe, each read waiting at most until a deadline (TimeoutError after it)."""

    def __init__(self, fd: int):
        self.fd, self.buffer = fd, b""

    def _fill(self, deadline: float) -> None:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([self.fd], [], [], left)[0]:
            raise TimeoutError
        chunk = os.read(self.fd, 65536)
        if not chunk:
            raise RuntimeFailure("the Docker engine closed the connection")
        self.buffer += chunk

    def readline(self, deadline: float) -> bytes:
        while b"\n" not in self.buffer:
            self._fill(deadline)
        line, _, self.buffer = self.buffer.partition(b"\n")
        return line + b"\n"

    def read(self, size: int, deadline: float) -> bytes:
        while len(self.buffer) < size:
            self._fill(deadline)
        out, self.buffer = self.buffer[:size], self.buffer[size:]
        return out


def _read_response(reader: DeadlineReader, deadline: float) -> tuple[int, bytes]:
    """One HTTP/1.1 response: Content-Length or chunked (the engine sends JSON either way)."""
    status = int(reader.readline(deadline).split()[1])
    headers: dict[str, str] = {}
    while (line := reader.readline(deadline)) not in (b"\r\n", b"\n"):
        key, _, value = line.decode(errors="replace").partition(":")
        headers[key.strip().lower()] = value.strip()
    if headers.get("transfer-encoding", "").lower() == "chunked":
        body = b""
        while (size := int(reader.readline(deadline).split(b";")[0].strip() or b"0", 16)) > 0:
            body += reader.read(size, deadline)
            reader.readline(deadline)
        reader.readline(deadline)  # the empty line after the last chunk
        return status, body
    return status, reader.read(int(headers.get("content-length", "0")), deadline)


def container_counters(api: EngineApi, container: str) -> tuple[float, int]:
    """(CPU seconds the container's cgroup has used, its memory as `docker stats` counts it: usage less the page
    cache it could drop) at this moment."""
    stats = api.get(f"/containers/{container}/stats?stream=false&one-shot=true")
    cpu = stats.get("cpu_stats", {}).get("cpu_usage", {}).get("total_usage")
    if cpu is None:
        raise RuntimeFailure(f"the Docker engine of {api.where} gives no CPU counter for {container} (is it running?)")
    memory = stats.get("memory_stats", {})
    extra = memory.get("stats", {})
    cache = extra.get("inactive_file", extra.get("total_inactive_file", 0))
    return cpu / 1e9, max(memory.get("usage", 0) - cache, 0)


class EngineStatsSampler:
    """A container's CPU seconds between start() and stop() (the cgroup's counter read at both ends) and its peak
    memory, polled every INTERVAL_S; the same result as ProcessSampler's."""

    INTERVAL_S = 1.0

    def __init__(self, docker_args: list[str], where: str, container: str, cores: int):
        self.docker_args, self.where, self.container, self.cores = docker_args, where, container, cores
        self._api: EngineApi | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._cpu0 = self._cpu1 = 0.0
        self.peak = 0
        self.timeline: list[tuple[float, int]] = []
        self._t0 = 0.0
        self.wall_s = 0.0
        self.error: str | None = None

    def _started(self) -> EngineApi:
        """The connection start() opened: RuntimeFailure before it."""
        if self._api is None:
            raise RuntimeFailure(f"the CPU sampler of {self.container} was read before it started")
        return self._api

    def _read(self) -> float:
        cpu, memory = container_counters(self._started(), self.container)
        self.peak = max(self.peak, memory)
        self.timeline.append((time.monotonic() - self._t0, memory))
        return cpu

    def _loop(self) -> None:
        while not self._stop.wait(self.INTERVAL_S):
            try:
                self._cpu1 = self._read()
            except (RuntimeFailure, OSError, ValueError) as exc:
                self.error = str(exc)
                return

    def start(self) -> EngineStatsSampler:
        self._api = EngineApi(self.docker_args, self.where)
        self._t0 = time.monotonic()
        self._cpu0 = self._cpu1 = self._read()
        self._thread.start()
        return self

    def stop(self) -> dict[str, Any]:
        api = self._started()
        self._stop.set()
        self._thread.join(api.timeout_s + self.INTERVAL_S + 1)  # a read in progress ends by its deadline
        self.wall_s = time.monotonic() - self._t0
        try:
            self._cpu1 = self._read()
        except (RuntimeFailure, OSError, ValueError) as exc:  # a stalled engine, a container that died
            self.error = str(exc)
            raise RuntimeFailure(
                f"the CPU counter of {self.container} could not be read at the load's end: {exc}"
            ) from None
        finally:
            api.close()
        return self.result()

    def cancel(self) -> None:
        self._stop.set()
        if self._api:
            self._api.close()

    def result(self, cpu_s: float | None = None) -> dict[str, Any]:
        cpu = self._cpu1 - self._cpu0 if cpu_s is None else cpu_s
        return {
            **usage(self.cores, cpu, self.wall_s, self.peak, self.timeline),
            "source": f"engine cgroup counters ({self.where})",
        }
