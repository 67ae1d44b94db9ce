"""Messages of the harness (rich renders them; plain text in CI logs). The final table is report/terminal.py."""

from __future__ import annotations

import os
import sys
from typing import TextIO

from rich.console import Console
from rich.markup import escape


class Terminal:
    """sys.stdout as the console writes to it, until a write fails: the terminal went away (SIGHUP from a closed ssh
    session or `tmux kill-session` leaves it failing with EIO; a closed pipe, EPIPE). From then on every message is
    dropped: the clean-up after a signal prints as it stops servers, and a failed print must not end it half way.
    The standard streams' descriptors then point at /dev/null, so nothing else fails writing there either."""

    lost = False

    @property
    def stdout(self) -> TextIO:
        """sys.stdout, or the stream under rich's proxy of it (a live progress display redirects sys.stdout to the
        console, which must not write to itself)."""
        return getattr(sys.stdout, "rich_proxied_file", sys.stdout)

    def write(self, text: str) -> int:
        if not self.lost:
            try:
                return self.stdout.write(text)
            except (OSError, ValueError):  # ValueError: the stream was closed
                self._gone()
        return len(text)

    def flush(self) -> None:
        if not self.lost:
            try:
                self.stdout.flush()
            except (OSError, ValueError):
                self._gone()

    def isatty(self) -> bool:
        return not self.lost and self.stdout.isatty()

    def fileno(self) -> int:
        return self.stdout.fileno()

    @property
    def encoding(self) -> str:
        return getattr(self.stdout, "encoding", None) or "utf-8"

    def _gone(self) -> None:
        self.lost = True
        try:
            null = os.open(os.devnull, os.O_WRONLY)
            for stream in (self.stdout, sys.stderr):
                os.dup2(null, stream.fileno())
        except (OSError, ValueError, AttributeError):  # a stream without a descriptor (a test's): nothing to point
            pass


terminal = Terminal()
# Wide enough for the results table when the output is a log file rather than a terminal
console = Console(file=terminal, highlight=False, width=None if sys.stdout.isatty() else 200)  # type: ignore[arg-type]


def say(message: str) -> None:
    console.print(message, markup=False)


def warn(message: str) -> None:
    console.print(f"[yellow]warning:[/yellow] {escape(message)}")


def fail(message: str) -> None:
    # a message's [[server]] is text; never wrapped: an error is one line in a log, however long its paths
    console.print(f"[red]error:[/red] {escape(message)}", soft_wrap=True)
