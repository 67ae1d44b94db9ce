"""Ctrl-C, SIGTERM and SIGHUP, as an exception and as a flag.

The handler raises KeyboardInterrupt, which unwinds whatever the main thread is blocked in at once, and also sets a
flag. The flag is for the cases where the exception is lost: raised inside code that swallows it (Python prints
"Exception ignored in ..." for an exception in a finaliser, an at-fork or a weakref callback, and goes on). Every
loop that measures or waits calls `check()`, which raises again while the flag is set, so a signal at any instant
stops the run within one turn of such a loop. Clean-up code (stopping servers and tools) never calls `check()`: it
runs to its end after an interrupt, and so only the first signal raises: a second Ctrl-C (or the SIGTERM of an
impatient supervisor) while servers are being stopped would end that clean-up half way and leave them running.
"""

from __future__ import annotations

import signal
import time
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

_received: str | None = None  # the signal's name, once one came
_deferring = 0  # inside deferred(): a signal sets the flag only, and the block's end raises
# SIGHUP: the terminal or the ssh session it ran in went away; the command stops as on Ctrl-C
SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def _handler(signum: int, frame: FrameType | None) -> None:
    global _received
    if _received:  # already stopping: let the clean-up finish
        return
    _received = signal.Signals(signum).name
    if not _deferring:
        raise KeyboardInterrupt(_received)


def install() -> None:
    """SIGINT, SIGTERM and SIGHUP all interrupt (also where SIGINT came in ignored: a shell without job control starts
    background commands that way, and Python then installs no handler of its own)."""
    for signum in SIGNALS:
        signal.signal(signum, _handler)


def received() -> str | None:
    return _received


def check() -> None:
    """Raise KeyboardInterrupt when a signal came, whether or not its own exception got through."""
    if _received:
        raise KeyboardInterrupt(_received)


@contextmanager
def deferred() -> Iterator[None]:
    """A block a signal cannot cut in two: it raises at the block's end instead. For starting a child and taking
    hold of it: a KeyboardInterrupt inside subprocess.Popen, after the fork, loses the child (no Popen object comes
    back to stop it), and one between the Popen and the statement that records it does the same."""
    global _deferring
    _deferring += 1
    try:
        yield
    finally:
        _deferring -= 1
    check()


def sleep(seconds: float) -> None:
    """time.sleep in steps of at most 0.1 s, checking the flag between them."""
    deadline = time.monotonic() + seconds
    while (left := deadline - time.monotonic()) > 0:
        check()
        time.sleep(min(left, 0.1))
    check()


def reset() -> None:
    """For the tests: forget a signal received earlier in this process."""
    global _received
    _received = None
