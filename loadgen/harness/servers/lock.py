"""One harness command at a time in a checkout. The commands that start servers or measure (up, ping, run, bench,
overhead, down) hold an advisory lock on .run/harness.lock while they run, so that a second one stops, naming the
first, before it starts anything: two at once would put servers on the same ports and the same CPUs.

flock rather than a pid file: the kernel releases the lock when its holder exits, however it exits (SIGKILL
included), so a killed command never leaves a stale lock behind. The file holds the holder's pid and command line for
the second command's message; the holder empties it before it lets go. The descriptor is not inherited (Python's
default), so a server left running by `make up` does not keep the lock."""

from __future__ import annotations

import fcntl
import json
import os
import shlex
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from harness.basics.paths import STATE_DIR

LOCK_FILE = STATE_DIR / "harness.lock"
HOLDER_WRITE_S = 1.0  # how long a holder may take between taking the lock and writing its name into the file


class HarnessBusy(Exception):
    """Another harness command holds the lock; the message names it and says what to do."""


@contextmanager
def one_command_at_a_time(path: Path = LOCK_FILE) -> Iterator[None]:
    """Held for the body; HarnessBusy at once when another process holds it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise HarnessBusy(_busy_message(fd, path)) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps({"pid": os.getpid(), "command": shlex.join(sys.orig_argv)}).encode(), 0)
        try:
            yield
        finally:
            os.ftruncate(fd, 0)  # while still held: the next holder's waiters never read this one's name
    finally:
        os.close(fd)  # releases the lock


def _busy_message(fd: int, path: Path) -> str:
    holder = _read_holder(fd)
    who = f"pid {holder['pid']} ({holder['command']})" if holder else f"a process that holds {path}"
    stop = f"kill {holder['pid']}" if holder else f"fuser {path}"
    return (
        f"another harness command is running in this checkout: {who}. Wait for it to end, or stop it (Ctrl-C "
        f"where it runs, or {stop}); two at once would start servers on the same ports and CPUs"
    )


def _read_holder(fd: int) -> dict[str, Any] | None:
    """The holder's pid and command; None if it wrote nothing readable in time (it has just taken the lock)."""
    deadline = time.monotonic() + HOLDER_WRITE_S
    while True:
        try:
            holder: dict[str, Any] = json.loads(os.pread(fd, 65536, 0))
            return holder
        except ValueError:
            if time.monotonic() > deadline:
                return None
            time.sleep(0.05)
