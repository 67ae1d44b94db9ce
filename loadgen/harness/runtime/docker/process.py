"""A load tool run with `docker exec` in the loadgen container, seen by the runner as the subprocess.Popen it expects."""
from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

import psutil

from harness.host import wait_until
from harness.runtime.docker.compose import container_name
from harness.runtime.docker.engine import run_cli
from harness.runtime.docker.images import LOADGEN


class RelayedTool:
    """A load tool whose output a local `docker exec` client relays, seen by the runner as the subprocess.Popen it
    expects; subclasses say how a signal reaches the tool itself (a killed client would leave it running)."""

    def __init__(self, client: subprocess.Popen):
        self.client = client
        self.args = client.args

    @property
    def returncode(self):
        return self.client.returncode

    def poll(self):
        return self.client.poll()

    def wait(self, timeout: float | None = None):
        return self.client.wait(timeout)

    def send_signal(self, sig: int) -> None:
        raise NotImplementedError

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)
        try:
            self.client.wait(5)
        except subprocess.TimeoutExpired:
            self.client.kill()


class ContainerProcess(RelayedTool):
    """A load tool running in the loadgen container, behaving like the subprocess.Popen the runner expects.

    `pid` is the tool's process as the host sees it (so the runner samples the tool, not the docker client);
    terminate/kill signal that process, not just the client (a killed `docker exec` leaves its process running)."""

    def __init__(self, client: subprocess.Popen, token: str, loadgen_pid: int):
        super().__init__(client)
        self.token, self.loadgen_pid = token, loadgen_pid
        self._tool_pid: int | None = None

    def _find(self) -> int | None:
        if self._tool_pid is None:
            try:  # exec'd processes are children of the container's shim, like its init
                for child in psutil.Process(self.loadgen_pid).parent().children():
                    try:
                        if child.environ().get("BENCH_TOOL") == self.token:
                            self._tool_pid = child.pid
                            break
                    except psutil.Error:
                        continue
            except psutil.Error:
                pass
        return self._tool_pid

    @property
    def pid(self) -> int:
        return self._find() or self.client.pid

    def send_signal(self, sig: int) -> None:
        if self.client.poll() is not None:
            return
        # the process may be a few milliseconds from existing when this comes right after the start
        wait_until(lambda: self._find() is not None or self.client.poll() is not None, 2)
        pid = self._find()
        if pid:
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
            except PermissionError:
                run_cli(["docker", "exec", "-u", "0", container_name(LOADGEN), "kill", f"-{int(sig)}",
                         str(self._container_pid(pid))], timeout=30, check=False)
        else:
            self.client.send_signal(sig)

    @staticmethod
    def _container_pid(pid: int) -> int:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("NSpid:"):
                return int(line.split()[-1])
        return pid
