"""Messages of the harness (rich renders them; plain text in CI logs). The final table is report/terminal.py."""
from __future__ import annotations

import sys

from rich.console import Console
from rich.markup import escape

# Wide enough for the results table when the output is a log file rather than a terminal
console = Console(highlight=False, width=None if sys.stdout.isatty() else 200)


def say(message: str) -> None:
    console.print(message, markup=False)


def warn(message: str) -> None:
    console.print(f"[yellow]warning:[/yellow] {escape(message)}")


def fail(message: str) -> None:
    # a message's [[server]] is text; never wrapped: an error is one line in a log, however long its paths
    console.print(f"[red]error:[/red] {escape(message)}", soft_wrap=True)
