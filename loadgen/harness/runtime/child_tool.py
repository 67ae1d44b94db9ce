"""A load tool run as this process's child, reaped with wait4 so that its own CPU time is exact.

A sampler reads a process's CPU only while it runs, and the samplers run SCHED_IDLE (they never preempt the tool): a
tool that saturates its core may end before any reading of it. The kernel's account, handed over when the child is
reaped, has no such gap, and it includes the tool's own reaped children.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from pathlib import Path

POLL_S = 0.01


class ChildTool:
    """A tool's process (the `ToolProcess` protocol), its CPU seconds known once it has ended (`cpu_s`)."""

    def __init__(self, argv: list[str], output: Path) -> None:
        with output.open("wb") as out:
            self._popen = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        self.pid = self._popen.pid
        self.returncode: int | None = None
        self.cpu_s: float | None = None
        # the sampler's thread polls too (runner.ToolTree): one reaper at a time, or the other's wait4 finds no child
        self._reaping = threading.Lock()

    def _reap(self, flags: int) -> int | None:
        if not self._reaping.acquire(blocking=not flags & os.WNOHANG):
            return None  # another thread is reaping it right now: as if still running, as Popen.poll answers
        try:
            if self.returncode is None:
                pid, status, used = os.wait4(self.pid, flags)
                if pid == self.pid:
                    self.cpu_s = used.ru_utime + used.ru_stime
                    self.returncode = os.waitstatus_to_exitcode(status)
                    self._popen.returncode = self.returncode  # Popen's own finaliser must not wait for a reaped pid
        finally:
            self._reaping.release()
        return self.returncode

    def poll(self) -> int | None:
        return self._reap(os.WNOHANG)

    def wait(self, timeout: float | None = None) -> int:
        if timeout is None:
            code = self._reap(0)
            assert code is not None  # a blocking wait4 returns only once the child has ended
            return code
        deadline = time.monotonic() + timeout
        while (code := self.poll()) is None:
            if time.monotonic() >= deadline:
                raise subprocess.TimeoutExpired(self._popen.args, timeout)
            time.sleep(POLL_S)
        return code

    def send_signal(self, sig: int) -> None:
        if self.poll() is None:  # never a reaped pid: the kernel may have given it to another process
            os.kill(self.pid, sig)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)
